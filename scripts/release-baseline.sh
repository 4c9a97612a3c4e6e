#!/usr/bin/env bash
# Prints the commit of the last release, which `make semver` checks the public API against:
# the newest vX.Y.Z tag, or, in a clone that came without tags, the commit that
# release/baseline names (the release step writes both).
set -euo pipefail
cd "$(dirname "$0")/.."

tag=$(git tag --list 'v[0-9]*.[0-9]*.[0-9]*' --sort=-v:refname | head -n 1)
if [ -n "$tag" ]; then
    git rev-parse --verify --quiet "$tag^{commit}"
    exit
fi

read -r version commit < release/baseline
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "release $version is commit $commit (release/baseline), which this clone does not have;" \
        "a shallow clone needs \`git fetch --unshallow\` first" >&2
    exit 1
fi
echo "$commit"
