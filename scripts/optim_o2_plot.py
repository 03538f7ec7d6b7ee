"""Rule optim_o2_plot: best trajectory per method and the grid heat maps."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.optim import plot_o2

run_job(snakemake, plot_o2,  # noqa: F821 - injected by Snakemake
        **{name: read_csv(getattr(snakemake.input, name))  # noqa: F821
           for name in ("trajectories", "spectrum", "best", "grid")})
