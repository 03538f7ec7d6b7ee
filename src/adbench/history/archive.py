"""Archived runs: their labels, the all-or-nothing snapshot of results/, the machine they ran on and their
environment line."""

from __future__ import annotations

import json
import re
from collections import Counter
import shutil
import tempfile
from datetime import date
from pathlib import Path

from .. import machine
from ..io import write_json


ARCHIVES = "archive"  # where `snakemake archive` writes this working directory's archives


def archive_dir(entry: str) -> str:
    """The folder of a compare_to entry: a label names archive/<label>; a path (it holds a '/') names the folder
    itself, e.g. the shipped reference archive reference/archive/<label>."""
    return entry if "/" in entry else f"{ARCHIVES}/{entry}"


def default_label(versions: dict, device: str, day: date, extra: tuple[str, ...] = ()) -> str:
    """'2026-11-29_torch2.13.0_transformers5.24.0_cpu' from the environment (plus `extra` packages)."""
    keys = ("torch", "transformers") + tuple(k for k in extra if k not in ("torch", "transformers"))
    v = "_".join(f"{k}{versions.get(k, 'na')}" for k in keys)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{day.isoformat()}_{v}_{device}")


def snapshot(files: list[str], results_dir: str, dest: str, overwrite: bool, info: dict,
             extra: dict[str, str] | None = None) -> dict:
    """Copy CSVs and meta.json under `results_dir` to `dest` (all or nothing); never clobber by default.
    `extra`: {name in the archive: file} copied beside them (a matrix entry's lock: {'lock.txt': path})."""
    dest_path = Path(dest)
    if dest_path.exists() and not overwrite:
        raise FileExistsError(f"archive {dest_path} already exists; choose another archive.label "
                              "or set archive.overwrite: true to replace it")
    results = Path(results_dir)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest_path.name}.", dir=dest_path.parent))
    copied = []
    for f in map(Path, dict.fromkeys(files)):  # a file named twice is copied and listed once
        if f.suffix in (".csv", ".json") and f.exists():
            target = staging / f.relative_to(results)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
            copied.append(str(f.relative_to(results)))
    for name, f in (extra or {}).items():
        shutil.copy2(f, staging / name)
        copied.append(name)
    # the machine the jobs recorded (a run that predates machine identity gets what its meta.json files hold)
    manifest = {"machine": run_machine(staging), **info, "files": sorted(copied)}
    write_json(manifest, staging / "MANIFEST.json")
    if dest_path.exists():
        shutil.rmtree(dest_path)
    staging.rename(dest_path)
    return manifest


def run_machine(root) -> dict:
    """The machine most of a run's jobs recorded (meta.json files under `root`); {} when none did."""
    seen = []
    for path in sorted(Path(root).rglob("meta.json")):
        try:
            m = machine.of_meta(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue  # a stray or partial file says nothing about the machine
        if m:
            seen.append(json.dumps(m, sort_keys=True))
    return json.loads(Counter(seen).most_common(1)[0][0]) if seen else {}


def environment_line(manifest: dict) -> str:
    """'torch 2.13.0, transformers 5.24.0, numpy 2.4.6, cpu; AMD EPYC, 2 logical CPUs, avx2 avx512f, 23.5 GiB; no GPU'
    for tables (`machine unknown` for a run that recorded none)."""
    v = manifest.get("versions", {})
    software = ", ".join([f"{k} {v[k]}" for k in ("torch", "transformers", "numpy") if k in v] +
                         [manifest.get("device", "?")])
    return f"{software}; {machine.line(manifest.get('machine'))}"
