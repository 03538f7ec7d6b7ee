"""Rule scalar_s9_plot: raw S9 timing samples per process run."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.scalar import plot_timing

run_job(snakemake, plot_timing, samples=read_csv(snakemake.input.samples))  # noqa: F821
