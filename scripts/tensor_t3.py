"""Rule tensor_t3: T3; see adbench.tensor.probes.measure_t3."""

from adbench.jobs import run_job
from adbench.tensor.probes import measure_t3

run_job(snakemake, measure_t3)  # noqa: F821 - injected by Snakemake
