"""Rule depth_d2: D2; see adbench.depth.stacks.measure_d2."""

from adbench.depth.stacks import measure_d2
from adbench.jobs import run_job

run_job(snakemake, measure_d2)  # noqa: F821 - injected by Snakemake
