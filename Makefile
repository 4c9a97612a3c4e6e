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
export PATH := $(CURDIR)/www/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

# Once `scripts/setup.sh test` has put sccache in ~/.cargo/bin, every rustc call goes through
# it: a new clone or worktree on a set-up machine takes its dependencies' compiled crates
# from the shared cache (~/.cache/sccache) rather than compiling them again. The server is
# started by `sccache-server` with no terminal or pipe of ours, and stops after an idle hour.
SCCACHE := $(wildcard $(HOME)/.cargo/bin/sccache)
ifneq ($(SCCACHE),)
export RUSTC_WRAPPER ?= $(SCCACHE)
export SCCACHE_IDLE_TIMEOUT ?= 3600
endif

WASM_PACK = wasm-pack
WASM_CRATE = crates/trickle-wasm
PKG = www/pkg
PACKAGE_DIR = packages/rate-limit-demo
SITE = target/site

.PHONY: all setup setup-test build wasm package site cli demo replay size docs \
	test js-unit fmt lint unit doc wasm-node wasm-browser package-test e2e fuzz

all: build

# What building needs; setup-test adds what the tests need (Chromium, playwright, mdBook).
setup:
	@scripts/setup.sh

setup-test:
	@scripts/setup.sh test

build: package cli

# The release WebAssembly build of crates/trickle-wasm and its JS glue, in www/pkg/, where
# the element's source imports it from: what `wasm-pack build --profile wasm-release` makes,
# in three steps (and the named copy below), so that building needs no wasm-pack (a fresh machine would
# compile it first, for minutes); the tests still use it for `wasm-pack test`. The glue
# passes strings with TextEncoder.encodeInto alone, which every engine the package supports
# has, without the fallback for engines that lack it. wasm-opt: its
# default -O, and strip the two custom sections no browser reads (which tools built the
# module, and the features it was compiled with). The same, optimised alike but keeping the
# functions' names, goes to target/package/ for `make size`'s table of where the wasm's
# bytes go.
WASM_OUT = target/wasm32-unknown-unknown/wasm-release/trickle_wasm.wasm
WASM_NAMED = target/package/trickle_bg.named.wasm
wasm: setup
	$(CARGO) build --locked -p trickle-wasm --target wasm32-unknown-unknown --profile wasm-release
	wasm-bindgen --target web --encode-into always --out-dir $(PKG) --out-name trickle $(WASM_OUT)
	@mkdir -p target/package
	wasm-opt -O -g --strip-producers --strip-target-features $(PKG)/trickle_bg.wasm -o $(WASM_NAMED)
	wasm-opt -O --strip-producers --strip-target-features $(PKG)/trickle_bg.wasm -o $(PKG)/trickle_bg.wasm
	@printf '*' > $(PKG)/.gitignore

# The opt-in modes' own WebAssembly (`--features extras`: crates/trickle-wasm/src/replay.rs
# and policy.rs), www/pkg/trickle_extras*, fetched only by a widget with `replay` or a
# `limit` of several limits: the default module carries none of it. Its own target folder,
# so that the two feature sets do not rebuild each other.
WASM_EXTRAS_OUT = target/wasm-extras/wasm32-unknown-unknown/wasm-release/trickle_wasm.wasm
.PHONY: wasm-extras
wasm-extras: setup
	$(CARGO) build --locked -p trickle-wasm --target wasm32-unknown-unknown --profile wasm-release \
		--features extras --target-dir target/wasm-extras
	wasm-bindgen --target web --encode-into always --out-dir $(PKG) --out-name trickle_extras $(WASM_EXTRAS_OUT)
	wasm-opt -O --strip-producers --strip-target-features $(PKG)/trickle_extras_bg.wasm -o $(PKG)/trickle_extras_bg.wasm

# The module of all four algorithms (`--features algorithms`), www/pkg/trickle_algorithms*,
# fetched by limiter.js the first time a page asks for the sliding log, the fixed window or
# the token bucket (compare mode shows all four): the default module runs the floating window
# alone. Its own target folder, as the extras'.
WASM_ALGORITHMS_OUT = target/wasm-algorithms/wasm32-unknown-unknown/wasm-release/trickle_wasm.wasm
.PHONY: wasm-algorithms
wasm-algorithms: setup
	$(CARGO) build --locked -p trickle-wasm --target wasm32-unknown-unknown --profile wasm-release \
		--features algorithms --target-dir target/wasm-algorithms
	wasm-bindgen --target web --encode-into always --out-dir $(PKG) --out-name trickle_algorithms $(WASM_ALGORITHMS_OUT)
	wasm-opt -O --strip-producers --strip-target-features $(PKG)/trickle_algorithms_bg.wasm -o $(PKG)/trickle_algorithms_bg.wasm

