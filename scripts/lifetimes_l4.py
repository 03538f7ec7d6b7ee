"""Rule lifetimes_l4: L4; see adbench.lifetimes.graph.measure_l4."""

from adbench.jobs import run_job
from adbench.lifetimes.graph import measure_l4

run_job(snakemake, measure_l4)  # noqa: F821 - injected by Snakemake
