# Two entry points: `make report` and `make test`. Both create .venv when missing and
# install the pinned dependencies (pyproject.toml) first; re-installing only happens
# when the pins change.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= all

.PHONY: report test setup lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml envs/requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r envs/requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

report: $(STAMP)
	$(BIN)/snakemake --cores $(CORES)
	@echo "Report written to $(CURDIR)/report/report.html"

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/snakemake --lint

clean:
	rm -rf results report/report.html .snakemake logs benchmarks
