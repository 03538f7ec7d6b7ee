"""Generic rule script: run params.measure ('package.module:function') on the rule's named inputs.

Each named input is read by suffix and passed under its name: .csv -> DataFrame, .txt -> str,
.json -> dict, anything else -> bytes; a list of files -> a list. params.args are the other
keyword arguments; run_job writes the returned outputs. A rule whose function wants something
else (a text split, wildcards as ints) says so in its params or keeps a script of its own."""

import importlib
import json
from pathlib import Path

from adbench.io import read_csv
from adbench.jobs import run_job


def read(path: str):
    """One input file's content, by suffix."""
    p = Path(path)
    if p.suffix == ".csv":
        return read_csv(p)
    if p.suffix == ".txt":
        return p.read_text(encoding="utf-8")
    if p.suffix == ".json":
        return json.loads(p.read_text(encoding="utf-8"))
    return p.read_bytes()


smk = snakemake  # noqa: F821 - injected by Snakemake
module, _, name = smk.params.measure.partition(":")
inputs = {k: read(v) if isinstance(v, str) else [read(p) for p in v] for k, v in smk.input.items()}
run_job(smk, getattr(importlib.import_module(module), name), **inputs)
