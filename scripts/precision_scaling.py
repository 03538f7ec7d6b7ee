"""Rule precision_scaling: P4, P5, P6; see adbench.precision.scaling.measure_scaling."""

from adbench.jobs import run_job
from adbench.precision.scaling import measure_scaling

run_job(snakemake, measure_scaling)  # noqa: F821 - injected by Snakemake
