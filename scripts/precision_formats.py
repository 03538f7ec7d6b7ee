"""Rule precision_formats: P1, P2, P3, P7, P8; see adbench.precision.formats.measure_formats."""

from adbench.jobs import run_job
from adbench.precision.formats import measure_formats

run_job(snakemake, measure_formats)  # noqa: F821 - injected by Snakemake
