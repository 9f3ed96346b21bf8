# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo check test test-fast test-cpus lint bench clean

# torch is installed first and pinned: an unpinned torch resolved alone pulls a CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev,flower,track]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/fedstruct demo

# The gates CI runs before the tests (.ci/check; docs/architecture.md, "Gates"): ruff's
# lint and format, the import layers, import cycles, mypy on a ratchet.
check: $(STAMP)
	PYTHON=$(PY) RUFF=$(VENV)/bin/ruff .ci/check

# On every core (pytest-xdist; 2 workers on the 2-core CI machine), a file's tests on one
# worker, the Flower deployment files together on one (tests/conftest.py).
test: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadfile

# The unit lane: the suite without the tests that start processes (Flower deployments,
# Ray, fedstruct's command line or a run in another process: marker deploy) or are
# marked slow. make test runs them all.
test-fast: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadfile -m "not deploy and not slow"

# The suite under torch's portable and AVX2 kernels, with 1 and 2 threads: trained numbers
# move between CPUs, and every test must hold on each (docs/benchmarks.md). One worker:
# the thread counts are the point, and 2 threads x 2 workers would oversubscribe 2 cores.
test-cpus: $(STAMP)
	for cap in default avx2; do for threads in 1 2; do \
	  echo "== ATEN_CPU_CAPABILITY=$$cap, $$threads torch threads"; \
	  ATEN_CPU_CAPABILITY=$$cap OMP_NUM_THREADS=$$threads $(PY) -m pytest -q || exit 1; \
	done; done

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

bench: $(STAMP)
	$(PY) benchmarks/runtime.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
