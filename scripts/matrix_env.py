"""Rule matrix_env / matrix_base: build (or reuse) one entry's environment; a pip failure is a record, not a crash."""

from pathlib import Path

from adbench.jobs import run_job
from adbench.matrix.envs import build


def make_env(dest, base_python, base_purelib, requirements, pins, digest, pip_log, base_record=None):
    if base_record:  # layering on the base built from the pins
        import json
        base = json.loads(Path(base_record).read_text())
        if not base["ok"]:
            return {"record": {"ok": False, "error": f"base environment failed: {base['error']}", "path": dest}}
        base_python, base_purelib = base["python"], base["purelib"]
    return {"record": build(Path(dest), base_python, base_purelib, requirements, pins, digest, Path(pip_log))}


run_job(snakemake, make_env, base_record=snakemake.input.get("base"))  # noqa: F821 - injected by Snakemake
