"""Rule tensor_t2: T2; see adbench.tensor.probes.measure_t2."""

from adbench.jobs import run_job
from adbench.tensor.probes import measure_t2

run_job(snakemake, measure_t2)  # noqa: F821 - injected by Snakemake
