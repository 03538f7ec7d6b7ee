"""Rule scalar_s4: S4; see adbench.scalar.probes.measure_s4."""

from adbench.jobs import run_job
from adbench.scalar.probes import measure_s4

run_job(snakemake, measure_s4)  # noqa: F821 - injected by Snakemake
