#!/usr/bin/env bash
# `make fuzz`: runs every cargo-fuzz target in fuzz_targets/ under libFuzzer for FUZZ_TIME
# seconds each (default 300), then prints how many inputs each ran. Installs what it needs
# first, skipping what is in place: a nightly toolchain (cargo-fuzz builds with -Z flags and
# sanitizers) and cargo-fuzz itself, pinned, from crates.io (about 2 minutes the first time).
# Inputs found interesting stay in fuzz/corpus/ for the next run; a failing input is saved in
# fuzz/artifacts/ and the run stops with its message.
set -euo pipefail
cd "$(dirname "$0")"

FUZZ_TIME=${FUZZ_TIME:-300}
CARGO_FUZZ_VERSION=0.13.2

say() { printf 'fuzz: %s\n' "$*" >&2; }

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
    say "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo +nightly install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi

mkdir -p target/logs
summary=()
for target in $(cargo +nightly fuzz list); do
    log=target/logs/$target.log
    say "$target for $FUZZ_TIME s (log: fuzz/$log)"
    cargo +nightly fuzz run "$target" -- -max_total_time="$FUZZ_TIME" 2>&1 | tee "$log"
    # libFuzzer ends a clean run with "Done N runs in T second(s)".
    summary+=("$target: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$log" | tail -1)")
done
for line in "${summary[@]}"; do
    say "$line, no invariant broken"
done
