"""Rule archive (`snakemake archive`): snapshot results/ into archive/<label>/."""

from adbench.jobs import run_job
from adbench.history.archive import snapshot


def archive(dest, overwrite, results_dir, files, info):
    return {"manifest": snapshot(files, results_dir, dest, overwrite, info)}


run_job(snakemake, archive,  # noqa: F821 - injected by Snakemake
        files=[snakemake.input.comparison, snakemake.input.claims, snakemake.input.claims_summary,  # noqa: F821
               *snakemake.input.files],  # noqa: F821
        info=dict(snakemake.params.info))  # noqa: F821
