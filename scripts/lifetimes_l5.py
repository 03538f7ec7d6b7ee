"""Rule lifetimes_l5: L5; see adbench.lifetimes.graph.measure_l5."""

from adbench.jobs import run_job
from adbench.lifetimes.graph import measure_l5

run_job(snakemake, measure_l5)  # noqa: F821 - injected by Snakemake
