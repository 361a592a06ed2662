# The two commands a newcomer needs (see README.md):
#   make demo   set up and run the whole offline pipeline (ERP -> questions -> scripted agent -> rules judge -> viewer -> report)
#   make test   set up and run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check
# uv installs the same packages from the same index as pip, several times faster (a fresh clone's
# demo install: about 15 s instead of 45-65 s). It goes into the venv first; when it cannot be
# had, or its install fails (say, a private index only pip is configured for), pip installs
# instead. `make demo INSTALLER=pip` skips uv. --compile-bytecode, as pip does: where
# PYTHONDONTWRITEBYTECODE is set, modules left uncompiled would be compiled at every start (an
# ERP server's imports then take 2.7 s of CPU instead of 1.2 s).
INSTALLER ?= uv
install = echo "installing $(1) into $(VENV) ($(INSTALLER))"; \
	if [ "$(INSTALLER)" = uv ] && { [ -x $(BIN)/uv ] || $(PIP) uv >/dev/null 2>&1; } \
	&& $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(1); then :; \
	else [ "$(INSTALLER)" = pip ] || echo "uv could not install $(1); installing with pip"; \
	$(PIP) $(1); fi

.PHONY: demo test test-slow setup lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Each target installs only what it needs, again only when pyproject.toml changes (a second
# `make demo` starts at once): the demo needs no model SDK, no test tools, no Inspect, no Ray.
$(VENV)/.installed-demo: pyproject.toml | $(BIN)/python
	@$(call install,-e .)
	touch $@

# The test tools and model SDKs (the tests drive them against local fakes); the tests that need
# Inspect or Ray skip, with the reason, when those extras are missing.
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	@$(call install,-e ".[test]")
	touch $@ $(VENV)/.installed-demo

# Everything, Inspect and Ray included: what engineers and CI (.ci/run) use.
$(VENV)/.installed-all: pyproject.toml | $(BIN)/python
	@$(call install,-e ".[all]")
	touch $@ $(VENV)/.installed-test $(VENV)/.installed-demo

setup: $(VENV)/.installed-all

demo: $(VENV)/.installed-demo
	$(BIN)/ledgerbench

# Three workers on two cores: many tests wait on servers and subprocesses, so a third keeps both busy.
# Whole files go to one worker, so module fixtures (generated ERPs and question sets) are built once.
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -rs -n 3 --dist loadfile

# The slow tier (a real Ray cluster, headless Chromium sessions, the whole demo twice, a real model
# after scripts/install-real-model), with the
# Inspect and Ray extras: CI runs it after `make test`.
test-slow: $(VENV)/.installed-all
	$(BIN)/python -m pytest -q -rs -n 2 --dist worksteal --runslow -m "slow or browser"

lint: $(VENV)/.installed-test
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
