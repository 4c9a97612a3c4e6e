#!/usr/bin/env bash
# Prints what each file costs a docs page over the wire (gzip -9), and the total:
#   scripts/size.sh FILE...
set -euo pipefail
total=0
printf '%-32s %10s %12s\n' file bytes "gzip -9"
for file in "$@"; do
    raw=$(wc -c < "$file")
    packed=$(gzip -9 < "$file" | wc -c)  # from stdin: no file name in the header
    total=$((total + packed))
    printf '%-32s %10d %12d\n' "$file" "$raw" "$packed"
done
awk -v total="$total" 'BEGIN { printf "%-32s %10s %12d  (%.1f kB, 1 kB = 1000 B)\n", "total", "", total, total / 1000 }'
