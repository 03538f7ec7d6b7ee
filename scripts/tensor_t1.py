"""Rule tensor_t1: T1; see adbench.tensor.probes.measure_t1."""

from adbench.jobs import run_job
from adbench.tensor.probes import measure_t1

run_job(snakemake, measure_t1)  # noqa: F821 - injected by Snakemake
