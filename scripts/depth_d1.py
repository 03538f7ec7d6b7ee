"""Rule depth_d1: D1; see adbench.depth.chains.measure_d1."""

from adbench.depth.chains import measure_d1
from adbench.jobs import run_job

run_job(snakemake, measure_d1)  # noqa: F821 - injected by Snakemake
