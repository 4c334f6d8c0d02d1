# Build and test the book.  `make help` lists the targets.
#
#   make book   create .venv if needed, execute every notebook, write _build/html
#   make test   pytest, then a full strict build (warnings are errors)
#
# VENV can be overridden (e.g. `make test VENV=/path/to/venv`) to reuse an environment.

VENV ?= .venv
PY := $(VENV)/bin/python
JB := $(VENV)/bin/jupyter-book
STAMP := $(VENV)/.installed
BUILD := _build

# Recipes see the venv first on PATH, so the notebooks' python3 kernel is the venv's Python.
export PATH := $(abspath $(VENV))/bin:$(PATH)
# Fail a recipe when any command of a pipeline fails.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c

.DEFAULT_GOAL := help
.PHONY: help install book test pytest strict-build clean sync check-sync bench pdf stress seeds

help: ## List the targets
	@echo "Targets:"
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk 'BEGIN {FS = ":.*## "}; {printf "  make %-13s %s\n", $$1, $$2}'

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -r requirements.txt
	touch $(STAMP)

install: $(STAMP) ## Create .venv (if missing) and install the pinned requirements and gmmlib

book: $(STAMP) ## Execute every notebook and write the HTML to _build/html
	rm -rf $(BUILD)/.doctrees
	$(JB) build .
	@test -f $(BUILD)/html/index.html || { echo "error: $(BUILD)/html/index.html was not written" >&2; exit 1; }
	@echo "Open $(BUILD)/html/index.html"

pytest: $(STAMP) ## Run the test suite only (an empty collection is a failure too)
	@rc=0; $(PY) -m pytest || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

strict-build: $(STAMP) ## Full build from scratch; any warning fails it
	rm -rf $(BUILD)/.doctrees $(BUILD)/html
	$(JB) build . -W -n --keep-going
	@test -f $(BUILD)/html/index.html || { echo "error: $(BUILD)/html/index.html was not written" >&2; exit 1; }

test: $(STAMP) ## pytest, then the strict executed build, then the tests of the built book
	$(MAKE) pytest
	$(MAKE) strict-build
	$(PY) -m pytest --built

pdf: $(STAMP) ## The whole book as one PDF (_build/pdf/book.pdf), printed by the system's Chromium
	$(MAKE) book
	$(PY) scripts/make_pdf.py

bench: $(STAMP) ## Time every chapter in a fresh kernel, and gmmlib's attention and quadrature (writes _build/bench.json)
	$(PY) scripts/bench.py

stress: $(STAMP) ## Execute every chapter 5 times in fresh kernels (2 at a time): stalls, failures, run-time spread (_build/stress.json)
	$(PY) scripts/stress.py --repeat $(or $(REPEAT),5)

seeds: $(STAMP) ## Execute every chapter under GMMLIB_SEED=1..5: chapter × seed table (_build/seeds.md, seeds.json)
	$(PY) scripts/seeds.py

sync: $(STAMP) ## Rewrite the notebooks' setup cells from repository.url/branch in _config.yml
	$(PY) scripts/sync_setup_cells.py

check-sync: $(STAMP) ## Exit non-zero if a notebook's setup cell is not the canonical one
	$(PY) scripts/sync_setup_cells.py --check

clean: ## Remove the build output (keeps .venv)
	rm -rf $(BUILD) .pytest_cache .hypothesis
	find . -path ./.venv -prune -o -path ./.git -prune -o \
	  \( -name __pycache__ -o -name .ipynb_checkpoints \) -type d -exec rm -rf {} +
