# ikigai — `make run` starts it, `make test` runs everything CI runs.
CARGO   ?= cargo
PREFIX  ?= /usr/local
DESTDIR ?=
ARGS    ?=

.PHONY: build build-deps run test deps bench eval install install-files uninstall clean

# PREFIX is compiled in: the system tool folder is PREFIX/libexec/ikigai (a libexec/ikigai
# beside the binary's folder, <bin>/../libexec/ikigai, is used first).
build: build-deps
	IKIGAI_PREFIX=$(PREFIX) $(CARGO) build --release

# Installs what building needs when missing (cmake and clang/libclang for llama.cpp).
build-deps:
	@bash scripts/test-deps.sh --build

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
	@bash scripts/bench-acp.sh
	@bash scripts/bench-compare.sh
	@bash scripts/bench-long-session.sh
	@bash scripts/bench-reexec.sh
	@bash scripts/bench-checkpoints.sh

# The small-model suite (evals/questions, evals/coding) with the local model EVAL_MODEL
# (0.5b, the default, or 1.5b): native tool calls and the text protocol through
# llama-server, the in-process engine, and the model alone (the floor), with a table per
# mode. Without EVAL_URL the harness starts llama-server itself (../shared/local-llm, or
# EVAL_LLM_DIR) on a free port and stops it. Minutes to hours, not part of `make test`.
# EVAL_ARGS is passed on, e.g. "--modes text,alone --only 03 --keep".
EVAL_MODEL ?= 0.5b
EVAL_URL ?=
EVAL_ARGS ?=
eval: build
	python3 scripts/eval.py --bin target/release/ikigai --size $(EVAL_MODEL) $(if $(EVAL_URL),--base-url $(EVAL_URL)) $(EVAL_ARGS)

# BIN: the binary to install (the tests install a debug build with `make install-files`);
# LAUNCH: the tool launcher built beside it.
BIN ?= target/release/ikigai
LAUNCH ?= $(dir $(BIN))ikigai-launch

install: build install-files

install-files:
	install -Dm755 $(BIN) $(DESTDIR)$(PREFIX)/bin/ikigai
	install -Dm755 $(LAUNCH) $(DESTDIR)$(PREFIX)/libexec/ikigai-launch
	install -d $(DESTDIR)$(PREFIX)/libexec/ikigai
	install -Dm644 config.example.toml $(DESTDIR)$(PREFIX)/share/doc/ikigai/config.example.toml
	install -d $(DESTDIR)$(PREFIX)/share/doc/ikigai/examples/tools
	install -m755 examples/tools/* $(DESTDIR)$(PREFIX)/share/doc/ikigai/examples/tools/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	$(BIN) man > $(DESTDIR)$(PREFIX)/share/man/man1/ikigai.1
	$(BIN) completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ikigai
	$(BIN) completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_ikigai
	$(BIN) completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/ikigai.fish

# Removes what install put there; tools you added to libexec/ikigai stay (and so does it).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/ikigai $(DESTDIR)$(PREFIX)/libexec/ikigai-launch
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/ikigai
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/ikigai.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ikigai \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_ikigai \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/ikigai.fish
	-rmdir $(DESTDIR)$(PREFIX)/libexec/ikigai 2>/dev/null

clean:
	$(CARGO) clean
