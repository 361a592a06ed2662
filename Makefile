# The two commands a newcomer needs (see README.md):
#   make demo   set up and run the whole offline pipeline (ERP -> questions -> scripted agent -> rules judge -> report)
#   make test   set up and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test setup lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

setup: $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"

demo: setup
	$(BIN)/ledgerbench

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
