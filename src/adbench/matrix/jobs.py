"""The matrix entry point's job functions (workflow/matrix/Snakefile runs them through scripts/measure.py).

Each keeps a failure inside its entry: an exception becomes the entry's record (shown on the history
page), never a failed Snakemake job, so the other entries still complete."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from ..claims import table as claims_table
from ..history.table import env_line, history, run_from_archive, run_from_status, varying
from ..history.timing_moves import ALPHA
from ..render.history import render_history
from ..verdicts.documented import load
from .envs import build, find_uv
from .run import run_entry

log = logging.getLogger("adbench")


def make_env(dest: str, python: str, root: str, runtime_lock: str, overrides: dict, pins: dict, uv_log: str) -> dict:
    """rule matrix_env: build (or reuse) one entry's full environment from its own lock (adbench.matrix.envs)."""
    try:
        uv, looked = find_uv(os.environ, sys.prefix, root)
        return {"record": build(Path(dest), python, Path(root), Path(runtime_lock), overrides, pins, uv, Path(uv_log),
                                looked)}
    except Exception as err:  # noqa: BLE001 - recorded, and shown on the history page
        log.exception("environment %s failed", dest)
        return {"record": {"ok": False, "error": f"{type(err).__name__}: {err}", "path": dest}}


def run_guarded(name: str, overrides: dict, env: dict, **kwargs) -> dict:
    """rule matrix_run: the measurement pipeline in one entry's environment (`env`: its record)."""
    try:
        return run_entry(name, overrides, env=env, **kwargs)
    except Exception as err:  # noqa: BLE001 - recorded, and shown on the history page
        log.exception("matrix entry %s failed", name)
        return {"status": {"entry": name, "overrides": overrides, "versions": {}, "ok": False, "stage": "run",
                           "error": f"{type(err).__name__}: {err}", "label": "", "run_s": 0.0}}


def notes() -> "pd.DataFrame":
    """Why a quantity or a claim moved across library versions, as data (src/adbench/data/history_notes.csv)."""
    import pandas as pd
    from importlib import resources

    return pd.read_csv(Path(str(resources.files("adbench") / "data" / "history_notes.csv")), dtype=str,
                       keep_default_na=False)


def build_history(statuses: list[dict], archives_path: list[str], archive_dir: str, device: str,
                  rel_threshold: float, timing_threshold: float, template_dir: str) -> dict:
    """rule matrix_history: report/history.html and results/history.csv across archives and entries;
    `archives_path`: the MANIFEST.json of every archive listed in compare_to."""
    matrix = [run_from_status(s, Path(archive_dir), device) for s in statuses]
    taken = {r["label"] for r in matrix}
    archives = [Path(p).parent for p in archives_path]
    runs = [run_from_archive(a, "compare_to") for a in archives if a.name not in taken] + matrix
    runs = [r | {"env": env_line(r, varying(runs))} for r in runs]
    table = history(runs, load(), rel_threshold, timing_threshold, claims=claims_table.load(), notes=notes())
    thresholds = {"relative": rel_threshold, "timing": timing_threshold, "alpha": ALPHA}
    html = render_history(template_dir, table, runs, thresholds)
    failed = [f"{r['label']}: {r['error']}" for r in runs if not r["ok"]]
    if failed:
        log.warning("FAILED matrix entries (see report/history.html):\n  %s", "\n  ".join(failed))
    return {"csv": table, "html": html.encode("utf-8")}
