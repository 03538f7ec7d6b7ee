"""Rule scalar_s2: S2; see adbench.scalar.probes.measure_s2."""

from adbench.jobs import run_job
from adbench.scalar.probes import measure_s2

run_job(snakemake, measure_s2)  # noqa: F821 - injected by Snakemake
