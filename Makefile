# The README's two commands are `make run` and `make test`; each installs what it needs first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8501
# Four pytest-xdist workers, whatever the cores: the suite waits on servers, browsers and deadlines as much as it
# computes, so on two cores four workers keep both busy (a quiet 2-core VM: 472 s with four, 527-560 s with two);
# pyproject.toml's addopts set how work is shared out.
PYTEST_ARGS ?= -n 4

.PHONY: run test coverage lint docs deps venv bench engine bench-engine peers clean

$(STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,bench,docs]'
	touch $(STAMP)

venv: $(STAMP)

## System packages the tests use: Debian's Chromium (real browser) and PostgreSQL (real server).
deps:
	bash scripts/install-system-deps.sh

## Install everything, then start the dashboard (with the worker and the built-in simulated endpoint).
run: venv
	$(BIN)/ttft-planner serve --port $(PORT)

## The lint and type gate (run by `make test` before pytest): ruff (pyflakes, bugbear, pyupgrade, import order,
## line length) on the whole tree and mypy on planner/ and app/ (strict for planner.probes, .store and .worker), both
## configured in pyproject.toml. Never rewrites a source file. mypy names modules after folders, and app/ installs as
## the package ttft_planner_app (setup.py), so mypy reads it through a link by that name in build/mypy-path (git-ignored,
## the mypy_path in pyproject.toml), made here.
MYPY_LINK := build/mypy-path/ttft_planner_app
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	mkdir -p $(dir $(MYPY_LINK)) && ln -sfn ../../app $(MYPY_LINK)
	$(BIN)/mypy

## The manual (docs/, mkdocs.yml), built in strict mode into build/site/: a broken link or anchor, or a page missing
## from the nav, fails the build (run by `make test` after lint). Open build/site/index.html, or `mkdocs serve`.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

## Install everything, then lint, then build the manual, then run the whole test suite (unit, store on SQLite +
## PostgreSQL, AppTest, browser).
test: deps venv lint docs
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## Line coverage of planner/ over the whole suite (in-process code; a child process is not traced).
coverage: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS) --cov=planner --cov-report=term:skip-covered

## Benchmarks: print figures side by side with their baselines (not part of the tests).
bench: venv
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

## A real engine for benchmarks (not for the tests): llama.cpp's server + Gemma 3 270M into .engine/ (once, ~20 min).
engine:
	bash scripts/setup-engine.sh

## The peer load generators the benchmarks run beside our probe: AIPerf and GuideLLM, each in its own venv under
## .peers/ (once, 5–20 min each; TTFT_PEERS_DIR elsewhere). Benchmarks print "skipped" for a peer that is absent.
peers:
	bash scripts/setup-peers.sh

## Benchmarks against that engine, pinned to one core (docs/benchmarks.md, "Measured against llama.cpp").
bench-engine: venv engine
	$(BIN)/python bench/bench_engine.py
	$(BIN)/python bench/bench_engine_whatif.py --engine

clean:
	rm -rf $(VENV) .pytest_cache test-artifacts
