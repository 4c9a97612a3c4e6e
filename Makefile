# The two commands of the README's quick start are `make demo` and `make test`; both set up
# what is missing first (scripts/setup.sh), so they work on a fresh machine. Every step is
# idempotent and costs seconds once the tools are in place.

CARGO ?= cargo
PORT ?= 8000
LIMIT ?= 6/8s
ALGORITHM ?= floating
EXAMPLE ?= examples/esi-burst.csv

# npm's wasm-opt must shadow Debian's (/usr/bin/wasm-opt 108 silently breaks wasm-bindgen
# output), and tools installed by `cargo install` live in ~/.cargo/bin.
export PATH := $(CURDIR)/tests/e2e/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

WASM_PACK = wasm-pack
PKG = www/pkg

.PHONY: all setup setup-browser build wasm cli demo replay size book \
	test fmt lint unit doc wasm-node wasm-browser e2e fuzz

all: build

setup:
	@scripts/setup.sh

setup-browser:
	@scripts/setup.sh browser

build: wasm cli

# The release WebAssembly build and its JS glue, next to the element: www/ is then a static
# site any server can host.
wasm: setup
	$(WASM_PACK) build --target web --profile wasm-release --mode no-install --no-pack --out-dir $(PKG)

cli: setup
	$(CARGO) build --release --locked

# Builds, then serves the docs page on 127.0.0.1 until Ctrl-C.
demo: build
	@node scripts/serve.mjs www $(PORT)

# The replay CLI on an example request log: a client that fires too fast, meets 429s,
# waits out Retry-After and recovers. Try: make replay LIMIT=150/15m EXAMPLE=your-log.csv
replay: cli
	@echo "Replaying $(EXAMPLE) against $(LIMIT) ($(ALGORITHM)):"
	@./target/release/trickle replay --limit $(LIMIT) --algorithm $(ALGORITHM) $(EXAMPLE) \
		> target/replay.csv 2> target/replay.summary || { cat target/replay.summary >&2; exit 1; }
	@if command -v column >/dev/null; then column -s, -t < target/replay.csv; else cat target/replay.csv; fi
	@cat target/replay.summary

# What a docs page downloads for the widget, gzip -9 as a server would send it.
size: wasm
	@scripts/size.sh $(PKG)/trickle_bg.wasm $(PKG)/trickle.js $(PKG)/snippets/*/*.js www/rate-limit-demo.js www/rate-limit-demo.css

# How exact the floating window is: seeded synthetic workloads through the floating window,
# the fixed window and the token bucket against the sliding log, as the README's table.
.PHONY: accuracy
accuracy:
	$(CARGO) run --release --locked --example accuracy > target/accuracy.md.part
	@mv target/accuracy.md.part target/accuracy.md
	@cat target/accuracy.md

# The mdBook in docs/book/, built into target/book/ the way the README tells a docs author to
# embed the widget: its files copied into the book's src/ (gitignored here), then mdbook build.
BOOK_WIDGET = www/rate-limit-demo.js www/rate-limit-demo.css $(PKG)
book: wasm
	@scripts/setup.sh book
	cp -R $(BOOK_WIDGET) docs/book/src/
	mdbook build docs/book

test: setup-browser fmt lint unit doc wasm-node wasm-browser e2e

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --all-targets -- -D warnings
	$(CARGO) clippy --locked --lib --tests --target wasm32-unknown-unknown -- -D warnings

# Unit, integration, CLI and doc tests, natively.
unit:
	$(CARGO) test --locked

# The API docs build without a broken link or a warning.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --no-deps

# The JS boundary (tests/web.rs) as WebAssembly, under Node and in headless Chromium. The
# suite names no environment, so the runner picks Node unless WASM_BINDGEN_USE_BROWSER is set.
wasm-node: setup
	$(WASM_PACK) test --node --mode no-install -- --locked --test web

wasm-browser: setup-browser
	WASM_BINDGEN_USE_BROWSER=1 $(WASM_PACK) test --headless --chrome --mode no-install -- --locked --test web

# The element and the docs page in Debian's Chromium, against the release build.
e2e: setup-browser wasm
	npm test --prefix tests/e2e

# The fuzz target (fuzz/) under libFuzzer, FUZZ_TIME seconds per target; `make test` runs the
# same invariants as a seeded smoke (tests/fuzz_smoke.rs). fuzz/run.sh installs the nightly
# toolchain and cargo-fuzz it needs when they are missing.
FUZZ_TIME ?= 300
fuzz:
	FUZZ_TIME=$(FUZZ_TIME) fuzz/run.sh

# The README's benchmark table: criterion against governor, heap bytes per key, the wasm
# bindings against plain JS in Node, the widget's animation frames in Chromium, each against
# its baseline in the same run; then the table. A few minutes; not part of `make test`.
.PHONY: bench
bench: setup-browser wasm
	$(CARGO) bench --locked --bench decisions --bench keyed
	@mkdir -p target/bench
	$(CARGO) run --locked --release --example heap_per_key > target/bench/bytes-per-key.csv
	@cat target/bench/bytes-per-key.csv
	node benches/wasm-hit.mjs
	node benches/widget-frames.mjs
	@node benches/report.mjs
