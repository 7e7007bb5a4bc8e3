# Two commands do everything on a fresh machine: `make demo` (a demo campaign) and `make test`.
# Both create .venv on first use; set-up re-runs only when pyproject.toml changes.
PYTHON ?= python3
VENV ?= .venv
TORCH_INDEX ?=
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint setup

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned: a bare `torch` requirement would pull a multi-GB CUDA build on CPU machines. From the
	# public index torch==2.13.0 is that CUDA build too: TORCH_INDEX=https://download.pytorch.org/whl/cpu gets the CPU one.
	$(BIN)/pip install -q torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/arcengine run rmsnorm --agents 3 --budget 24

test: $(STAMP)
	$(BIN)/ruff check arcengine tui tests bench
	# One worker per core: most tests wait on guard children, which use one core each. loadgroup hands tests out
	# one at a time (the heavy ones, first, alternate between workers) and keeps each xdist_group on one worker.
	# The slowest 25 are listed at the end: where CI's time goes.
	$(BIN)/python -m pytest -q -n auto --dist loadgroup --durations=25

lint: $(STAMP)
	$(BIN)/ruff check arcengine tui tests bench
