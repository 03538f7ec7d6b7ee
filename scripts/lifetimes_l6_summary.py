"""Rule lifetimes_l6_summary: medians, ratio range and bootstrap CI across process runs."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.lifetimes.checkpoint_timing import measure_summary

run_job(snakemake, measure_summary,  # noqa: F821 - injected by Snakemake
        samples=[read_csv(p) for p in snakemake.input.samples])  # noqa: F821
