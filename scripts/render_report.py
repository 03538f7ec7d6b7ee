"""Rule render_report: write report/report.html from the comparison and every registered file."""

from pathlib import Path

from adbench.families import from_dicts
from adbench.render import TEMPLATES
from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.render.page import benchmarks, collect, render


def build(comparison, changes, files, template_dir, reduced, rules, families):
    collected = collect(files)
    extra = {"changes": read_csv(changes), "bench": benchmarks(rules=set(rules)), "reduced": reduced}
    html = render(template_dir, read_csv(comparison), collected, extra=extra, families=from_dicts(families))
    return {"html": html.encode("utf-8")}


run_job(snakemake, build, comparison=snakemake.input.comparison,  # noqa: F821 - injected
        changes=snakemake.input.changes, reduced=snakemake.params.reduced,  # noqa: F821
        rules=snakemake.params.rules, families=snakemake.params.families,  # noqa: F821
        files=list(snakemake.input.files), template_dir=str(TEMPLATES))  # noqa: F821
