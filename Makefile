# The README's two commands: `make run` and `make test`. Both install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PIP := $(BIN)/python -m pip --quiet --disable-pip-version-check
# Every package `make install` puts in .venv (runtime and dev, transitive too), with hashes.
LOCK := requirements/lock.txt

.PHONY: install lock test test-unit test-repeat test-windows test-clients test-web soak lint run bench clean

install: $(STAMP)

# Reinstall only when the lock, the project definition or these steps change; otherwise a
# no-op. The lock brings every dependency (hash-checked); the project itself adds none.
# The project is installed editable in setuptools' "compat" mode: a plain path in a .pth
# file, where the default mode imports a finder (pathlib, re, fnmatch) into every Python
# process the venv starts, 15 ms each; its notice that the mode is transitional is muted.
# uv comes first (pip installs it, hash-checked, from its lines in the lock), then installs the
# lock on both cores, bytecode compiled as pip would (processes the tests start must not
# compile their imports again): with uv's cache empty, 50 s -> 35 s on this machine shared
# (load 5). uv reads its own configuration (UV_INDEX_URL, uv.toml), not pip's: where only a
# pip mirror answers, pip installs the lock instead.
UV := $(BIN)/uv
UV_INTO := --quiet --python $(BIN)/python
UV_LOCK := build/uv-lock.txt
$(STAMP): $(LOCK) pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	mkdir -p build && awk '/^uv==/ {keep = 1} keep {print} keep && !/\\$$/ {exit}' $(LOCK) > $(UV_LOCK)
	$(PIP) install --require-hashes -r $(UV_LOCK)
	$(UV) pip install $(UV_INTO) --compile-bytecode --require-hashes -r $(LOCK) || $(PIP) install --require-hashes -r $(LOCK)
	$(UV) pip install $(UV_INTO) --compile-bytecode pip==26.3
	PYTHONWARNINGS=ignore $(UV) pip install $(UV_INTO) --compile-bytecode --no-deps -e . --config-settings editable_mode=compat
	$(UV) pip check $(UV_INTO)
	touch $(STAMP)

# Re-resolve the lock from pyproject.toml with uv (pinned in the dev extra, so it comes from
# the current lock). Pins already in the lock are kept unless pyproject.toml needs others;
# `make lock LOCK_FLAGS=--upgrade` moves every transitive pin to its newest release.
LOCK_FLAGS ?=
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --require-hashes -r $(LOCK)
	$(BIN)/uv pip compile --quiet --no-config --index-url https://pypi.org/simple \
		--universal --python-version 3.11 --generate-hashes --extra dev \
		--custom-compile-command "make lock" $(LOCK_FLAGS) pyproject.toml -o $(LOCK)

# The tests start the CLI as a subprocess hundreds of times, with PYTHONDONTWRITEBYTECODE
# set (here and in the tests): compiling our modules once up front saves ~0.3 s of CPU each.
COMPILE := $(BIN)/python -m compileall -q artifactize

# Parallel, one test file per worker at a time (module fixtures are built once), the longest
# files first (tests/conftest.py). Four workers on two cores: the tests wait on processes,
# servers and sleeps a fifth of the time, which a third and fourth worker fill (measured:
# 5:19 with two, 5:02 with three, 4:53 with four). Every worker collects every test module,
# and pytest rewrites their asserts on the way: 10 s per worker, unless the rewritten
# modules are cached, which PYTHONDONTWRITEBYTECODE (set on this kind of machine) forbids.
# So pytest runs without it, and a collection first writes the cache the workers read.
# From a fresh clone, `make test` (install included) took 4:25, pytest 3:43 of it; later the
# same day, with uv's cache empty and the machine idle, 3:58 and 3:54 (install 13 s, pytest
# 3:34-3:37, 395-405 s of CPU; 5,469 tests), after the install moved to uv, the collection
# cache was written in two halves, and the tour and installed-tool tests stopped compiling
# every module again (the tour's tool caches its bytecode; pip into the test venv is pip 26).
# 2026-12-06, 5,298 tests, the machine shared (load 8 to 20): pytest 17:10 and 520 s of CPU
# before the order was kept and the web and prune CLI calls ran in process; 7:27 and 444 s
# after, the four workers ending within 6 s of each other. 444 s of CPU is 3:42 on two cores.
TEST_PATHS := tests/unit tests/integration tests/contract tests/windows
TEST_WORKERS ?= 4
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
# Whole files, in the order tests/conftest.py gives them: without --no-loadscope-reorder,
# xdist hands out the files with the most tests first, whatever the collection order.
LOADFILE := --dist loadfile --no-loadscope-reorder
# The store tests start their own PostgreSQL server: .ci/ensure-postgresql installs it where
# missing.
test: install
	bash .ci/ensure-postgresql
	$(COMPILE)
	# the cache written in two halves at once, one per core (11.5 s of CPU in one process)
	($(PYTEST) --collect-only -q tests/integration >/dev/null & \
	 $(PYTEST) --collect-only -q $(filter-out tests/integration,$(TEST_PATHS)) >/dev/null; \
	 wait) || true  # a failure shows in the run
	$(PYTEST) -n $(TEST_WORKERS) $(LOADFILE) $(TEST_PATHS)

