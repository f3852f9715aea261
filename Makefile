# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint bench screenshots clean

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

test: $(STAMP)
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy --strict

# The pictures in docs/screenshots.md, made by the browser tests (real Chromium).
screenshots: $(STAMP)
	PHARAON_SCREENSHOTS_DIR=docs/screenshots $(BIN)/pytest -q -p no:randomly tests/browser

bench: $(STAMP)
	@for script in benchmarks/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