# The npm package of the widget, packages/rate-limit-demo/: bundled by esbuild, its manifest,
# then `npm pack` into target/package/rate-limit-demo-<version>.tgz, the artifact.
package: wasm wasm-extras wasm-algorithms
	node www/build.mjs

# The docs page as a site a docs author would host: www/'s page beside the files of the
# packed tarball, so that what is served, and tested, is what ships.
site: package
	@scripts/site.sh $(SITE)

cli: setup
	$(CARGO) build --release --locked -p trickle-cli

# The demo API, `trickle serve`, on 127.0.0.1:$(SERVE_PORT) with examples/serve.toml until
# Ctrl-C; REDIS=redis://127.0.0.1:6379/ keeps its buckets in that Redis instead.
SERVE_PORT ?= 8080
.PHONY: serve
serve: cli
	./target/release/trickle serve --config examples/serve.toml --listen 127.0.0.1:$(SERVE_PORT) $(if $(REDIS),--redis $(REDIS))

# Builds, then serves the docs page on 127.0.0.1 until Ctrl-C.
demo: site
	@node scripts/serve.mjs $(SITE) $(PORT)

# The replay CLI on an example request log: a client that fires too fast, meets 429s,
# waits out Retry-After and recovers. Try: make replay LIMIT=150/15m EXAMPLE=your-log.csv (or
# a browser's HAR export, such as examples/browser-session.har)
replay: cli
	@echo "Replaying $(EXAMPLE) against $(LIMIT) ($(ALGORITHM)):"
	@./target/release/trickle replay --limit $(LIMIT) --algorithm $(ALGORITHM) $(EXAMPLE) \
		> target/replay.csv 2> target/replay.summary || { cat target/replay.summary >&2; exit 1; }
	@if command -v column >/dev/null; then column -s, -t < target/replay.csv; else cat target/replay.csv; fi
	@cat target/replay.summary

# What a docs page downloads for one widget, gzip -9 and brotli -11 as a server or a CDN
# would send it, and what each mode fetched on first use adds (every dist/*.js that is not
# one of the package's entries, with its own dist/trickle_<mode>_bg.wasm if it has one:
# compare, live, predict, replay, and any mode added since); then
# docs/figures/size.json for the docs, with where the bytes go (each module of the bundle,
# the wasm's code and data).
size: package
	@scripts/size.sh --json target/package/size.json $(PACKAGE_DIR)/dist/rate-limit-demo.js $(PACKAGE_DIR)/dist/trickle_bg.wasm
	@node scripts/size-figures.mjs --chunks | while read -r mode files; do \
		echo "$$mode mode adds:"; \
		scripts/size.sh --json "target/package/size-$$mode.json" $$files || exit 1; done
	@node scripts/size-figures.mjs

# How exact the floating window is: seeded synthetic workloads through the floating window,
# the fixed window and the token bucket against the sliding log, as the README's table.
.PHONY: accuracy
accuracy:
	$(CARGO) run --release --locked --example accuracy -- --json target/accuracy-cells.json > target/accuracy.md.part
	@mv target/accuracy.md.part target/accuracy.md
	@node scripts/figures.mjs record-table accuracy "make accuracy" target/accuracy.md target/accuracy-cells.json
	@cat target/accuracy.md

