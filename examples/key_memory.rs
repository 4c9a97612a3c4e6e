//! How many bytes a key costs in a `KeyedLimiter`, measured: fills the table with distinct
//! ESI-shaped keys (application, character) and divides the table's bytes by the keys.
//!
//! Run with `cargo run --release --example key_memory`.

use std::mem::size_of;

use trickle_core::state::FloatingState;
use trickle_core::KeyedLimiter;

type Key = (u32, u64);

fn main() {
    let limit = "150/15m".parse().expect("a valid limit");
    println!(
        "one slot: key {} B + floating state {} B + control byte = {} B",
        size_of::<Key>(),
        size_of::<FloatingState>(),
        KeyedLimiter::<Key>::SLOT_BYTES
    );
    println!("keys,table_bytes,bytes_per_key");
    for keys in [10_000u64, 100_000, 1_000_000] {
        let mut limiter: KeyedLimiter<Key> = KeyedLimiter::new(limit);
        for character in 0..keys {
            limiter.hit((7, character), 0, 2);
        }
        let bytes = limiter.table_bytes();
        println!("{keys},{bytes},{:.1}", bytes as f64 / limiter.len() as f64);
    }
}
