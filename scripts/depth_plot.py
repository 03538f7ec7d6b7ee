"""Rule depth_plot: |dL/dx| against depth (D1) and per-layer gradients of the quoted stacks (D2)."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.depth import plot_depth

run_job(snakemake, plot_depth,  # noqa: F821 - injected by Snakemake
        chains=read_csv(snakemake.input.chains), probe=read_csv(snakemake.input.fp16_probe),  # noqa: F821
        grid=read_csv(snakemake.input.grid))  # noqa: F821
