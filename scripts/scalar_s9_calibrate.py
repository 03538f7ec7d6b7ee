"""Rule scalar_s9_calibrate: fix the loop count per candidate once for every process run."""

from adbench.jobs import run_job
from adbench.scalar.speed import measure_calibration

run_job(snakemake, measure_calibration)  # noqa: F821 - injected by Snakemake
