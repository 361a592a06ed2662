# The two commands a newcomer needs (see README.md):
#   make demo   set up and run the whole offline pipeline (ERP -> questions -> scripted agent -> rules judge -> report)
#   make test   set up and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow setup lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall only when pyproject.toml changes, so a second `make demo` starts at once.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev,inspect,ray]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/ledgerbench

# Three workers on two cores: many tests wait on servers and subprocesses, so a third keeps both busy.
# Whole files go to one worker, so module fixtures (generated ERPs and question sets) are built once.
test: setup
	$(BIN)/python -m pytest -q -rs -n 3 --dist loadfile

# The slow tier (a real Ray cluster, headless Chromium sessions, the whole demo twice): CI runs it after
# `make test`.
test-slow: setup
	$(BIN)/python -m pytest -q -rs -n 2 --dist worksteal --runslow -m "slow or browser"

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
