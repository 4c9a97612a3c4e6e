#!/usr/bin/env bash
# Lays out the docs page as a docs author would host it, in one folder:
#   scripts/site.sh DIR
# The demo page, written from the docs site's chapter for an API's readers
# (docs/src/understanding.md) into www/page.html's frame by scripts/consumer-page.mjs, with
# www/'s stylesheet and icon, beside the files of the packed tarball's dist/, taken out of
# the tarball itself (target/package/tarball names it), so that the site serves exactly what
# ships.
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
node scripts/consumer-page.mjs "$site/index.html"
cp www/docs.css www/favicon.svg "$site"/
echo "site: $site, from $(basename "$tarball")"
