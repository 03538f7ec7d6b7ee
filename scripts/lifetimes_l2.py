"""Rule lifetimes_l2: L2; see adbench.lifetimes.accumulation.measure_l2."""

from adbench.jobs import run_job
from adbench.lifetimes.accumulation import measure_l2

run_job(snakemake, measure_l2)  # noqa: F821 - injected by Snakemake
