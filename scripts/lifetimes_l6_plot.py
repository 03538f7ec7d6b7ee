"""Rule lifetimes_l6_plot: L6 bytes by accounting and time, plain vs checkpointed."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.lifetimes import plot_checkpoint

run_job(snakemake, plot_checkpoint,  # noqa: F821 - injected by Snakemake
        accounting=read_csv(snakemake.input.accounting),  # noqa: F821
        samples=read_csv(snakemake.input.samples))  # noqa: F821
