# Two commands on a fresh Debian/Ubuntu machine with Python 3.11+:
#   make demo   - set up .venv with the notebook extras and open JupyterLab on notebooks/
#   make test   - set up .venv with the test tools, then lint, type-check, build the docs
#                 and the lite site, and run every test, notebook and browser test
#   make check  - the fast inner loop: lint, types and the tests that start no process,
#                 server, kernel or browser (under 90 s on 2 cores)
#   make docs   - (optional) build the documentation site offline into docs/_build/html
#   make lite   - (optional) build the course as a JupyterLite site into docs/_build/lite:
#                 Python in the browser, served by any static web server, nothing fetched;
#                 make lite-check builds it and runs its tests (Node, then Chromium)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
ROOT   := $(shell id -u)
# Bytecode is cached, under .venv, even where the environment asks Python not to write it
# (PYTHONDONTWRITEBYTECODE=1, as on our CI machines): otherwise every process make test
# starts (three workers collecting 4,000 tests, the CLI and worker subprocesses, kernels,
# JupyterLab, Sphinx) compiles each module it imports from source again. Collecting the
# suite takes 24 s without the cache and 6 s with it. Nothing is written into the sources.
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX := $(abspath $(VENV))/pycache
# pytest-xdist workers: the tests spend much of their time waiting on processes, servers,
# kernels and fsync, so more workers than cores keep both cores busy. make test's session
# here: 9 min 12 s on two workers, 7 min 47 s on three, 8 min 34 s on four (each worker
# collects the suite: 21 s on three, 37 s on four).
JOBS   ?= 3

.PHONY: demo test check docs lite lite-check lint unit suite parity nbval soak notebooks bench system-deps test-system-deps postgres-server clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

$(VENV)/.notebook: pyproject.toml | $(PY)
	$(PIP) install -e ".[notebook]"
	touch $@

# --no-compile: pip compiles every installed module one after the other (24 s of 75 s here),
# most of them never imported by the tests; Python compiles what is imported, once.
$(VENV)/.dev: pyproject.toml | $(PY)
	$(PIP) install --no-compile -e ".[dev]"
	touch $@ $(VENV)/.notebook $(VENV)/.lite

# System packages, installed with apt-get when we are root; otherwise we say what to
# install. Graphviz's `dot` draws the diagrams (they fall back to text without it);
# make test also needs Chromium, which the browser tests drive.
APT_GET = DEBIAN_FRONTEND=noninteractive apt-get install -y -qq

