"""Rule matrix_env / matrix_base: build (or reuse) one entry's environment. Any failure (pip, venv)
is written as the entry's record, not raised, so the other entries still complete."""

import json
import logging
from pathlib import Path

from adbench.jobs import run_job
from adbench.matrix.envs import build


def make_env(dest, base_python, base_purelib, requirements, pins, digest, pip_log, base_record=None):
    try:
        if base_record:  # layering on the base built from the pins
            base = json.loads(Path(base_record).read_text())
            if not base["ok"]:
                return {"record": {"ok": False, "error": f"base environment failed: {base['error']}", "path": dest}}
            base_python, base_purelib = base["python"], base["purelib"]
        return {"record": build(Path(dest), base_python, base_purelib, requirements, pins, digest, Path(pip_log))}
    except Exception as err:  # noqa: BLE001 - recorded, and shown on the history page
        logging.getLogger("adbench").exception("environment %s failed", dest)
        return {"record": {"ok": False, "error": f"{type(err).__name__}: {err}", "path": dest}}


run_job(snakemake, make_env,  # noqa: F821 - injected by Snakemake
        base_record=next(iter(snakemake.input.get("base") or []), None))  # noqa: F821
