"""Rule report_changes: what moved between archived runs (config compare_to) and this run."""

from adbench.jobs import run_job
from adbench.history.changes import measure_changes

run_job(snakemake, measure_changes,  # noqa: F821 - injected by Snakemake
        comparison=snakemake.input.comparison, current_env=snakemake.params.env)  # noqa: F821
