"""Rule matrix_run: the measurement pipeline in one entry's environment, each measurement its own inner job.
Any error stays inside the entry: it becomes the entry's failure record, never a failed Snakemake job."""

import json
import logging
from pathlib import Path

from adbench.jobs import run_job
from adbench.matrix.run import run_entry


def guarded(name, overrides, **kwargs):
    try:
        return run_entry(name, overrides, **kwargs)
    except Exception as err:  # noqa: BLE001 - recorded, and shown on the history page
        logging.getLogger("adbench").exception("matrix entry %s failed", name)
        return {"status": {"entry": name, "overrides": overrides, "versions": {}, "ok": False, "stage": "run",
                           "error": f"{type(err).__name__}: {err}", "label": "", "run_s": 0.0}}


run_job(snakemake, guarded,  # noqa: F821 - injected by Snakemake
        env=json.loads(Path(snakemake.input.env).read_text()), cores=snakemake.threads,  # noqa: F821
        mem_mb=snakemake.resources.get("mem_mb"))  # noqa: F821
