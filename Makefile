# Two entry points: `make report` and `make test`. Both create .venv when missing and install
# exactly a hashed lock: `make report` envs/requirements.txt (the runtime part of the lock), `make
# test` envs/lock.txt (runtime + the `test` extra). `make lock` regenerates every lock from pyproject.toml.
# Re-installing only happens when a lock or the torch variant changes (docs/setup.md).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
CORES ?= all
# Memory Snakemake may hand out to concurrent jobs (each rule declares its mem_mb; a job that needs more stops the
# run before any starts): 80 % of RAM, from /proc/meminfo (MEMINFO: another file, for the tests), else macOS's
# `sysctl -n hw.memsize`, else psutil through the venv's or the system's python (make reads this before set-up
# may have made the venv); 6553 (80 % of 8 GiB, the smallest machine the default run is sized for) if none answers.
MEM_MB ?= $(shell { awk '/^MemTotal:/ {printf "%.3f\n", $$2 / 1024}' $(or $(MEMINFO),/proc/meminfo) || \
  { b=$$(sysctl -n hw.memsize) && echo $$((b / 1048576)); } || for py in $(BIN)/python $(PYTHON); do \
  $$py -c 'import psutil; print(psutil.virtual_memory().total / 2**20)' && break; done; } 2>/dev/null | \
  awk 'NR == 1 && $$1 > 0 {printf "%d", $$1 * 0.8; found = 1} END {if (!found) printf "6553"}')

