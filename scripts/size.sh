#!/usr/bin/env bash
# Prints what each file costs a docs page over the wire (gzip -9), and the total:
#   scripts/size.sh [--json OUT] FILE...
# With --json, also writes the figures to OUT for `make bench`'s table.
set -euo pipefail
json=""
if [ "${1:-}" = --json ]; then
    json="$2"
    shift 2
fi
total=0
rows=""
printf '%-24s %10s %10s\n' file bytes "gzip -9"
for file in "$@"; do
    raw=$(wc -c < "$file")
    packed=$(gzip -9 < "$file" | wc -c)  # from stdin: no file name in the header
    total=$((total + packed))
    printf '%-24s %10d %10d\n' "$(basename "$file")" "$raw" "$packed"
    rows="${rows:+$rows,}{\"file\":\"$(basename "$file")\",\"bytes\":$raw,\"gzip\":$packed}"
done
printf '%-24s %10s %10d\n' total "" "$total"
if [ -n "$json" ]; then
    mkdir -p "$(dirname "$json")"
    printf '{"files":[%s],"total":%d}\n' "$rows" "$total" > "$json"
fi
