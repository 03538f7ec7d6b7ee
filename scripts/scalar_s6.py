"""Rule scalar_s6: S6; see adbench.scalar.numeric.measure_s6."""

from adbench.jobs import run_job
from adbench.scalar.numeric import measure_s6

run_job(snakemake, measure_s6)  # noqa: F821 - injected by Snakemake
