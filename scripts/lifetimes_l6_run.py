"""Rule lifetimes_l6_run: one process run of plain vs checkpointed timing (a wildcard per process)."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.lifetimes.checkpoint_probe import measure_run

run_job(snakemake, measure_run,  # noqa: F821 - injected by Snakemake
        process=int(snakemake.wildcards.process),  # noqa: F821
        calibration=read_csv(snakemake.input.calibration))  # noqa: F821