# TORCH=cpu (default): torch==2.13.0+cpu from PyTorch's CPU index, envs/requirements.txt + envs/lock.txt.
# TORCH=pypi: PyPI's torch==2.13.0 (Linux CUDA, macOS CPU/MPS), envs/requirements-pypi.txt + envs/lock-pypi.txt.
TORCH ?= cpu
ifeq ($(filter cpu pypi,$(TORCH)),)
$(error TORCH=$(TORCH) is not a torch variant: use TORCH=cpu (torch==2.13.0+cpu, the default) or TORCH=pypi (PyPI's torch==2.13.0))
endif
VARIANT := $(if $(filter pypi,$(TORCH)),-pypi)
# Snakemake's conda route (`--sdm conda`) reads it: envs/adbench-pypi.yaml for TORCH=pypi (workflow/rules/common.smk).
export ADBENCH_TORCH := $(TORCH)
RUNTIME_LOCK := envs/requirements$(VARIANT).txt
FULL_LOCK := envs/lock$(VARIANT).txt
# Each stamp holds the variant it installed (an older, empty stamp: cpu); another TORCH re-syncs the venv.
stamped = $(or $(shell cat $(1) 2>/dev/null),cpu)
resync = $(if $(filter-out $(TORCH),$(call stamped,$(1))),FORCE)
VPY := $(VENV)/bin/python
# What the preflight's advice repeats: the command the user ran.
GOAL := make $(or $(firstword $(filter report test setup matrix reference lint,$(MAKECMDGOALS))),setup)

.PHONY: report test setup lint clean browser matrix slurm lock reference bin-check FORCE

setup: $(STAMP)

# uv installs the lock when it can be bootstrapped (pinned, hash-checked: envs/uv.txt), else pip
# does; either way only the lock's files, checked against its hashes, with no resolution. uv goes
# into its own folder (not the venv's site-packages), so the venv holds the lock and adbench only.
# envs/uvrun.py hands uv the package sources pip is configured with (`pip config list`).
# uv compiles no bytecode (pip does); set-up then imports what the jobs import once with bytecode
# writing on (envs/warm_bytecode.py: where PYTHONDONTWRITEBYTECODE is set, every job would compile
# torch's modules again; compiling all 13,000 files instead takes 67 s on 2 cores, this 24 s).
UV_HOME := $(VENV)/.uv
UV := $(UV_HOME)/bin/uv
PIP_INSTALL := $(VPY) -m pip install --quiet --disable-pip-version-check
# Shell condition: uv is there, or pip can bootstrap it now.
HAVE_UV = { test -x $(UV) || $(PIP_INSTALL) --require-hashes --no-deps --target $(UV_HOME) -r envs/uv.txt \
  >/dev/null 2>&1 && test -x $(UV); }
# $(call install,LOCK): the lock's exact files, then the project itself (editable, no dependencies,
# built with the lock's setuptools rather than one fetched for an isolated build).
define install
	@if $(HAVE_UV); then \
	  echo "set-up: $$($(UV) --version) installs $(1)"; \
	  $(VPY) envs/uvrun.py $(UV) pip sync --quiet --python $(VPY) --require-hashes $(1) && \
	  $(VPY) envs/uvrun.py $(UV) pip install --quiet --python $(VPY) --no-deps \
	    --no-build-isolation -e .; \
	else \
	  echo "set-up: pip installs $(1) (uv could not be bootstrapped)"; \
	  $(PIP_INSTALL) --require-hashes --no-deps -r $(1) && \
	  $(PIP_INSTALL) --no-deps --no-build-isolation -e .; \
	fi
endef

# The interpreter is checked first, against pyproject.toml's requires-python: pip would refuse it
# only at `pip install -e .`, after the whole dependency install. Then the preflight (envs/preflight.py,
# about a second): can the lock's torch build be found where pip and uv look here? If not, it stops with
# the index that publishes it and the commands that work, before a venv exists or anything is fetched.
$(STAMP): pyproject.toml $(RUNTIME_LOCK) $(call resync,$(STAMP))
	@if test -x $(VPY); then $(VPY) scripts/check_python.py --venv $(VENV); \
	 else $(PYTHON) scripts/check_python.py; fi
	@$$(test -x $(VPY) && echo $(VPY) || echo $(PYTHON)) envs/preflight.py $(RUNTIME_LOCK) \
	  --command "$(GOAL)$(if $(VARIANT), TORCH=$(TORCH))"
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(call install,$(RUNTIME_LOCK))
	@PYTHONDONTWRITEBYTECODE= $(VPY) envs/warm_bytecode.py
	@echo $(TORCH) > $(STAMP)

$(TEST_STAMP): $(STAMP) $(FULL_LOCK) $(call resync,$(TEST_STAMP))
	$(call install,$(FULL_LOCK))
	@echo $(TORCH) > $(TEST_STAMP)

FORCE:

# Regenerates every lock from pyproject.toml (keeping the versions already locked unless a pin moved;
# LOCK_ARGS=--upgrade takes the newest allowed). It installs no lock: a bare .venv (when missing)
# only bootstraps uv from envs/uv.txt. CPU variant: one resolution, envs/lock.txt (runtime + test), for
# Linux x86_64, CPython 3.11, the platform torch's pinned CPU build exists for; envs/requirements.txt is
# its runtime part (constrained by it). PyPI variant: torch from envs/torch-pypi.txt, every other package
# at the CPU lock's version (envs/pypi-constraints.txt), one universal resolution (Linux with the CUDA
# stack under markers, macOS, Windows) from PYPI_INDEX alone, so its hashes are PyPI's own files for every
# platform. Each runtime lock gives its conda environment's pip section.
LOCK_ARGS ?=
LOCK_PLATFORM ?= x86_64-unknown-linux-gnu
PYPI_INDEX ?= https://pypi.org/simple
COMPILE_ARGS = pip compile --quiet --generate-hashes --python-version 3.11 --custom-compile-command "make lock" $(LOCK_ARGS)
COMPILE = $(VPY) envs/uvrun.py $(UV) $(COMPILE_ARGS) --python-platform $(LOCK_PLATFORM)
COMPILE_PYPI = $(VPY) envs/uvrun.py --only-index $(PYPI_INDEX) $(UV) $(COMPILE_ARGS) --universal \
  --override envs/torch-pypi.txt
lock:
	@if test -x $(VPY); then $(VPY) scripts/check_python.py --venv $(VENV); \
	 else $(PYTHON) scripts/check_python.py; fi
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@$(HAVE_UV) || { echo "make lock needs uv, which could not be bootstrapped from envs/uv.txt" >&2; exit 1; }
	$(COMPILE) pyproject.toml --extra test -o envs/lock.txt
	$(COMPILE) pyproject.toml -c envs/lock.txt -o envs/requirements.txt
	$(VPY) envs/cpu_pins.py envs/lock.txt envs/pypi-constraints.txt
	$(COMPILE_PYPI) pyproject.toml --extra test -c envs/pypi-constraints.txt -o envs/lock-pypi.txt
	$(COMPILE_PYPI) pyproject.toml -c envs/lock-pypi.txt -o envs/requirements-pypi.txt
	$(VPY) envs/uvrun.py $(UV) pip compile --quiet --generate-hashes --universal \
	  --custom-compile-command "make lock" envs/uv.in -o envs/uv.txt
	$(VPY) envs/conda_env.py envs/requirements.txt envs/adbench.yaml
	$(VPY) envs/conda_env.py envs/requirements-pypi.txt envs/adbench-pypi.yaml

# Extra Snakemake arguments, e.g. SMK_ARGS='--configfile config.yaml .test/config.yaml'.
SMK_ARGS ?=
# STRICT=1 (or true/yes): strict mode, `--config strict=True` (Snakemake reads only True as a boolean there).
# After the report is written the run fails, one line per claim that regressed against compare_to and per
# MISMATCH / MISSING row. A --config of your own in SMK_ARGS replaces this one: add strict=True to it.
STRICT ?=
STRICT_ARGS = $(if $(filter 1 true yes True,$(STRICT)),--config strict=True)
# BIN=<dir> runs an existing environment's python/snakemake and installs nothing. It must hold every
# package of the runtime lock (by name), adbench (`pip install --no-deps -e .`) and snakemake's command;
# bin-check names in one line what it lacks (envs/check_bin.py).
SETUP = $(if $(filter $(VENV)/bin,$(BIN)),$(STAMP),bin-check)

bin-check:
	@test -x $(BIN)/python || { echo "BIN=$(BIN) has no python: point BIN at an environment's bin folder or drop BIN=" >&2; exit 1; }
	@$(BIN)/python envs/check_bin.py $(BIN) $(RUNTIME_LOCK)

# After a kill: adbench.recover unlocks the directory when no live Snakemake holds it (one
# line says so), and --rerun-incomplete reruns the jobs the kill interrupted. While a live
# Snakemake holds it, adbench.recover fails with that run's PID, so no second Snakemake starts.
# Then adbench.cache deletes each cached file that changed after its job wrote it (one line each),
# so Snakemake re-runs that job: every registered output is a target.
report: $(SETUP)
	$(BIN)/python -m adbench.recover --snakemake $(BIN)/snakemake -- $(SMK_ARGS)
	$(BIN)/python -m adbench.cache
	$(BIN)/snakemake --cores $(CORES) --resources mem_mb=$(MEM_MB) --rerun-incomplete $(STRICT_ARGS) $(SMK_ARGS)

# Version matrix (config `matrix`): one full environment per entry, the pipeline run in each, every run
# archived, then report/history.html and results/history.csv. Each entry's environment is exactly its
# own hashed lock, .matrix/envs/<entry>.lock.txt: envs/requirements.txt re-resolved by uv with the
# entry's versions as overrides (archived with the entry's results as lock.txt). The matrix needs uv:
# bootstrapped here as for set-up (not with BIN=<dir>, which installs nothing: then $ADBENCH_UV, that
# environment's .uv/, .venv/.uv/ or uv on PATH); without it every entry fails with a line saying so.
# MATRIX_CONFIG names overlays read after config.yaml, e.g.
# `make matrix MATRIX_CONFIG=".test/config.yaml .test/matrix.yaml"` (smoke matrix).
MATRIX_CONFIG ?=
matrix: $(SETUP)
	$(if $(filter $(VENV)/bin,$(BIN)),@$(HAVE_UV) || echo "matrix: uv could not be bootstrapped (envs/uv.txt); every entry will fail" >&2)
	$(BIN)/snakemake -s workflow/matrix/Snakefile --cores $(CORES) --resources mem_mb=$(MEM_MB) \
	  $(if $(MATRIX_CONFIG),--configfile config.yaml $(MATRIX_CONFIG))
	@echo "History written to $(CURDIR)/report/history.html"

# The shipped reference history (reference/, README "Tested range"): the matrix over reference/matrix.yaml at full
# size, then reference/ from its history and the locked stack's archive (adbench.matrix.reference).
reference: $(SETUP)
	@start=$$(date +%s); \
	$(BIN)/snakemake -s workflow/matrix/Snakefile --cores $(CORES) --resources mem_mb=$(MEM_MB) \
	  --configfile config.yaml reference/matrix.yaml && \
	$(BIN)/python -m adbench.matrix.reference --matrix reference/matrix.yaml --wall $$(( $$(date +%s) - start ))

# The tests run on WORKERS pytest-xdist workers (default 2, the machine size CI and the timings assume; WORKERS=0
# runs them in one process). Tests that share a fixture built once per module or session (the smoke DAG run and
# everything built on it) form one group that runs on one worker (tests/conftest.py, shared_fixture_groups).
WORKERS ?= 2
PYTEST = $(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup

test: $(TEST_STAMP) browser slurm
	$(PYTEST)

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

# The quick inner loop: every test but those marked heavy (tests/conftest.py, HEAVY: a Snakemake run, full-size
# GPT-2, a browser, a SLURM cluster, or slow); its target is under 3 minutes on 2 cores. An unmarked test that starts
# Snakemake fails under it, naming the marker to add. `make test` still runs everything (README, CI).
.PHONY: unit
unit: $(TEST_STAMP)
	$(PYTEST) --unit
