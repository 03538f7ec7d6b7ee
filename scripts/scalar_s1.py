"""Rule scalar_s1: S1; see adbench.scalar.probes.measure_s1."""

from adbench.jobs import run_job
from adbench.scalar.probes import measure_s1

run_job(snakemake, measure_s1)  # noqa: F821 - injected by Snakemake
