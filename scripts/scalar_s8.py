"""Rule scalar_s8: S8; see adbench.scalar.numeric.measure_s8."""

from adbench.jobs import run_job
from adbench.scalar.numeric import measure_s8

run_job(snakemake, measure_s8)  # noqa: F821 - injected by Snakemake
