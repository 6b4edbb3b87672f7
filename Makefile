# ikigai — `make run` starts it, `make test` runs everything CI runs.
CARGO   ?= cargo
PREFIX  ?= /usr/local
DESTDIR ?=
ARGS    ?=

.PHONY: build run test deps bench install clean

build:
	$(CARGO) build --release

run: build
	./target/release/ikigai $(ARGS)

# Installs what the build and tests need when missing (PostgreSQL server binaries, tmux,
# cmake and clang/libclang for llama.cpp) and fetches the local engine's test model once.
deps:
	@bash scripts/test-deps.sh

test: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	@bash scripts/run-tests.sh

bench: deps
	$(CARGO) build --release
	$(CARGO) bench
	@bash scripts/bench-process.sh
	@bash scripts/bench-compare.sh

install: build
	install -Dm755 target/release/ikigai $(DESTDIR)$(PREFIX)/bin/ikigai

clean:
	$(CARGO) clean
