//! The fuzz target's invariants (`fuzz/harness.rs`) on a fixed-seed stream of pseudo-random
//! inputs, so that every `cargo test` keeps them without a nightly toolchain; `make fuzz`
//! runs the same checks under libFuzzer for as long as asked.
// The harness decodes with `arbitrary`, a native-only dev-dependency.
#![cfg(not(target_arch = "wasm32"))]

#[path = "../fuzz/harness.rs"]
mod harness;

use harness::Tally;

/// Inputs per run: a few seconds in a debug build.
const INPUTS: u64 = 10_000;

/// SplitMix64: a tiny, well-mixed generator, so the stream is the same on every machine.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[test]
fn every_invariant_holds_on_a_seeded_stream_of_inputs() {
    let mut random = SplitMix64(0x0074_7269_636b_6c65);
    let mut tally = Tally::default();
    let mut input = Vec::new();
    for _ in 0..INPUTS {
        let len = random.next() % 700;
        input.clear();
        input.extend((0..len).map(|_| random.next() as u8));
        harness::check(&input, &mut tally);
    }
    // The stream must reach every kind of check, not stop early on most inputs.
    println!("{tally:?}");
    assert!(tally.cases > INPUTS / 2, "{tally:?}");
    assert!(tally.rejected_limits > INPUTS / 100, "{tally:?}");
    assert!(tally.keyed_cases > INPUTS / 4, "{tally:?}");
    assert!(tally.requests > INPUTS * 10, "{tally:?}");
    assert!(tally.exact_retries > INPUTS, "{tally:?}");
}
