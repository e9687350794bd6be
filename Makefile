# The README's two commands: `make run` and `make test`. Both install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install test lint run bench clean

install: $(STAMP)

# Reinstall only when the project definition changes; otherwise this is a no-op.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip==26.3
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

test: install
	$(BIN)/python -m pytest tests/unit tests/integration

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# calc-tests' runtime eval needs no API key: the second verify reuses the first one's
# verdicts. State goes to build/state, outside the reviewed example.
run: install
	$(BIN)/artifactize --repo examples/handbook config check
	$(BIN)/artifactize --repo examples/handbook config graph
	$(BIN)/artifactize --repo examples/handbook --state-dir build/state verify calc-tests
	$(BIN)/artifactize --repo examples/handbook --state-dir build/state verify calc-tests
	$(BIN)/artifactize --repo examples/handbook --state-dir build/state cache list

bench: install
	$(BIN)/python bench/discovery.py
	$(BIN)/python bench/builtins.py
	$(BIN)/python bench/commands.py
	$(BIN)/python bench/reviews.py

clean:
	rm -rf $(VENV) build *.egg-info
