"""Rule lifetimes_l3: L3; see adbench.lifetimes.accumulation.measure_l3."""

from adbench.jobs import run_job
from adbench.lifetimes.accumulation import measure_l3

run_job(snakemake, measure_l3)  # noqa: F821 - injected by Snakemake
