"""Rule report_compare: join measured values to the documented table."""

from adbench.jobs import run_job
from adbench.verdicts.job import measure_comparison

run_job(snakemake, measure_comparison,  # noqa: F821 - injected by Snakemake
        values=list(snakemake.input["values"]), documented_path=snakemake.input.documented)  # noqa: F821
