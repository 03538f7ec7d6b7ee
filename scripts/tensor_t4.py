"""Rule tensor_t4: T4; see adbench.tensor.probes.measure_t4."""

from adbench.jobs import run_job
from adbench.tensor.probes import measure_t4

run_job(snakemake, measure_t4)  # noqa: F821 - injected by Snakemake
