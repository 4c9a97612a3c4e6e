#!/usr/bin/env bash
# `make semver`: the public API of each crate named (trickle-core trickle-redis trickle-tower)
# against the last release (scripts/release-baseline.sh), by cargo-semver-checks. Left to
# itself, cargo-semver-checks builds each crate's dependencies afresh for each crate and each
# version, six times over; here both versions' rustdoc JSON are built in one target folder,
# target/semver, all crates at once, so each dependency is built once per version of it, and
# cargo-semver-checks compares the files.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$#" -gt 0 ] || { echo "usage: scripts/semver.sh CRATE..." >&2; exit 2; }
baseline=$(scripts/release-baseline.sh)
out=$PWD/target/semver
mkdir -p "$out"

packages=()
for crate in "$@"; do packages+=(--package "$crate"); done

# Every feature of every crate named, as cargo-semver-checks' --all-features; the JSON lands in
# $out/doc/<crate>.json, copied aside after each version, since both versions write there.
rustdoc_json() {
    local root=$1 into=$2
    (cd "$root" && RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="-Z unstable-options --output-format json" \
        CARGO_TARGET_DIR="$out" cargo doc --locked --no-deps --all-features "${packages[@]}")
    mkdir -p "$into"
    for crate in "${crates[@]}"; do
        cp "$out/doc/${crate//-/_}.json" "$into/"
    done
}
crates=("$@")

# The release's sources, as its tag or commit holds them.
src=$out/baseline-src
rm -rf "$src"
mkdir -p "$src"
git archive "$baseline" | tar -x -C "$src"

rustdoc_json "$src" "$out/baseline"
rustdoc_json "$PWD" "$out/current"

status=0
for crate in "${crates[@]}"; do
    file=${crate//-/_}.json
    echo "semver: $crate" >&2
    cargo semver-checks check-release \
        --baseline-rustdoc "$out/baseline/$file" --current-rustdoc "$out/current/$file" || status=1
done
exit "$status"
