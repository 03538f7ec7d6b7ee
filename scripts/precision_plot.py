"""Rule precision_plot: the fp16/bf16 error sweep (P3) and the swamping trajectory (P6)."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.precision import plot_precision

run_job(snakemake, plot_precision,  # noqa: F821 - injected by Snakemake
        sweep=read_csv(snakemake.input.sweep), landmarks=read_csv(snakemake.input.landmarks),  # noqa: F821
        trajectory=read_csv(snakemake.input.trajectory))  # noqa: F821