# The unit tests alone (no process, no server, no network: tests/unit/conftest.py refuses a
# process), on both cores; the quick loop while editing the domain. `make test` runs them too.
test-unit: install
	$(COMPILE)
	$(PYTEST) -n 2 tests/unit

# The session, process and state suites, five times in a row; every round must pass.
REPEAT_TESTS := tests/integration/test_tool_sessions.py tests/integration/test_session_adapters.py \
	tests/integration/test_review_sessions.py tests/integration/test_posix_process.py \
	tests/integration/test_sqlite_state.py tests/integration/test_state_contract.py \
	tests/unit/test_sessions_domain.py tests/contract/test_session_contract.py \
	tests/contract/test_process_runner_contract.py
test-repeat: install
	bash .ci/ensure-postgresql
	$(COMPILE)
	for round in 1 2 3 4 5; do \
		echo "test-repeat: round $$round of 5"; \
		$(BIN)/python -m pytest -n auto $(LOADFILE) $(REPEAT_TESTS) || exit 1; \
	done

# The hostile and fault suites (tests/integration/hostile and tests/integration/faults, part
# of `make test` at CI counts) at ten times their counts, outside CI; then each check's
# trials and failures.
SOAK_COUNTS := build/soak-counts.jsonl
soak: install
	$(COMPILE)
	mkdir -p build && rm -f $(SOAK_COUNTS)
	HOSTILE_SCALE=10 HOSTILE_COUNTS_FILE=$(CURDIR)/$(SOAK_COUNTS) \
		$(BIN)/python -m pytest -n auto $(LOADFILE) tests/integration/hostile tests/integration/faults; \
		status=$$?; $(BIN)/python -m tests.support.soak_report $(SOAK_COUNTS) && exit $$status

# `artifactize mcp` driven by MCP clients that are not ours, from npm (the MCP Inspector and
# Claude Code, pinned, installed into build/npm on first use: about 350 MB), as docs/mcp.md
# configures them; and the coding-agent backends and the control surface with the real
# Claude Code and Codex CLIs against the fake provider (docs/agents.md). Kept out of
# `make test` for that download; .ci/run runs it.
test-clients: install
	$(COMPILE)
	$(BIN)/python -m pytest -n auto $(LOADFILE) tests/clients

# `artifactize web` in a real browser: Playwright for Python driving Debian's Chromium
# (.ci/ensure-chromium installs it where missing; Playwright's own download is not used).
# Its own lane, not `make test`: one browser start costs more than the rest of a test file.
# The screenshots in docs/web.md are written by these tests.
test-web: install
	bash .ci/ensure-chromium
	$(COMPILE)
	$(PYTEST) -p no:xdist tests/browser

# The contract tests and the Windows adapters' tests on Windows CPython under Wine (wine64 is
# installed from Debian's packages when missing); see tests/windows/lane.py and docs/windows.md.
PYTEST_ARGS ?=
test-windows: install
	$(BIN)/python tests/windows/lane.py $(PYTEST_ARGS)

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
	$(BIN)/python bench/section.py
	$(BIN)/python bench/commands.py
	$(BIN)/python bench/reviews.py
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/model_turns.py
	$(BIN)/python bench/sdk_backends.py
	bash .ci/ensure-postgresql
	$(BIN)/python bench/store.py
	$(BIN)/python bench/scheduling.py
	$(BIN)/python bench/process_run.py
	$(BIN)/python bench/mcp.py
	$(BIN)/python bench/web.py
	$(BIN)/python bench/state_check.py
	$(BIN)/python bench/documents.py
	# 10,000 Artifacts: the fill alone (10,454 runtime evals) takes well over 3 minutes, so
	# it runs by hand: `python bench/scale.py --sizes 1000,10000 --runs 1` (bench/README.md).
	$(BIN)/python bench/scale.py --sizes 100,1000

clean:
	rm -rf $(VENV) build *.egg-info
