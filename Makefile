# The two commands of the README's quick start are `make demo` and `make test`; both set up
# what is missing first, so they work on a fresh machine. Every step is idempotent.

CARGO ?= cargo
LIMIT ?= 6/8s
ALGORITHM ?= floating
EXAMPLE ?= examples/esi-burst.csv

.PHONY: all setup build demo test fmt lint unit doc

all: build

# The Rust toolchain comes with the machine (rustup); its lint and format tools may not.
setup:
	@rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
	@rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt

build: setup
	$(CARGO) build --release --locked

# Until the docs widget lands, the demo replays an example request log against a limit:
# a client that fires too fast, meets 429s, waits out Retry-After and recovers.
demo: build
	@echo "Replaying $(EXAMPLE) against $(LIMIT) ($(ALGORITHM)):"
	@./target/release/trickle replay --limit $(LIMIT) --algorithm $(ALGORITHM) $(EXAMPLE) \
		> target/demo.csv 2> target/demo.summary || { cat target/demo.summary >&2; exit 1; }
	@if command -v column >/dev/null; then column -s, -t < target/demo.csv; else cat target/demo.csv; fi
	@cat target/demo.summary
	@echo "Try another: make demo LIMIT=150/15m ALGORITHM=sliding-log EXAMPLE=your-log.csv"

test: setup fmt lint unit doc

fmt:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --all-targets -- -D warnings

# Unit, integration, CLI and doc tests.
unit:
	$(CARGO) test --locked

# The API docs build without a broken link or a warning.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --no-deps
