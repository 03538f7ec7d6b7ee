# adbench version matrix: one environment per entry of config `matrix`, the measurement pipeline
# run inside each (its own results folder, every measurement its own job of an inner Snakemake),
# each run archived under a label from its versions, then report/history.html and results/history.csv.
# Run from the repository root:  snakemake -s workflow/matrix.smk --cores N   (or `make matrix`).
# Not included by the main Snakefile.
import json
import re
import sys
import time
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

ROOT = Path(workflow.basedir).parent
sys.path.insert(0, str(ROOT / "src"))

from adbench.config import ConfigError, check_config
from adbench.matrix.entries import entries, pin_hash, project_pins, resolved
from adbench.matrix.envs import current_base
from adbench.matrix.run import summary


configfile: "config.yaml"


try:
    check_config(config, ROOT / "workflow/schemas/config.schema.yaml")
    ENTRIES = entries(config.get("matrix", []))
except (ConfigError, ValueError) as err:
    raise WorkflowError(str(err)) from None
if not ENTRIES:
    raise WorkflowError("config key 'matrix' is empty: list at least one {package: version} entry")

MATRIX = Path(".matrix")
PINS = project_pins(ROOT / "pyproject.toml")
# Base environment: the interpreter running this workflow when it already holds every pin
# (no 1.6 GB rebuild), else .matrix/envs/_base built from the pins. Entries layer on it.
_CURRENT = current_base(PINS)
BASE_BUILT = bool(_CURRENT["unmet"])
BASE = {"python": sys.executable, "purelib": _CURRENT["purelib"]} if not BASE_BUILT else {
    "python": str(MATRIX / "envs/_base/bin/python"), "purelib": None}
BASE_ID = str(MATRIX / "envs/_base") if BASE_BUILT else _CURRENT["purelib"]
if BASE_BUILT:
    print(f"matrix: this interpreter lacks {'; '.join(_CURRENT['unmet'])}: building .matrix/envs/_base "
          "from pyproject.toml's pins", file=sys.stderr)


def _retry(record):
    """A fresh token when the last attempt failed, so a failed entry is retried on the next invocation."""
    p = Path(record)
    return str(time.time()) if p.exists() and not json.loads(p.read_text()).get("ok", False) else ""


def _source_hash():
    """Hash of everything an inner run depends on: the inner Snakemake decides which jobs that re-runs."""
    import hashlib
    h = hashlib.sha256()
    for d in ("src", "scripts", "workflow", "report"):
        for p in sorted((ROOT / d).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".html":
                h.update(str(p.relative_to(ROOT)).encode() + p.read_bytes())
    h.update((ROOT / "Snakefile").read_bytes())
    return h.hexdigest()[:16]


_MEM = workflow.global_resources.get("mem_mb")
MEM_MB = getattr(_MEM, "value", _MEM) or 0
SOURCE = _source_hash()

wildcard_constraints:
    entry="|".join(re.escape(e) for e in ENTRIES),

localrules: matrix_all, matrix_history


onsuccess:
    # Each entry's failure is a record, so every job succeeds even when every entry failed: the
    # matrix as a whole fails (non-zero exit) only when no entry succeeded, and names the failed ones.
    _records = [MATRIX / "runs" / e / "status.json" for e in ENTRIES]
    if all(p.exists() for p in _records):  # not when only some targets were asked for
        _any_ok, _line = summary([json.loads(p.read_text()) for p in _records])
        if not _any_ok:
            raise WorkflowError(f"matrix: {_line} (see report/history.html)")
        print(f"matrix: {_line}", file=sys.stderr)


rule matrix_all:
    default_target: True
    input:
        "report/history.html",
        "results/history.csv",


if BASE_BUILT:

    rule matrix_base:
        output:
            record=str(MATRIX / "envs/_base.json"),
        params:
            args=dict(dest=str(MATRIX / "envs/_base"), base_python=sys.executable, base_purelib=None,
                      requirements=PINS, pins=PINS, digest=pin_hash(PINS, "", _CURRENT["python_version"]),
                      pip_log=str(MATRIX / "envs/_base.pip.log")),
            retry=_retry(MATRIX / "envs/_base.json"),
        log:
            str(MATRIX / "logs/matrix_base.log"),
        script:
            "../scripts/matrix_env.py"


rule matrix_env:
    input:
        base=[str(MATRIX / "envs/_base.json")] if BASE_BUILT else [],
    output:
        record=str(MATRIX / "envs/{entry}.json"),
    params:
        args=lambda w: dict(dest=str(MATRIX / "envs" / w.entry), base_python=BASE["python"],
                            base_purelib=BASE["purelib"], requirements=ENTRIES[w.entry],
                            pins=resolved(PINS, ENTRIES[w.entry]),
                            digest=pin_hash(resolved(PINS, ENTRIES[w.entry]), BASE_ID, _CURRENT["python_version"]),
                            pip_log=str(MATRIX / "envs" / f"{w.entry}.pip.log")),
        retry=lambda w: _retry(MATRIX / "envs" / f"{w.entry}.json"),
    log:
        str(MATRIX / "logs/matrix_env_{entry}.log"),
    script:
        "../scripts/matrix_env.py"


rule matrix_run:
    input:
        env=str(MATRIX / "envs/{entry}.json"),
    output:
        status=str(MATRIX / "runs/{entry}/status.json"),
    params:
        args=lambda w: dict(name=w.entry, overrides=ENTRIES[w.entry], config=config, root=str(ROOT),
                            rundir=str(MATRIX / "runs" / w.entry), archive_dir="archive",
                            targets=config.get("matrix_targets", [])),
        source=SOURCE,
        retry=lambda w: _retry(MATRIX / "runs" / w.entry / "status.json"),
    # One entry at a time, with every core: its inner Snakemake runs the measurements as separate
    # jobs on them, and timing jobs never share the machine with another entry's jobs.
    threads: workflow.cores
    resources:
        mem_mb=MEM_MB,
    log:
        str(MATRIX / "logs/matrix_run_{entry}.log"),
    script:
        "../scripts/matrix_run.py"


rule matrix_history:
    input:
        statuses=[str(MATRIX / f"runs/{e}/status.json") for e in ENTRIES],
        archives=[f"archive/{label}/MANIFEST.json" for label in config["compare_to"]],
        documented=str(ROOT / "src/adbench/data/documented.csv"),
        template=str(ROOT / "report/history.html.j2"),
    output:
        html="report/history.html",
        csv="results/history.csv",
    params:
        args=dict(archive_dir="archive", device=config["device"],
                  rel_threshold=config["changes"]["relative_threshold"],
                  timing_threshold=config["changes"]["timing_threshold"], template_dir=str(ROOT / "report")),
    log:
        str(MATRIX / "logs/matrix_history.log"),
    script:
        "../scripts/matrix_history.py"
