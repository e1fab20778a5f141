# engram: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.engram-stamp
# The Claude Code CLI for the end-to-end tests. Its package.json lives here, not at the root:
# Claude Code runs `npm install` for a plugin whose root has a package.json.
CLAUDE_CLI := tests/claude-cli
CLAUDE := $(CLAUDE_CLI)/node_modules/.bin/claude

.PHONY: setup bytecode chromium faketime demo lint test test-fast bench bench-quick stress config-docs clean

setup: $(STAMP) $(CLAUDE) chromium faketime bytecode

# engram's own bytecode, written once here: every daemon, server and hook process imports ~90 of
# its modules, and compiling them from source took ~0.16 s of each start where bytecode is not
# written at run time (PYTHONDONTWRITEBYTECODE, a read-only checkout). Incremental: only what changed.
bytecode: $(STAMP)
	$(PY) -m compileall -q engram_mcp

# The browser tests of `engram ui` (tests/test_ui.py) drive Debian's headless Chromium through its
# chromedriver (never a downloaded one); installed as root when missing, skipped when present.
chromium:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	else echo "make setup: install chromium and chromium-driver (as root: apt-get install chromium chromium-driver) for tests/test_ui.py"; fi

# The month replay (bench/month, tests/test_month_replay.py) puts engram's processes on a simulated
# calendar with Debian's libfaketime (LD_PRELOAD); installed as root when missing, like chromium.
faketime:
	@if [ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ] || [ -e /usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1 ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends libfaketime faketime; \
	else echo "make setup: install libfaketime (as root: apt-get install libfaketime faketime) for bench/month"; fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,bench]'
	cp pyproject.toml $(STAMP)

$(CLAUDE): $(CLAUDE_CLI)/package-lock.json
	npm ci --prefix $(CLAUDE_CLI) --no-audit --no-fund --loglevel=error
	touch $@

demo: $(STAMP)
	$(PY) scripts/demo.py

# The package's declared shape: lint and format (ruff), types (mypy) and layers (import-linter contracts),
# all configured in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check engram_mcp
	$(VENV)/bin/ruff format --check engram_mcp
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

# The README's configuration reference, generated from engram_mcp/core/config_keys.py.
config-docs: $(STAMP)
	$(PY) -m engram_mcp.core.config_reference --write README.md

test: setup lint
	$(PY) -m pytest -q -p no:cacheprovider

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow and not claude"

# Every benchmark, one report: bench/results/<UTC>/report.md (+ report.json, plots, each part's
# results). ~20 min on 2 cores; bench-quick (~5-10 min) only checks that it all still runs.
bench: setup
	$(PY) bench/run_all.py

bench-quick: setup
	$(PY) bench/run_all.py --quick

# The reliability suite at full scale (issue 6): 5,000 concurrent operations, 62 kill -9s,
# 1,000 generated inputs per tool (~15-20 min on 2 cores). Its CI-sized run is part of `make test`.
stress: $(STAMP)
	RELIABILITY_STRESS=1 $(PY) -m pytest -q -p no:cacheprovider --basetemp="$${TMPDIR:-/tmp}/engram-stress" tests/reliability

clean:
	rm -rf $(VENV) $(CLAUDE_CLI)/node_modules .pytest_cache bench/results
