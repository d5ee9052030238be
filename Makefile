# Two entry points for a new user: `make demo` and `make test`.
# Each creates .venv (once per change of pyproject.toml) and installs wheelwise into it.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DEMO   := examples/demo_gpu-1.0-variants.json

.PHONY: demo test lint bench clean

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
	@echo "== $(DEMO) on an example machine: RTX 3080 (sm 8.6), CUDA driver 12.8"
	$(BIN)/wheelwise select $(DEMO) --system examples/machines/rtx3080-driver12.8.json
	@echo "== the same package on a GTX 1080 Ti (sm 6.1): only the build listing 60_real fits"
	$(BIN)/wheelwise select $(DEMO) --system examples/machines/gtx1080ti-driver12.8.json
	@echo "== this machine, as detected"
	$(BIN)/wheelwise detect
	$(BIN)/wheelwise select $(DEMO)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

bench: $(VENV)/.installed-test
	$(BIN)/python bench/ordering.py
	$(BIN)/python bench/detect.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