# The docs site: the mdBook in docs/, built into target/docs/ with the widget embedded the
# way docs/src/embedding.md tells a docs author to: the widget's reference generated from the
# package's manifest and types, the package's dist/ files copied beside the chapters
# (gitignored here), then mdbook build.
docs: package
	@scripts/setup.sh book
	node scripts/reference.mjs --write docs/src/reference.md
	node scripts/figures.mjs check
	cp $(PACKAGE_DIR)/dist/*.js $(PACKAGE_DIR)/dist/*.wasm docs/src/
	mdbook build docs
	@echo "the docs site: target/docs/index.html"

# Two cores, and the end-to-end suite is the longest thing on them: everything else is
# arranged so that it starts as early as it can and never waits. First, in order, what it
# needs built or what is quick to fail: the JS unit suites, formatting, the native tests
# compiled (not run; the CLI the suite starts is one of their builds), the API docs, the
# site and the docs site, and a copy of the CLI for the end-to-end suite. Then four lanes
# side by side:
# - the end-to-end suite, one test file at a time: some of its tests press on the real clock,
#   and with two files at once on a loaded machine their presses ran late;
# - the native tests run, with those that need setup's Python tools, and the end-to-end
#   files that mostly sleep (E2E_APART), then the registry dry runs and the declared Rust
#   version, which build in the same target folder and so must not start before the doc
#   tests have been compiled against it;
# - the API's semver check (its own target folder), then the WebAssembly boundary tests;
# - clippy (checks only: it writes no file any other lane reads), the loom model (its own
#   target folder), then the Redis suites again on Valkey.
# Everything but the end-to-end suite and the tests that start servers (the native tests and
# the Valkey run) runs at the lowest priority, so that the timings that stretch are none of
# theirs: a server starved at nice 19 behind them answered after the 1 s `trickle serve`
# waits for Redis, and the request was failed open. The lanes build nothing the end-to-end
# suite reads: a package rebuilt while Chromium reads it would be a flaky test.
# Each lane writes to its own file, target/lanes/<lane>.log, printed whole when the lane ends:
# no process of a lane holds the terminal or the CI's pipe, so none can leave it non-blocking
# (a make writing a lane's output into such a pipe while the reader is behind fails with
# "write error: stdout").
# RUSTC_WRAPPER is passed on as this make read it: on a fresh machine sccache is installed
# by setup-test after that, and the lanes would otherwise start its server themselves.
LANES = e2e-lane native-lane semver-wasm-lane clippy-loom-valkey-lane
test: setup-test sccache-server js-unit fmt unit-build doc site docs e2e-cli
	@echo "four lanes: $(LANES), each printed when it ends (target/lanes/<lane>.log)"
	$(MAKE) -j4 --no-print-directory RUSTC_WRAPPER=$(RUSTC_WRAPPER) $(LANES)

# Started here, its output to /dev/null, rather than by the first rustc call, which would
# hand it that call's stdout: a server that outlives `make test` must not hold the pipe a CI
# reads the log from.
.PHONY: sccache-server
sccache-server:
	@if [ -n "$(RUSTC_WRAPPER)" ] && [ "$(RUSTC_WRAPPER)" = "$(SCCACHE)" ]; then \
		$(SCCACHE) --start-server </dev/null >/dev/null 2>&1 || true; fi

# A lane's commands, $(1), with their output in target/lanes/$@.log, then printed; the lane's
# status is theirs.
define lane
	@mkdir -p target/lanes; { $(1); } >target/lanes/$@.log 2>&1; status=$$?; \
		echo "==== lane $@ ($$([ $$status = 0 ] && echo passed || echo FAILED)) ===="; \
		cat target/lanes/$@.log; exit $$status
endef

.PHONY: unit-build unit-run e2e-lane e2e-cli native-lane semver-wasm-lane clippy-loom-valkey-lane clippy semver msrv \
	publish-check-run msrv-after-clippy wasm-node-run wasm-browser-run
e2e-lane:
	$(call lane,$(MAKE) -j1 --no-print-directory e2e-run)

native-lane:
	$(call lane,$(MAKE) -j1 --no-print-directory unit-run tools-run e2e-apart-run && \
		nice -n 19 $(MAKE) -j1 --no-print-directory publish-check-run msrv-after-clippy)

semver-wasm-lane:
	$(call lane,nice -n 19 $(MAKE) -j1 --no-print-directory semver wasm-node-run wasm-browser-run)

clippy-loom-valkey-lane:
	$(call lane,nice -n 19 $(MAKE) -j1 --no-print-directory clippy loom && \
		$(MAKE) -j1 --no-print-directory valkey-run)

# The tests beside the widget's pure modules (www/src/*.test.js, on a fake core where a module
# needs one) and the scripts' own: Node alone, in seconds, nothing built first.
js-unit:
	node --test www/src scripts

fmt:
	$(CARGO) fmt --all -- --check

lint: clippy semver

# The library's users get the core alone: no dependency of the CLI's or the binding's. The
# docs' Rust client is not a default member, so it is named.
clippy:
	$(CARGO) clippy --locked --all-targets --features trickle-tower/redis,trickle-redis/cluster -- -D warnings
	@if $(CARGO) tree --locked -p trickle-core -e normal --prefix none | grep -vx 'trickle-core v[^ ]* ([^)]*)' | grep .; then \
		echo "the library build depends on the crates above; it must depend on none" >&2; exit 1; fi
	$(CARGO) clippy --locked -p trickle-wasm --all-targets --target wasm32-unknown-unknown -- -D warnings
	$(CARGO) clippy --locked -p trickle-wasm --lib --target wasm32-unknown-unknown --profile wasm-release -- -D warnings
	$(CARGO) clippy --locked -p trickle-wasm --lib --target wasm32-unknown-unknown --profile wasm-release --features algorithms -- -D warnings
	$(CARGO) clippy --locked -p trickle-wasm --lib --target wasm32-unknown-unknown --profile wasm-release --features extras -- -D warnings
	$(CARGO) clippy --locked -p polite-client --all-targets -- -D warnings

# The public API of each library crate against the last release (the v0.1.0 tag; a clone
# without tags finds its commit in release/baseline): a change that breaks a user's code
# fails unless the crate's version says so. scripts/semver.sh builds both versions' rustdoc
# JSON in one target folder, target/semver, and cargo-semver-checks compares them.
SEMVER_CRATES = trickle-core trickle-redis trickle-tower
semver: setup-test
	scripts/semver.sh $(SEMVER_CRATES)

# The oldest Rust the crates declare (`rust-version` in Cargo.toml) builds every crate, its
# tests and its examples; scripts/setup.sh test installs that toolchain through rustup.
MSRV = $(shell sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
msrv: setup-test
	$(CARGO) +$(MSRV).0 check --locked --workspace --all-targets --features trickle-tower/redis,trickle-redis/cluster

# In `make test`, clippy checks every crate and target, with these features, on
# the default toolchain (and the loom lane builds trickle-loom): when that toolchain is the
# declared version, the check would repeat it, over a minute of `make test`.
msrv-after-clippy:
	@if [ "$$(rustc --version | cut -d' ' -f2)" = "$(MSRV).0" ]; then \
		echo "msrv: the default toolchain is Rust $(MSRV).0, the declared version, which clippy checks everything with"; \
	else $(MAKE) --no-print-directory msrv; fi

# Unit, integration, CLI, Redis (a private redis-server each test starts; a Redis Cluster
# of six per cluster suite, trickle-redis's cluster feature), the tower layer
# through real HTTP (with its Redis backend, a feature) and doc tests, natively.
unit: unit-build
	@$(MAKE) --no-print-directory unit-run

unit-build: setup-test
	$(CARGO) test --locked --features trickle-tower/redis,trickle-redis/cluster --no-run

unit-run:
	$(CARGO) test --locked --features trickle-tower/redis,trickle-redis/cluster

# The Redis suites again, on Valkey (scripts/setup.sh test puts its valkey-server and
# valkey-cli in target/tools/valkey/bin): every test binary of crates/trickle-redis, and the
# CLI's and the layer's that start a server, single or Cluster. A `--test NAME` runs every
# default package's test of that name, so the core's own fixed_window.rs and the like come
# along; they need no server and take milliseconds. The features are unit-run's, so this
# builds nothing. The test support checks that each server it starts is the one
# TRICKLE_REDIS_SERVER names, so a suite that ignored it fails rather than pass on Redis.
VALKEY_BIN = $(CURDIR)/target/tools/valkey/bin
VALKEY_TESTS = $(sort $(basename $(notdir $(wildcard crates/trickle-redis/tests/*.rs)))) \
	redis serve_redis serve_cluster serve_metrics fallback
.PHONY: valkey valkey-run
valkey: unit-build
	@$(MAKE) --no-print-directory valkey-run

valkey-run:
	TRICKLE_REDIS_SERVER=$(VALKEY_BIN)/valkey-server TRICKLE_REDIS_CLI=$(VALKEY_BIN)/valkey-cli \
		$(CARGO) test --locked --features trickle-tower/redis,trickle-redis/cluster \
		$(addprefix --test ,$(VALKEY_TESTS))

# The loom model of the concurrent limiter's compare-and-swap (tests/loom): every
# interleaving of a few threads on one packed key. Its own target folder, since the cfg
# rebuilds every crate and would otherwise throw away the normal build; its own package, so
# the build compiles the core and loom, not the core's dev-dependencies.
.PHONY: loom
loom:
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom $(CARGO) test --locked --profile loom -p trickle-loom

# The API docs build without a broken link or a warning.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --no-deps --features trickle-tower/redis,trickle-redis/cluster

# The WebAssembly boundary (crates/trickle-wasm/tests/web.rs): the module of all four
# algorithms (`--features algorithms`) under Node, the default module (the floating window
# alone) in headless Chromium; the opt-in modes' (tests/replay.rs and tests/policy.rs, `--features extras`)
# under Node. The suite names no environment, so the runner picks Node unless
# WASM_BINDGEN_USE_BROWSER is set.
wasm-node: setup
	@$(MAKE) --no-print-directory wasm-node-run

wasm-node-run:
	$(WASM_PACK) test --node --mode no-install $(WASM_CRATE) --locked --test web --features algorithms
	$(WASM_PACK) test --node --mode no-install $(WASM_CRATE) --locked --test replay --test policy --features extras

wasm-browser: setup-test
	@$(MAKE) --no-print-directory wasm-browser-run

wasm-browser-run:
	WASM_BINDGEN_USE_BROWSER=1 $(WASM_PACK) test --headless --chrome --mode no-install $(WASM_CRATE) --locked --test web

# What each registry would take, checked as it will check it: every crate's file list (its
# own folder only, scripts/packaging.mjs), `cargo package` of every publishable crate in
# dependency order with the unpublished ones served from a local registry, and `npm publish
# --dry-run` of the widget's package.
.PHONY: publish-check
publish-check: package
	@$(MAKE) --no-print-directory publish-check-run

# The local registry's sources that cargo unpacked on an earlier run are dropped first: cargo
# keeps them by name and version only, so a crate changed since, still at one version, would be
# verified as it was. The verification builds the packed crates in target/debug, where the
# doc tests' rustdoc would find a second trickle_core beside the workspace's (E0460): in
# `make test` it runs after them. A packed crate is built as a workspace of its own, without
# the root manifest's profiles: debug info off for all, as the workspace builds its
# dependencies, so that those builds are reused rather than made again with full debug info.
publish-check-run:
	node scripts/packaging.mjs
	rm -rf "$${CARGO_HOME:-$$HOME/.cargo}"/registry/src/-*/trickle-*
	CARGO_PROFILE_DEV_DEBUG=false $(CARGO) package --locked --allow-dirty --workspace --exclude trickle-wasm --exclude polite-client --exclude trickle-loom
	cd $(PACKAGE_DIR) && npm publish --dry-run --ignore-scripts

