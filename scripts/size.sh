#!/usr/bin/env bash
# Prints what each file costs a docs page over the wire, gzip -9 and brotli -11 (what a
# server or a CDN would send), and the totals:
#   scripts/size.sh [--json OUT] FILE...
# With --json, also writes the figures to OUT for `make bench`'s table and
# scripts/size-figures.mjs. Brotli comes from Node's zlib at quality 11, what `brotli -11`
# does, so that no brotli CLI is needed.
set -euo pipefail
json=""
if [ "${1:-}" = --json ]; then
    json="$2"
    shift 2
fi
brotli_bytes() {
    node -e '
        const { brotliCompressSync, constants } = require("node:zlib");
        const bytes = require("node:fs").readFileSync(process.argv[1]);
        const params = { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length };
        console.log(brotliCompressSync(bytes, { params }).length);
    ' "$1"
}
total=0
total_brotli=0
rows=""
printf '%-24s %10s %10s %11s\n' file bytes "gzip -9" "brotli -11"
for file in "$@"; do
    raw=$(wc -c < "$file")
    packed=$(gzip -9 < "$file" | wc -c)  # from stdin: no file name in the header
    brotli=$(brotli_bytes "$file")
    total=$((total + packed))
    total_brotli=$((total_brotli + brotli))
    printf '%-24s %10d %10d %11d\n' "$(basename "$file")" "$raw" "$packed" "$brotli"
    rows="${rows:+$rows,}{\"file\":\"$(basename "$file")\",\"bytes\":$raw,\"gzip\":$packed,\"brotli\":$brotli}"
done
printf '%-24s %10s %10d %11d\n' total "" "$total" "$total_brotli"
if [ -n "$json" ]; then
    mkdir -p "$(dirname "$json")"
    printf '{"files":[%s],"total":%d,"totalBrotli":%d}\n' "$rows" "$total" "$total_brotli" > "$json"
fi
