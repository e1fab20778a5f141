# engram: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.engram-stamp

.PHONY: setup demo test test-fast bench bench-quick stress clean

setup: $(STAMP) node_modules/.bin/claude

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,bench]'
	cp pyproject.toml $(STAMP)

node_modules/.bin/claude: package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

demo: $(STAMP)
	$(PY) scripts/demo.py

test: setup
	$(PY) -m pytest -q -p no:cacheprovider

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not claude"

bench: $(STAMP)
	$(PY) bench/locomo_bench.py

bench-quick: $(STAMP)
	$(PY) bench/locomo_bench.py --quick

clean:
	rm -rf $(VENV) node_modules .pytest_cache bench/results