# The package, its tarball installed in a scratch project, the element and the docs page in
# Debian's Chromium, Firefox ESR and WebKit; the docs site; the docs' client examples
# (docs/src/clients/, the Rust one built by the test) against a local server that answers 429
# with Retry-After; the widget's live mode against `trickle serve`: a debug build rather than
# a release build (over a minute with LTO) that only the tests would use; then serve's tests
# that need a tool from setup's tests/recipes/.venv: the IETF fields (http-sf) and the
# OpenAPI document (openapi-spec-validator).
# The suite's CLI is a copy of the one the native test build made (target/debug/trickle),
# taken before the lanes start: the registry dry run in the native lane later builds the
# packed CLI over that file. The suite's own cargo builds (the docs' Rust client) have a
# target folder of their own, target/e2e-build, so that no lane holds cargo's lock on
# target/ while a test waits for it.
E2E_TARGET = $(CURDIR)/target/e2e-build
e2e: setup-test site docs unit-build
	@$(MAKE) --no-print-directory e2e-cli e2e-run e2e-apart-run tools-run

.PHONY: e2e-cli
e2e-cli:
	@mkdir -p $(E2E_TARGET)
	cp target/debug/trickle $(E2E_TARGET)/trickle

# The suite's files that start no browser and spend most of their time asleep on the real
# clock (the docs' clients wait out each Retry-After and back off for real: over half a
# minute), and whose timings allow any lateness: `make test` runs them in the native lane,
# beside the rest of the suite rather than in its line.
E2E_APART = clients.test.mjs
E2E_FILES = $(filter-out $(E2E_APART),$(sort $(notdir $(wildcard tests/e2e/*.test.mjs))))
# The suite's runner, one file at a time, given the files to run.
E2E_NODE = cd tests/e2e && CARGO_TARGET_DIR=$(E2E_TARGET) TRICKLE=$(E2E_TARGET)/trickle \
	node --test --test-concurrency=1
.PHONY: e2e-run e2e-apart-run
e2e-run:
	$(E2E_NODE) $(E2E_FILES)

e2e-apart-run:
	$(E2E_NODE) $(E2E_APART)

# The IETF fields and OpenAPI tests, with unit-run's features so that after it they build
# nothing: in `make test` they end the native lane's run.
.PHONY: tools-run
tools-run:
	$(CARGO) test --locked --features trickle-tower/redis,trickle-redis/cluster \
		--test ietf --test openapi -- --ignored

# What a Redis Cluster failover costs (crates/trickle-cli/tests/serve_cluster.rs, which
# `make test` runs too): a master SIGKILLed under two `trickle serve --redis-cluster`, one
# failing open and one closed; docs/figures/failover.json for docs/src/redis.md.
.PHONY: failover
failover: setup-test
	@mkdir -p target
	TRICKLE_FAILOVER_JSON=$(CURDIR)/target/failover.json $(CARGO) test --locked -p trickle-cli \
		--test serve_cluster -- --nocapture killed
	@node scripts/figures.mjs record failover "make failover" target/failover.json

# The same on six Valkey nodes (see valkey-run): docs/figures/failover-valkey.json. With
# unit-run's features, so that after `make test` it builds nothing.
.PHONY: failover-valkey
failover-valkey: setup-test
	@mkdir -p target
	TRICKLE_REDIS_SERVER=$(VALKEY_BIN)/valkey-server TRICKLE_REDIS_CLI=$(VALKEY_BIN)/valkey-cli \
		TRICKLE_FAILOVER_JSON=$(CURDIR)/target/failover-valkey.json \
		$(CARGO) test --locked --features trickle-tower/redis,trickle-redis/cluster \
		--test serve_cluster -- --nocapture killed
	@node scripts/figures.mjs record failover-valkey "make failover-valkey" \
		target/failover-valkey.json

# How long the README's two commands take a newcomer (scripts/newcomer.sh), each from a new
# clone of HEAD: `make demo` on a machine as fresh as a HOME of its own makes it, `make test`
# on this machine as setup left it; docs/figures/newcomer.json, for docs/src/contributing.md.
.PHONY: newcomer
newcomer: setup-test
	@mkdir -p target
	scripts/newcomer.sh target/newcomer.json
	@node scripts/figures.mjs record newcomer "make newcomer" target/newcomer.json

# The fuzz target (fuzz/) under libFuzzer, FUZZ_TIME seconds per target; `make test` runs the
# same invariants as a seeded smoke (tests/fuzz_smoke.rs). fuzz/run.sh installs the nightly
# toolchain and cargo-fuzz it needs when they are missing.
FUZZ_TIME ?= 300
fuzz:
	FUZZ_TIME=$(FUZZ_TIME) fuzz/run.sh

# The benchmark table of docs/src/performance.md: criterion against governor, heap bytes per key, the floating
# window on a private redis-server against INCRBY (one key; then keys spread over one node
# and over a three-master Redis Cluster), the wasm bindings against plain JS in
# Node, the widget's animation frames in Chromium, each against its baseline in the same run;
# then what the docs quote beside it (the layer's own work per request, a keyed limiter's
# table under a million keys, the server's memory under a flood of client ids, a config of
# 30,000 routes), the table, and docs/figures/bench.json (size.json comes from `size`).
# Several minutes, builds included (bench.json's `run.minutes` says how many); not part of
# `make test`.
.PHONY: bench
bench: setup-test site size cli
	@mkdir -p target/bench
	@date +%s > target/bench/started
	$(CARGO) bench --locked --bench decisions --bench keyed
	$(CARGO) bench --locked -p trickle-redis --bench load
	$(CARGO) bench --locked -p trickle-redis --features cluster --bench spread
	$(CARGO) bench --locked -p trickle-tower --features redis --bench http_load
	$(CARGO) run --locked --release --example heap_per_key > target/bench/bytes-per-key.csv
	@cat target/bench/bytes-per-key.csv
	$(CARGO) run --locked --release --example keyed_load > target/bench/keyed-load.csv
	@cat target/bench/keyed-load.csv
	$(CARGO) run --locked --release --example key_memory > target/bench/key-memory.csv
	@node scripts/figures.mjs record-csv keymemory "make bench" target/bench/key-memory.csv
	$(CARGO) run --locked --release -p trickle-tower --example layer_cost -- --json target/bench/layer-cost.json
	$(CARGO) test --locked --release -p trickle-cli --test attacks -- --ignored --exact rss_under_a_flood_of_distinct_client_ids --nocapture
	node scripts/hostile-connections.mjs --routes-only --json target/bench/routes.json target/release/trickle
	node benches/wasm-hit.mjs
	node benches/widget-frames.mjs
	node benches/time-to-interactive.mjs
	@date +%s > target/bench/finished
	@node benches/report.mjs --json
