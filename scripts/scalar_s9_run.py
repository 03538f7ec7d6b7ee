"""Rule scalar_s9_run: one process run of the tape-vs-torch timing (a wildcard per process)."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.scalar.speed import measure_run

run_job(snakemake, measure_run,  # noqa: F821 - injected by Snakemake
        process=int(snakemake.wildcards.process),  # noqa: F821
        calibration=read_csv(snakemake.input.calibration))  # noqa: F821
