# The two commands a newcomer needs (see README.md):
#   make demo   set up and run the whole offline pipeline (ERP -> questions -> scripted agent -> rules judge -> report)
#   make test   set up and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test setup lint

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

test: setup
	$(BIN)/python -m pytest -q -rs

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
