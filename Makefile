# Two entry points: `make report` and `make test`. Both create .venv when missing and
# install the pinned dependencies (pyproject.toml) first; `make test` adds the `test` extra
# (pytest, playwright). Re-installing only happens when the pins change.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
CORES ?= all
# Memory Snakemake may hand out to concurrent jobs (each rule declares its mem_mb): 80 % of RAM.
MEM_MB ?= $(shell awk '/MemTotal/ {printf "%d", $$2 / 1024 * 0.8}' /proc/meminfo 2>/dev/null || echo 8000)

.PHONY: report test setup lint clean browser matrix slurm

setup: $(STAMP)

# The interpreter is checked first, against pyproject.toml's requires-python: pip would refuse it
# only at `pip install -e .`, after the whole dependency install.
$(STAMP): pyproject.toml envs/requirements.txt
	@if test -x $(BIN)/python; then $(BIN)/python scripts/check_python.py --venv $(VENV); \
	 else $(PYTHON) scripts/check_python.py; fi
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r envs/requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

$(TEST_STAMP): $(STAMP) envs/requirements-test.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r envs/requirements-test.txt
	@touch $(TEST_STAMP)

# Extra Snakemake arguments, e.g. SMK_ARGS='--configfile config.yaml .test/config.yaml'.
SMK_ARGS ?=
# BIN=<dir> runs an existing environment's python/snakemake and installs nothing.
SETUP = $(if $(filter $(VENV)/bin,$(BIN)),$(STAMP))

# After a kill: adbench.recover unlocks the directory when no live Snakemake holds it (one
# line says so), and --rerun-incomplete reruns the jobs the kill interrupted. While a live
# Snakemake holds it, adbench.recover fails with that run's PID, so no second Snakemake starts.
# Then adbench.cache deletes each cached file that changed after its job wrote it (one line each),
# so Snakemake re-runs that job: every registered output is a target.
report: $(SETUP)
	$(BIN)/python -m adbench.recover --snakemake $(BIN)/snakemake -- $(SMK_ARGS)
	$(BIN)/python -m adbench.cache
	$(BIN)/snakemake --cores $(CORES) --resources mem_mb=$(MEM_MB) --rerun-incomplete $(SMK_ARGS)
	@echo "Report written to $(CURDIR)/report/report.html"

# Version matrix (config `matrix`): one environment per entry, the pipeline run in each, every run
# archived, then report/history.html and results/history.csv. MATRIX_CONFIG names overlays read after
# config.yaml, e.g. `make matrix MATRIX_CONFIG=".test/config.yaml .test/matrix.yaml"` (smoke matrix).
MATRIX_CONFIG ?=
matrix: $(SETUP)
	$(BIN)/snakemake -s workflow/matrix/Snakefile --cores $(CORES) --resources mem_mb=$(MEM_MB) \
	  $(if $(MATRIX_CONFIG),--configfile config.yaml $(MATRIX_CONFIG))
	@echo "History written to $(CURDIR)/report/history.html"

test: $(TEST_STAMP) browser slurm
	$(BIN)/python -m pytest

# The browser test drives Debian's Chromium through Playwright (no browser download).
# CI (CI=true) running as root installs it; elsewhere the test is skipped with a message.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$${CI:-}" = "true" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian chromium for the browser test"; \
	    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium not found: the browser test will be skipped (set CI=true as root to install it)"; fi; }

# The SLURM test starts a one-node cluster from Debian's slurmctld/slurmd (tests/dag/cluster/).
# CI (CI=true) running as root installs them; elsewhere the test is skipped with a message.
slurm:
	@if [ "$${CI:-}" = "true" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  tests/dag/cluster/slurm-up.sh --install; \
	else echo "SLURM cluster test will be skipped (set CI=true as root to install and run it)"; fi

# Both entry points: the formatter (snakefmt, 120 columns: pyproject.toml) and Snakemake's own linter.
lint: $(TEST_STAMP)
	$(BIN)/snakefmt --check Snakefile workflow/
	$(BIN)/snakemake --lint
	$(BIN)/snakemake -s workflow/matrix/Snakefile --lint --configfile config.yaml .test/config.yaml .test/matrix.yaml

clean:
	rm -rf results report/report.html .snakemake logs benchmarks
