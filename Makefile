# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test check lint bench screenshots clean

# The suite runs on this many processes (pytest-xdist), each with its own databases and ports:
# one more than the cores, so that a core is never idle while a test waits on a browser, a
# server or PostgreSQL (the first run on 2 cores of an Intel Xeon: 339 s with 3 processes, 364 s
# with 2).
JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
# pytest keeps the test modules it rewrites (their assertions) in __pycache__, and writes them
# only where Python may write bytecode: with PYTHONDONTWRITEBYTECODE set, every pytest process
# rewrote every test module again (collecting the suite: 9.3-9.6 s of CPU, against 5.9-6.1 s
# once they are kept; an Intel Xeon).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "pharaon needs Python >= 3.11 (set PYTHON=...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# An editable install leaves no bytecode; where PYTHONDONTWRITEBYTECODE is set, every process compiled the sources.
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m pharaon.pool.precompile
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/pharaon serve --host 127.0.0.1 --port 8000

# Two runs: everything on $(JOBS) processes (the browser tests included), then the tests marked
# `alone` (several servers, clusters, a proxy and deadlines timed against the wall clock) in two
# processes side by side: the two servers of tests/ops/test_servers.py, whose first start makes
# three blocks of 1,000,000 units (its output is shown once both are done), and the others.
SERVERS_LOG := artifacts/alone-servers.log
test: $(STAMP)
	$(PYTEST) -n $(JOBS) --dist worksteal --durations=15 -m "not alone"
	@mkdir -p artifacts
	$(PYTEST) --durations=3 -m alone tests/ops/test_servers.py > $(SERVERS_LOG) 2>&1 & servers=$$!; \
	$(PYTEST) --durations=5 -m alone --ignore=tests/ops/test_servers.py; others=$$?; \
	wait $$servers; alone=$$?; cat $(SERVERS_LOG); exit $$((others || alone))

# The developer's quick loop: lint, types, and the tests that need neither PostgreSQL nor a
# browser, the slow ones (1,000,000-unit blocks, numba's compile) left to `make test`.
check: lint
	$(PYTEST) -q -n $(JOBS) --dist worksteal -m "not postgres and not browser and not slow" --durations=5

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy --strict

# The pictures in docs/screenshots.md, made by the browser tests (real Chromium).
screenshots: $(STAMP)
	PHARAON_SCREENSHOTS_DIR=docs/screenshots $(PYTEST) -q -p no:randomly tests/browser

bench: $(STAMP)
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
