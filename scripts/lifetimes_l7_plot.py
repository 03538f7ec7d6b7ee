"""Rule lifetimes_l7_plot: L7 bytes against sequence length, linear vs quadratic."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.lifetimes import plot_shapes

run_job(snakemake, plot_shapes, sweep=read_csv(snakemake.input.sweep))  # noqa: F821
