# Two entry points for a new user: `make demo` and `make test`.
# Each creates .venv (once per change of pyproject.toml) and installs wheelwise into it.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The demo wheelhouse: examples/demo-project as variant wheels, and a static index of them.
DEMO_WHEELHOUSE := $(VENV)/demo-wheelhouse
DEMO_SITE       := $(VENV)/demo-site
DEMO_INDEX      := file://$(abspath $(DEMO_SITE))/simple/
DEMO            := $(DEMO_SITE)/files/wheelwise-demo/wheelwise_demo-1.0-variants.json
DEMO_TARGET     := .venv-demo-target
DEMO_LOCK       := $(VENV)/demo-lock
# Bytecode is written and reused: the tests start wheelwise in hundreds of subprocesses,
# and compiling its modules again in each (with PYTHONDONTWRITEBYTECODE set) took about
# 0.4 s of CPU each, and pytest's rewriting of every test module as long again per run.
unexport PYTHONDONTWRITEBYTECODE
# pytest-xdist workers: the tests wait on servers, subprocesses and disks, so one more
# worker than cores pays (2 cores: 3 workers; 2 and 4 were slower, and every worker
# sets up the module-scoped servers and venvs of the modules it runs again).
TEST_WORKERS    ?= 3

.PHONY: demo demo-install test test-fast lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
# Build backends (and their dependencies) for the offline isolated builds in tests/test_build.py.
	$(BIN)/python -m pip download --quiet --only-binary=:all: --dest $(VENV)/wheelhouse setuptools hatchling flit-core wheel
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	@echo "== build the demo wheelhouse from examples/demo-project, and a static index of it"
	$(BIN)/python examples/build_demo_wheelhouse.py $(DEMO_WHEELHOUSE) --site $(DEMO_SITE)
	@echo "== its merged variants on an example machine: RTX 3080 (sm 8.6), CUDA driver 12.8"
	$(BIN)/wheelwise select $(DEMO) --system examples/machines/rtx3080-driver12.8.json
	@echo "== the same package on a GTX 1080 Ti (sm 6.1): only the build listing 60_real fits"
	$(BIN)/wheelwise select $(DEMO) --system examples/machines/gtx1080ti-driver12.8.json
	@echo "== this machine, as detected"
	$(BIN)/wheelwise detect
	$(BIN)/wheelwise select $(DEMO)
	@if $(BIN)/wheelwise install --help >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory demo-install; \
	else \
		echo "== install step skipped: 'wheelwise install --help' fails here:"; \
		$(BIN)/wheelwise install --help 2>&1 | tail -n 1; \
	fi

# Installs the demo package from the demo index into a fresh venv (run by `demo`).
demo-install: $(VENV)/.installed
	rm -rf $(DEMO_TARGET)
	$(BIN)/python -m venv --without-pip $(DEMO_TARGET)
	@echo "== what wheelwise would install into $(DEMO_TARGET) on this machine, and why"
	$(BIN)/wheelwise install --python $(DEMO_TARGET)/bin/python --index-url $(DEMO_INDEX) \
		wheelwise-demo --dry-run
	@echo "== ... and on a GPU machine: RTX 3080 (sm 8.6), CUDA driver 12.8"
	$(BIN)/wheelwise install --python $(DEMO_TARGET)/bin/python --index-url $(DEMO_INDEX) \
		wheelwise-demo --dry-run --system examples/machines/rtx3080-driver12.8.json
	@echo "== install it on this machine, and ask the installed package which build it is"
	$(BIN)/wheelwise install --python $(DEMO_TARGET)/bin/python --index-url $(DEMO_INDEX) \
		wheelwise-demo
	$(DEMO_TARGET)/bin/python -m wheelwise_demo
	@echo "== lock it once, every build listed; then what that one lock installs on a GTX 1080 Ti and on a CPU-only machine"
	mkdir -p $(DEMO_LOCK)
	$(BIN)/wheelwise lock --index-url $(DEMO_INDEX) wheelwise-demo -o $(DEMO_LOCK)/pylock.toml
	$(BIN)/wheelwise install --python $(DEMO_TARGET)/bin/python -r $(DEMO_LOCK)/pylock.toml \
		--dry-run --system examples/machines/gtx1080ti-driver12.8.json
	$(BIN)/wheelwise install --python $(DEMO_TARGET)/bin/python -r $(DEMO_LOCK)/pylock.toml \
		--dry-run --system examples/machines/core2-no-gpu.json

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests bench examples tools
	$(BIN)/ruff format --check src tests bench examples tools
	$(BIN)/mypy

# Every test, as CI runs it (.ci/run).
test: lint
	$(BIN)/pytest -n $(TEST_WORKERS)
# wheelwise/variants/markers.py builds on packaging's private marker grammar, and
# pyproject.toml allows only the tested major: the marker tests also run against the
# newest packaging on the registry, so that a release which breaks them is seen early.
	$(BIN)/python tests/newest_packaging.py
# The tests marked interp (threading, fork, zipfile, tarfile) also run under every other
# Python 3.10+ found (PATH, pyenv), side by side, in venvs kept in .venv/other-pythons;
# it says when there is none.
	$(BIN)/python tests/other_pythons.py

# A developer's loop: the tests that take under a second, with no benchmark smoke run
# (markers in pyproject.toml); no lint, no other Pythons.
test-fast: $(VENV)/.installed-test
	$(BIN)/pytest -n $(TEST_WORKERS) -q -m "not slow and not bench"

bench: $(VENV)/.installed-test
	$(BIN)/python bench/ordering.py
	$(BIN)/python bench/detect.py

clean:
	rm -rf $(VENV) $(DEMO_TARGET) .mypy_cache .ruff_cache .pytest_cache .hypothesis
