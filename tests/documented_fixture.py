"""Small documented tables and family lists the verdicts tests build (adbench.verdicts.documented's format)."""

from __future__ import annotations

import csv
from pathlib import Path

from adbench.families import Family
from adbench.verdicts import documented

# A stand-in for the declared families (the real list: adbench.families.declared, from each family.py).
FAMS = [Family("scalar", "Scalar", ("S1", "S2", "S3"), 10), Family("tensor", "Tensor", ("T1",), 20),
        Family("charlm", "Character model", ("C1",), 80)]


def row(**kw) -> dict:
    """One documented row: a valid shape row of X1/q unless `kw` says otherwise."""
    base = {"id": "X1", "quantity": "q", "description": "d", "documented": "1.0", "kind": "shape", "doc": "000",
            "section": "s"}
    return {**base, **kw}


def table(tmp_path: Path, rows: list[dict], columns: list[str] | None = None) -> Path:
    """A documented.csv of `rows` under `tmp_path` (every column the table has, unless `columns` says)."""
    header = columns or documented.COLUMNS
    path = tmp_path / "documented.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([r.get(c, "") for c in header])
    return path
