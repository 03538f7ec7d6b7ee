"""The real tables the claims tests judge: a copy of every table some relation reads, from a full default run.

`python tests/claims_fixture.py [results]` refreshes tests/data/claims/ from a results folder (after a
measurement's table changes shape). The tests then move one cell at a time (boundary controls, the structural
test's perturbations); what a relation concludes on the unmoved tables is the full run's own verdict.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd

from adbench.claims.registry import load_all
from adbench.io import read_csv

FIXTURE = Path(__file__).parent / "data" / "claims"


def needed() -> list[str]:
    """Every table key some registered relation reads."""
    return sorted({k for rel in load_all().values() for k in rel.needs})


def load(root: Path = FIXTURE) -> dict[str, pd.DataFrame]:
    """{'S1/gradients': DataFrame, ...}, read as the judge reads results/."""
    return {str(p.relative_to(root).with_suffix("")): read_csv(p) for p in sorted(root.rglob("*.csv"))}


def refresh(results: Path, root: Path = FIXTURE) -> list[str]:
    """Copy the needed tables from `results`; returns the keys it could not find there."""
    missing = []
    for key in needed():
        src = results / f"{key}.csv"
        if not src.exists():
            missing.append(key)
            continue
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, root / f"{key}.csv")
    return missing


if __name__ == "__main__":
    gone = refresh(Path(sys.argv[1] if len(sys.argv) > 1 else "results"))
    print("refreshed", FIXTURE, "; not found:", ", ".join(gone) or "none")
