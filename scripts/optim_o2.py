"""Rule optim_o2: the ill-conditioned quadratic; see adbench.optim.o2.measure_o2."""

from adbench.jobs import run_job
from adbench.optim.o2 import measure_o2

run_job(snakemake, measure_o2)  # noqa: F821 - injected by Snakemake
