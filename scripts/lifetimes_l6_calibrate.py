"""Rule lifetimes_l6_calibrate: fix the loop count per candidate once for every process run."""

from adbench.jobs import run_job
from adbench.lifetimes.checkpoint_probe import measure_calibration

run_job(snakemake, measure_calibration)  # noqa: F821 - injected by Snakemake
