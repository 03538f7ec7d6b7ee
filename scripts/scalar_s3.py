"""Rule scalar_s3: S3; see adbench.scalar.probes.measure_s3."""

from adbench.jobs import run_job
from adbench.scalar.probes import measure_s3

run_job(snakemake, measure_s3)  # noqa: F821 - injected by Snakemake
