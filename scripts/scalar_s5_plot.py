"""Rule scalar_s5_plot: the finite-difference valley figure."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.scalar import plot_valley

run_job(snakemake, plot_valley,  # noqa: F821 - injected by Snakemake
        sweep=read_csv(snakemake.input.sweep), slopes=read_csv(snakemake.input.slopes))  # noqa: F821
