"""Rule optim_o1_plot: loss curves of the ten seeds and Adam's rescue."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.optim import plot_o1_curves

run_job(snakemake, plot_o1_curves,  # noqa: F821 - injected by Snakemake
        gd_curves=read_csv(snakemake.input.gd_curves), adam_curves=read_csv(snakemake.input.adam_curves),  # noqa: F821
        seeds=read_csv(snakemake.input.seeds))  # noqa: F821
