"""Rule scalar_s5: S5; see adbench.scalar.numeric.measure_s5."""

from adbench.jobs import run_job
from adbench.scalar.numeric import measure_s5

run_job(snakemake, measure_s5)  # noqa: F821 - injected by Snakemake
