#!/usr/bin/env bash
# Lays out the docs page as a docs author would host it, in one folder:
#   scripts/site.sh DIR
# www/'s page, its stylesheet and icon, beside the files of the packed tarball's dist/, taken
# out of the tarball itself (target/package/tarball names it), so that the site serves
# exactly what ships.
set -euo pipefail
cd "$(dirname "$0")/.."
site="$1"
tarball=$(cat target/package/tarball)
rm -rf "$site"
mkdir -p "$site"
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
tar -xzf "$tarball" -C "$unpacked"
cp "$unpacked"/package/dist/* "$site"/
cp www/index.html www/docs.css www/favicon.svg "$site"/
echo "site: $site, from $(basename "$tarball")"
