#!/usr/bin/env bash
# A burst of parallel clients on one key, as a reviewer of a rate limiter tries first: a
# private redis-server, two `trickle serve` processes on it (one group, 10 tokens a minute,
# a 2XX costing 1), and curl's parallel mode opening every connection at once and sending
# REQUESTS GETs with one X-Client-Id, half to each server. Prints how many answers had each
# status, ROUNDS times (a fresh key each round). A limiter that holds prints 10 × 200.
#
#   scripts/burst.sh [TRICKLE_BINARY]       (default: target/release/trickle; `make cli`)
#   REQUESTS=200 ROUNDS=5 scripts/burst.sh
#
# Needs curl and redis-server (`make setup-test` installs redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."

trickle=${1:-target/release/trickle}
requests=${REQUESTS:-200}
rounds=${ROUNDS:-5}
[ -x "$trickle" ] || { echo "burst: no trickle binary at $trickle (make cli builds one)" >&2; exit 2; }
for tool in curl redis-server; do
    command -v "$tool" >/dev/null || { echo "burst: $tool is not installed" >&2; exit 2; }
done

dir=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

redis-server --port 0 --unixsocket "$dir/redis.sock" --dir "$dir" --save '' --appendonly no \
    >"$dir/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$dir/redis.sock" ] && break; sleep 0.05; done

cat >"$dir/burst.toml" <<'EOF'
[[group]]
name = "burst"
limit = "10/1m"
costs = "2xx:1 3xx:1 4xx:5 429:0 5xx:0"
routes = ["/burst"]
EOF

urls=()
for server in 1 2; do
    "$trickle" serve --config "$dir/burst.toml" --listen 127.0.0.1:0 \
        --redis "redis+unix://$dir/redis.sock" >"$dir/serve$server.out" 2>"$dir/serve$server.err" &
    pids+=($!)
    for _ in $(seq 200); do grep -q '^listening on ' "$dir/serve$server.out" 2>/dev/null && break; sleep 0.05; done
    urls+=("$(sed -n 's/^listening on //p' "$dir/serve$server.out")")
    [ -n "${urls[-1]}" ] || { echo "burst: trickle serve did not start: $(cat "$dir/serve$server.err")" >&2; exit 1; }
done

for round in $(seq "$rounds"); do
    key="burst-$$-$round"
    : >"$dir/requests"
    for i in $(seq "$requests"); do
        printf 'url = "%s/burst"\noutput = "/dev/null"\n' "${urls[$((i % 2))]}" >>"$dir/requests"
    done
    counts=$(curl -s --no-progress-meter -Z --parallel-max "$requests" --parallel-immediate -H "X-Client-Id: $key" \
        -w '%{http_code}\n' -K "$dir/requests" | sort | uniq -c | awk '{printf "%s × %s, ", $1, $2}')
    echo "round $round: ${counts%, }"
done
