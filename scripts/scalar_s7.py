"""Rule scalar_s7: S7; see adbench.scalar.numeric.measure_s7."""

from adbench.jobs import run_job
from adbench.scalar.numeric import measure_s7

run_job(snakemake, measure_s7)  # noqa: F821 - injected by Snakemake
