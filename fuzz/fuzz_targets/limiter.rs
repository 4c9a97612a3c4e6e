//! Every algorithm and the keyed limiter on arbitrary limits, costs and clocks, checked
//! against the invariants in `../harness.rs`. Run with `make fuzz`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../harness.rs"]
mod harness;

fuzz_target!(|data: &[u8]| harness::check(data, &mut harness::Tally::default()));
