#!/usr/bin/env bash
# How long the README's two commands take a newcomer, each from a new clone of this
# repository's HEAD (committed work only):
#
#   scripts/newcomer.sh OUT.json
#
# - `make demo` as on a fresh machine: a HOME of its own, so no tool in ~/.cargo/bin, no
#   sccache, no cargo registry and no npm cache; only rustup's toolchains are this machine's
#   (a fresh machine has rustup and cargo; `make demo` adds rustup's wasm32 target, which is
#   downloaded here only if this machine lacks it too). Timed until it prints the URL it
#   serves, then stopped.
# - `make test` on this machine as `make setup-test` left it, sccache's cache included: what
#   a contributor waits for on a second clone, and what CI waits for.
#
# Both run on a port and in folders of their own under target/newcomer/, so they can run
# while another clone is in use; `make newcomer` records the result in
# docs/figures/newcomer.json.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
repo=$PWD
scratch="$repo/target/newcomer"
rm -rf "$scratch"
mkdir -p "$scratch/home/bin" "$scratch/home/.cargo"

# rustup's proxies, under the names the build calls, and nothing else of ~/.cargo/bin.
rustup_bin=$(command -v rustup)
for tool in cargo rustc rustup rustdoc rustfmt cargo-fmt cargo-clippy clippy-driver; do
    ln -s "$rustup_bin" "$scratch/home/bin/$tool"
done
# npm's settings are the machine's (a registry mirror, a certificate), not a tool setup adds.
[ -f "$HOME/.npmrc" ] && cp "$HOME/.npmrc" "$scratch/home/.npmrc"

seconds() { echo $(($(date +%s) - $1)); }

git clone -q "$repo" "$scratch/demo"
port=8791
log="$scratch/demo.log"
started=$(date +%s)
(
    cd "$scratch/demo"
    exec env -u RUSTC_WRAPPER HOME="$scratch/home" CARGO_HOME="$scratch/home/.cargo" \
        RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" \
        PATH="$scratch/home/bin:/usr/local/bin:/usr/bin:/bin" \
        make demo PORT=$port
) >"$log" 2>&1 &
demo=$!
demo_seconds=""
while kill -0 "$demo" 2>/dev/null; do
    if grep -q "http://127.0.0.1:$port/" "$log"; then
        demo_seconds=$(seconds "$started")
        break
    fi
    sleep 1
done
if [ -n "$demo_seconds" ]; then
    status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" || true)
fi
pkill -f "scripts/serve.mjs target/site $port" 2>/dev/null || true
kill "$demo" 2>/dev/null || true
wait "$demo" 2>/dev/null || true
if [ -z "$demo_seconds" ] || [ "${status:-}" != 200 ]; then
    echo "newcomer: make demo did not serve the demo page (GET / answered ${status:-nothing}); its log:" >&2
    tail -n 30 "$log" >&2
    exit 1
fi
echo "newcomer: make demo served after $demo_seconds s"

git clone -q "$repo" "$scratch/test"
started=$(date +%s)
if ! (cd "$scratch/test" && make test) >"$scratch/test.log" 2>&1; then
    echo "newcomer: make test failed; its log is $scratch/test.log" >&2
    exit 1
fi
test_seconds=$(seconds "$started")
echo "newcomer: make test passed in $test_seconds s"

minutes() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }
cat >"$out" <<EOF
{
  "demo": "$demo_seconds s",
  "demoMinutes": "$(minutes "$demo_seconds")",
  "test": "$test_seconds s",
  "testMinutes": "$(minutes "$test_seconds")"
}
EOF
