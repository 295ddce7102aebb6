# The two commands a newcomer needs: `make demo` and `make test`. Each installs what it uses.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.landed-installed
# import-linter reads a package from one folder; workflows/ and activities/ install as
# landed.workflows and landed.activities, so the contracts run on a copy laid out that way.
LAYERS := build/import-graph

.PHONY: demo test test-fast lint layers typecheck pytest bench install clean

$(STAMP): pyproject.toml setup.py src/landed/util/_dupscan.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/landed demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

layers: $(STAMP)
	@rm -rf $(LAYERS) && mkdir -p $(LAYERS)
	@cp -r src/landed $(LAYERS)/landed
	@cp -r workflows $(LAYERS)/landed/workflows
	@cp -r activities $(LAYERS)/landed/activities
	cd $(LAYERS) && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --no-cache $(CURDIR)/.importlinter

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP)
	$(VENV)/bin/pytest

test: lint layers typecheck pytest

# The inner loop: everything that starts no Temporal server and no role processes.
test-fast: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -m "not slow" -q

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) build dist .landed .pytest_cache .mypy_cache .ruff_cache
