"""Rule charlm_plot: C1 training curves, held-out bars and per-group gradient norms."""

from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.plots.charlm import plot_c1

smk = snakemake  # noqa: F821 - injected by Snakemake
run_job(smk, plot_c1, **{k: read_csv(smk.input[k]) for k in ("curves", "grad_norms", "heldout", "baselines")})
