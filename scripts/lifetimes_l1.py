"""Rule lifetimes_l1: L1; see adbench.lifetimes.accumulation.measure_l1."""

from adbench.jobs import run_job
from adbench.lifetimes.accumulation import measure_l1

run_job(snakemake, measure_l1)  # noqa: F821 - injected by Snakemake
