"""Archive a run's results and say what moved between an archived run and this one."""

from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
from datetime import date
from pathlib import Path

import pandas as pd

from ..tolerance import is_printed_zero, parse_printed
from ..io import read_csv, write_json

_PAIR = re.compile(r"^(.*)_(min|max)(_[a-z]+)?$")


def default_label(versions: dict, device: str, day: date) -> str:
    """'2026-11-29_torch2.13.0_transformers5.24.0_cpu' from the environment."""
    v = "_".join(f"{k}{versions.get(k, 'na')}" for k in ("torch", "transformers"))
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{day.isoformat()}_{v}_{device}")


def snapshot(files: list[str], results_dir: str, dest: str, overwrite: bool, info: dict) -> dict:
    """Copy CSVs and meta.json under `results_dir` to `dest` (all or nothing); never clobber by default."""
    dest_path = Path(dest)
    if dest_path.exists() and not overwrite:
        raise FileExistsError(f"archive {dest_path} already exists; choose another archive.label "
                              "or set archive.overwrite: true to replace it")
    results = Path(results_dir)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest_path.name}.", dir=dest_path.parent))
    copied = []
    for f in map(Path, files):
        if f.suffix in (".csv", ".json") and f.exists():
            target = staging / f.relative_to(results)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
            copied.append(str(f.relative_to(results)))
    manifest = {**info, "files": sorted(copied)}
    write_json(manifest, staging / "MANIFEST.json")
    if dest_path.exists():
        shutil.rmtree(dest_path)
    staging.rename(dest_path)
    return manifest


def environment_line(manifest: dict) -> str:
    """'torch 2.13.0, transformers 5.24.0, numpy 2.4.6, cpu' for tables."""
    v = manifest.get("versions", {})
    return ", ".join([f"{k} {v[k]}" for k in ("torch", "transformers", "numpy") if k in v] + [manifest.get("device", "?")])


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _intervals(df: pd.DataFrame) -> dict:
    """(id, base quantity) -> (min, max) for timing quantities that come in _min/_max pairs."""
    out: dict = {}
    for r in df.itertuples(index=False):
        m = _PAIR.match(r.quantity)
        if m and _num(r.measured) is not None:
            key = (r.id, m.group(1) + (m.group(3) or ""))
            lo, hi = out.get(key, (math.inf, -math.inf))
            out[key] = (min(lo, _num(r.measured)), max(hi, _num(r.measured)))
    return out


def moved(kind: str, documented: str, old, new, rel_threshold: float, spans=None) -> tuple[bool, str]:
    """Whether one quantity moved beyond its tolerance, and the rule applied."""
    a, b = _num(old), _num(new)
    if a is None or b is None:
        return (str(old) != str(new)), "text differs" if str(old) != str(new) else "same text"
    if kind in ("exact", "rounding", "derived", "property"):
        parsed = parse_printed(documented)
        tol = 0.0 if not parsed or is_printed_zero(documented) else parsed[1]  # a printed zero means exactly 0
        return abs(b - a) > tol, f"±{tol:.1e} (printed digits)"
    if kind == "timing" and spans is not None:
        (lo1, hi1), (lo2, hi2) = spans
        return (hi1 < lo2 or hi2 < lo1), f"process-run spreads [{lo1:.4g}, {hi1:.4g}] vs [{lo2:.4g}, {hi2:.4g}]"
    scale = max(abs(a), abs(b))
    rel = 0.0 if scale == 0 else abs(b - a) / scale
    return rel > rel_threshold, f"relative change {rel:.1%} vs threshold {rel_threshold:.0%}"


def changes(old: pd.DataFrame, new: pd.DataFrame, archive: str, old_env: str, new_env: str,
            rel_threshold: float) -> pd.DataFrame:
    """Every documented quantity of two comparison tables with whether it moved."""
    spans_old, spans_new = _intervals(old[old.kind == "timing"]), _intervals(new[new.kind == "timing"])
    merged = old.merge(new, on=["id", "quantity"], how="outer", suffixes=("_old", "_new"))
    rows = []
    for r in merged.itertuples(index=False):
        kind = r.kind_new if isinstance(r.kind_new, str) else r.kind_old
        doc = r.documented_new if isinstance(r.documented_new, str) else r.documented_old
        m = _PAIR.match(r.quantity)
        key = (r.id, m.group(1) + (m.group(3) or "")) if m else None
        spans = (spans_old[key], spans_new[key]) if key in spans_old and key in spans_new else None
        did, rule = moved(kind, doc, r.measured_old, r.measured_new, rel_threshold, spans)
        rows.append({"archive": archive, "id": r.id, "quantity": r.quantity, "kind": kind, "documented": doc,
                     "old": r.measured_old, "new": r.measured_new, "moved": bool(did), "rule": rule,
                     "old_env": old_env, "new_env": new_env})
    return pd.DataFrame(rows, columns=["archive", "id", "quantity", "kind", "documented", "old", "new",
                                       "moved", "rule", "old_env", "new_env"])


def measure_changes(comparison: str, archives: list[str], rel_threshold: float, current_env: dict) -> dict:
    """results/changes.csv: this run against each archive listed in compare_to."""
    new = read_csv(comparison)
    frames = []
    for path in archives:
        manifest = json.loads((Path(path) / "MANIFEST.json").read_text())
        frames.append(changes(read_csv(Path(path) / "comparison.csv"), new, Path(path).name,
                              environment_line(manifest), environment_line(current_env), rel_threshold))
    cols = ["archive", "id", "quantity", "kind", "documented", "old", "new", "moved", "rule", "old_env", "new_env"]
    return {"changes": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)}