system-deps:
	@if ! command -v dot >/dev/null 2>&1; then \
	  if [ "$(ROOT)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Graphviz with apt-get"; \
	    apt-get update -qq && $(APT_GET) graphviz >/dev/null; \
	  else \
	    echo "NOTE: Graphviz is not installed; run 'sudo apt-get install graphviz' for diagrams."; \
	  fi; \
	fi

# PostgreSQL's server binaries: the tests and bench/bench_postgres.py start a throwaway
# cluster of their own (agentnb.testing.throwaway_postgres); nothing is configured system-wide.
postgres-server:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then \
	  if [ "$(ROOT)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing PostgreSQL with apt-get (for the PostgreSQL tests)"; \
	    apt-get update -qq && $(APT_GET) postgresql >/dev/null; \
	  else \
	    echo "NOTE: PostgreSQL is not installed; the PostgreSQL tests need it:"; \
	    echo "      sudo apt-get install postgresql"; \
	  fi; \
	fi

test-system-deps: system-deps postgres-server
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$(ROOT)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Chromium with apt-get (for the browser tests)"; \
	    apt-get update -qq && $(APT_GET) chromium >/dev/null; \
	  else \
	    echo "NOTE: Chromium is not installed; the browser tests need it:"; \
	    echo "      sudo apt-get install chromium"; \
	  fi; \
	fi

demo: $(VENV)/.notebook system-deps
	@if ls notebooks/*.ipynb >/dev/null 2>&1; then \
	  $(VENV)/bin/jupyter lab --notebook-dir=notebooks --ip=127.0.0.1 \
	    $$( [ "$(ROOT)" = "0" ] && echo --allow-root ); \
	else \
	  $(VENV)/bin/agentnb demo; \
	fi

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check agentnb tests bench
	$(VENV)/bin/ruff format --check agentnb tests bench
	$(VENV)/bin/mypy agentnb

# The tests, browser tests included (marked browser: they need /usr/bin/chromium). A
# browser module's tests stay on one worker (--dist loadgroup; tests/conftest.py groups
# them): they share its page. The lite site's tests (marked lite) run in make lite-check, which builds the site.
unit: $(VENV)/.dev test-system-deps
	$(PY) -m pytest -m "not lite" -n $(JOBS) --dist loadgroup --durations=20

# The differential suite against LangGraph on 5,000 generated graphs (make test runs 300);
# it prints the agreement figure. The graphs are 20 test items of 250, each with its own
# seed, spread over the workers; AGENTNB_PARITY_SEED=N draws another 5,000.
parity: $(VENV)/.dev
	AGENTNB_PARITY_EXAMPLES=5000 $(PY) -m pytest -p no:cacheprovider -q -n $(JOBS) \
	  --durations=5 tests/graph/test_langgraph_parity.py

# The notebooks' committed outputs, compared after sanitising ids, times and paths; the
# worked solutions too, so every exercise's check is seen passing. Each notebook runs on one
# worker (its cells in order, in one kernel). No kernel may reach the network
# (tests/offline.py fails a cell whose code tried, even if it caught the error). Notebook 08
# starts a throwaway PostgreSQL server (unless AGENTNB_POSTGRES_DSN names one): postgres-server.
NBVAL     := -p tests.offline --nbval --nbval-sanitize-with notebooks/sanitize.cfg
NOTEBOOKS := notebooks/*.ipynb notebooks/solutions/*.ipynb
nbval: $(VENV)/.dev system-deps postgres-server
	$(PY) -m pytest -p no:cacheprovider -n $(JOBS) --dist loadfile $(NBVAL) $(NOTEBOOKS)

# make test runs unit and nbval as one pytest session: the workers stay busy to the end
# instead of each session waiting for its last long test, and the notebooks' kernels and
# the browser's pages, which wait on other processes, overlap the CPU-bound tests. The
# browser tests' own notebooks (tests/e2e/notebooks) are their data, not course notebooks.
# The lite site's tests run in it too: it needs the docs and the lite site built (make test
# builds them first).
suite: $(VENV)/.dev test-system-deps
	$(PY) -m pytest -n $(JOBS) --dist loadgroup --durations=20 $(NBVAL) \
	  --ignore=tests/e2e/notebooks tests $(NOTEBOOKS)

# Re-execute the notebooks and store their outputs (after changing them or agentnb).
notebooks: $(VENV)/.dev system-deps postgres-server
	$(PY) notebooks/regenerate.py

# 4 workers, an approver and a CLI poller on one SQLite file for about 30 s; exits 1 on
# any broken invariant. The full soak: make soak SOAK="--runs 5000".
SOAK ?= --minutes 0.5
soak: $(VENV)/.dev
	$(PY) bench/soak.py $(SOAK)

# The documentation site, strict: every warning is an error and every cross-reference must
# resolve (-n). Offline: no intersphinx, notebooks rendered from their committed outputs.
docs: $(VENV)/.dev
	$(VENV)/bin/sphinx-build -W --keep-going -n -q -b html docs docs/_build/html

# The course in the browser (docs/lite/build.py): Pyodide from the npm registry at the
# version jupyterlite-pyodide-kernel pins, agentnb and its dependencies as local wheels.
# Downloads are cached in .venv/lite-cache, so a second build fetches nothing.
$(VENV)/.lite: pyproject.toml | $(PY)
	$(PIP) install -e ".[lite]"
	touch $@

lite: $(VENV)/.lite
	$(PY) docs/lite/build.py --out docs/_build/lite --cache $(VENV)/lite-cache

# Every lite notebook's code cells in Node with the site's own Pyodide (no browser), the
# site itself (no file points outside it; each course page's link into it), then notebook
# 01 in Chromium from the site. The lite tests live in tests/lite and tests/e2e: naming
# them spares collecting the whole suite (14 s of 26 s per run here).
lite-check: lite docs $(VENV)/.dev test-system-deps
	$(PY) -m pytest -p no:cacheprovider -q -m "lite and not browser" tests/lite
	$(PY) -m pytest -p no:cacheprovider -q -m "lite and browser" tests/e2e

# The install first (dev holds the lite extra), then lint, docs and the lite site side by
# side (each mostly one process), then the one session of tests and the soak. (Lint and
# the soak beside the session, to fill its idle quarter of two cores, measured slower on a
# fresh clone: 11 min 24 s for the session against 8 min 44 s for session and soak here.)
test: $(VENV)/.dev test-system-deps
	$(MAKE) --no-print-directory -j3 lint docs lite
	$(MAKE) --no-print-directory suite soak

# The fast inner loop (make test is the whole check): lint and types, then the tests marked
# neither slow (processes, kernels) nor browser, on the in-process backends only: the
# PostgreSQL-backed variants of the same tests run in make test.
check: $(VENV)/.dev
	$(VENV)/bin/ruff check agentnb tests bench
	$(VENV)/bin/ruff format --check agentnb tests bench
	$(VENV)/bin/mypy agentnb
	$(PY) -m pytest -q -x -p no:cacheprovider -n $(JOBS) -m "not slow and not browser and not postgres and not lite"

bench: $(VENV)/.dev system-deps postgres-server
	$(PIP) install -e ".[bench]"
	$(PY) bench/bench_runtime.py
	$(PY) bench/bench_render.py
	$(PY) bench/bench_fsm.py
	$(PY) bench/bench_resilience.py
	$(PY) bench/bench_widget.py
	$(PY) bench/bench_longrun.py
	$(PY) bench/bench_parallel.py
	$(PY) bench/bench_postgres.py
	$(PY) bench/bench_wake.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
