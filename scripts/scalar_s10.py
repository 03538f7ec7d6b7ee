"""Rule scalar_s10: S10; see adbench.scalar.probes.measure_s10."""

from adbench.jobs import run_job
from adbench.scalar.probes import measure_s10

run_job(snakemake, measure_s10)  # noqa: F821 - injected by Snakemake
