# edgeproxy: two commands for users (run, test), a few for developers.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: run test lint typecheck unit bench bench-smoke clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

## Start a working gateway on http://127.0.0.1:8080 (embedded DynamoDB + two mock upstreams).
run: $(STAMP)
	$(BIN)/python infra/run_local.py --port 8080 --config infra/config.example.yaml

## Lint, type-check and run every test.
test: $(STAMP)
	$(BIN)/ruff check shared functions tests infra bench
	$(BIN)/ruff format --check shared functions tests infra bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check shared functions tests infra bench
	$(BIN)/ruff format --check shared functions tests infra bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

bench: $(STAMP)
	$(BIN)/python bench/run.py

bench-smoke: $(STAMP)
	$(BIN)/python bench/run.py --smoke

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
