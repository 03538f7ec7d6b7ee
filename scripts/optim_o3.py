"""Rule optim_o3: optimizer-state memory arithmetic; see adbench.optim.memory.measure_o3."""

from adbench.jobs import run_job
from adbench.optim.memory import measure_o3

run_job(snakemake, measure_o3)  # noqa: F821 - injected by Snakemake
