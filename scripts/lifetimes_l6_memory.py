"""Rule lifetimes_l6_memory: L6 saved-tensor accountings; see adbench.lifetimes.checkpoint_probe."""

from adbench.jobs import run_job
from adbench.lifetimes.checkpoint_probe import measure_l6_memory

run_job(snakemake, measure_l6_memory)  # noqa: F821 - injected by Snakemake
