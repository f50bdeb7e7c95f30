# slfs: set-up, demo, tests. `bash .ci/setup` does what `make setup` does, for machines without make.
VENV ?= .venv
BIN := $(VENV)/bin
# The suite runs in parallel: its end-to-end tests mostly wait (on mounts, viewers, programs). On a
# 2-core machine 3 workers took 463 s, 4 took 404 s and 5 took 394 s; with 2,606 tests, the whole
# .ci/run took 485 s with 4 and 460 s with 5 (tests/README.md). A module's tests stay on one worker
# (--dist loadfile): they share the module's mounts. Files go out slowest first (tests/support/order.py,
# SLOWEST_FILES; --no-loadscope-reorder keeps that order). PYTEST_WORKERS=0 runs serially.
# --durations: the slowest tests are printed, so a run shows where its time goes.
PYTEST_WORKERS ?= 5
PYTEST := $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --max-worker-restart=0 --durations=25
export SLFS_VENV := $(abspath $(VENV))
# The suite starts a Python process for every daemon, CLI verb and MCP server a test runs, and 5 workers that each
# collect every test module: with PYTHONDONTWRITEBYTECODE set (some machines' default), each of them
# compiled slfs/ and rewrote the tests from source again (0.1 s a daemon, 5 s a worker's collection).
# The tests' runs write __pycache__ (git ignores it); slfs/ is compiled once before they start.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup demo test lint typecheck pytest bench docs clean

# Debian packages that are missing (as root or with sudo), then $(VENV) with `pip install -e '.[test]'`.
setup:
	@bash .ci/setup

# The built-in simulated viewer and its sample world, mounted at ~/slfs-demo (Ctrl-C unmounts).
demo: setup
	$(BIN)/slfs demo

# ruff + mypy + the whole test suite. Runs all three and fails if any failed. `.ci/run` runs this.
test: setup
	@rc=0; \
	echo "==> ruff check slfs tests"; $(BIN)/ruff check slfs tests || rc=1; \
	echo "==> mypy slfs"; $(BIN)/mypy slfs || rc=1; \
	echo "==> pytest -q -n $(PYTEST_WORKERS)"; $(BIN)/python -m compileall -q slfs; $(PYTEST) || rc=1; \
	exit $$rc

lint: setup
	$(BIN)/ruff check slfs tests
	$(BIN)/mypy slfs

typecheck: setup
	$(BIN)/mypy slfs

pytest: setup
	$(BIN)/python -m compileall -q slfs
	$(PYTEST)

# Benchmark scripts (not tests): each prints its figures; bench_scale.py last, with the outside
# harness's three figures and their targets.
bench: setup
	@set -e; found=0; for f in tests/bench/*.py; do \
		[ -e "$$f" ] || continue; [ "$$f" = tests/bench/bench_scale.py ] && continue; \
		found=1; echo "==> $$f"; $(BIN)/python "$$f"; \
	done; [ $$found = 1 ] || echo "no benchmarks under tests/bench/"; \
	echo "==> tests/bench/bench_scale.py"; $(BIN)/python tests/bench/bench_scale.py

# What is generated from the code: the option lists of README.md and man/slfs.1 (from the options
# table) and the shells' completions (from the parser). tests/test_docs.py and
# tests/unit/test_option_docs.py fail when these are stale.
docs: setup
	$(BIN)/python -m slfs.cli.option_docs
	$(BIN)/slfs completion bash > contrib/completion/slfs.bash
	$(BIN)/slfs completion zsh > contrib/completion/_slfs
	$(BIN)/slfs completion fish > contrib/completion/slfs.fish

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
