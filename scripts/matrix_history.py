"""Rule matrix_history: report/history.html and results/history.csv across archives and matrix entries."""

import json
from pathlib import Path

from adbench.verdicts.documented import load
from adbench.jobs import run_job
from adbench.history.table import env_line, history, run_from_archive, run_from_status, varying
from adbench.render.history import render_history
from adbench.history.timing_moves import ALPHA


def build(statuses, archives, archive_dir, device, rel_threshold, timing_threshold, template_dir):
    matrix = [run_from_status(json.loads(Path(s).read_text()), Path(archive_dir), device) for s in statuses]
    taken = {r["label"] for r in matrix}
    runs = [run_from_archive(Path(a), "compare_to") for a in archives if Path(a).name not in taken] + matrix
    runs = [r | {"env": env_line(r, varying(runs))} for r in runs]
    table = history(runs, load(), rel_threshold, timing_threshold)
    thresholds = {"relative": rel_threshold, "timing": timing_threshold, "alpha": ALPHA}
    html = render_history(template_dir, table, runs, thresholds)
    failed = [f"{r['label']}: {r['error']}" for r in runs if not r["ok"]]
    if failed:
        import logging
        logging.getLogger("adbench").warning("FAILED matrix entries (see report/history.html):\n  %s",
                                             "\n  ".join(failed))
    return {"csv": table, "html": html.encode("utf-8")}


run_job(snakemake, build, statuses=list(snakemake.input.statuses),  # noqa: F821 - injected by Snakemake
        archives=[str(Path(p).parent) for p in snakemake.input.archives])  # noqa: F821
