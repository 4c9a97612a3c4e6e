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

# The release's JSON is the same on every run for one toolchain: it is kept outside the clone,
# under the release's commit, the toolchain's version, the crates and their features, so
# that a new clone on a set-up machine builds only the current version's. A copy missing any
# crate's file is built again, and stored by a rename, so a run cut off halfway leaves none.
cache_key=$( { echo "$baseline"; rustc -vV; cargo semver-checks --version; echo "${crates[*]} all-features"; } |
    sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/trickle/semver-baseline/$cache_key
cached() {
    local crate
    for crate in "${crates[@]}"; do
        [ -s "$cache/${crate//-/_}.json" ] || return 1
    done
}
rm -rf "$out/baseline"
if cached; then
    echo "semver: the release's rustdoc JSON from $cache" >&2
    cp -r "$cache" "$out/baseline"
else
    # The release's sources, as its tag or commit holds them.
    src=$out/baseline-src
    rm -rf "$src"
    mkdir -p "$src"
    git archive "$baseline" | tar -x -C "$src"
    rustdoc_json "$src" "$out/baseline"
    mkdir -p "$(dirname "$cache")"
    staged=$(mktemp -d "$cache.XXXXXX")
    cp "$out/baseline"/*.json "$staged/"
    rm -rf "$cache"
    mv "$staged" "$cache"
fi
rustdoc_json "$PWD" "$out/current"

status=0
for crate in "${crates[@]}"; do
    file=${crate//-/_}.json
    echo "semver: $crate" >&2
    cargo semver-checks check-release \
        --baseline-rustdoc "$out/baseline/$file" --current-rustdoc "$out/current/$file" || status=1
done
exit "$status"
