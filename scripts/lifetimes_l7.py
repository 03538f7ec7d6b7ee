"""Rule lifetimes_l7: L7; see adbench.lifetimes.shapes.measure_l7."""

from adbench.jobs import run_job
from adbench.lifetimes.shapes import measure_l7

run_job(snakemake, measure_l7)  # noqa: F821 - injected by Snakemake
