"""Rule render_report: write report/report.html from the comparison and every registered file."""

import json
from pathlib import Path

from adbench.families import from_dicts
from adbench.render import TEMPLATES
from adbench.io import read_csv
from adbench.jobs import run_job
from adbench.render.page import benchmarks, collect, render


def model_record(paths) -> dict | None:
    """results/gpt2/model.json (which GPT-2 ran), or None when the run has no GPT-2 family."""
    return json.loads(Path(paths[0]).read_text()) if paths else None


def build(comparison, changes, files, template_dir, reduced, rules, families, settings, model):
    collected = collect(files)
    extra = {"changes": read_csv(changes), "bench": benchmarks(rules=set(rules)), "reduced": reduced}
    html = render(template_dir, read_csv(comparison), collected, extra=extra, families=from_dicts(families),
                  config=settings, model=model_record(model))
    return {"html": html.encode("utf-8")}


run_job(snakemake, build, comparison=snakemake.input.comparison,  # noqa: F821 - injected
        changes=snakemake.input.changes, reduced=snakemake.params.reduced,  # noqa: F821
        rules=snakemake.params.rules, families=snakemake.params.families,  # noqa: F821
        settings=snakemake.params.settings, model=list(snakemake.input.model),  # noqa: F821
        files=list(snakemake.input.files), template_dir=str(TEMPLATES))  # noqa: F821
