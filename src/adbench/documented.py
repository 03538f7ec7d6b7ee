"""The documented-values table: every figure the documents printed, as data."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from .compare import KINDS

COLUMNS = ["id", "quantity", "description", "documented", "unit", "kind", "band", "doc", "section", "note",
           "tolerance", "pattern"]  # two trailing columns of the issue-10 interface (H10a owns their use)


def default_path() -> Path:
    """Location of the table shipped with the package."""
    return Path(str(resources.files("adbench") / "data" / "documented.csv"))


def load(path: str | Path | None = None) -> pd.DataFrame:
    """Read the table with every cell as printed text (no float parsing, no NaN)."""
    df = pd.read_csv(path or default_path(), dtype=str, keep_default_na=False)
    if list(df.columns) != COLUMNS:
        raise ValueError(f"documented table columns {list(df.columns)} != {COLUMNS}")
    bad = sorted(set(df["kind"]) - set(KINDS))
    if bad:
        raise ValueError(f"documented table has unknown kinds {bad}")
    bands = df.loc[df.band != "", "band"]
    if len(bands) and not (pd.to_numeric(bands, errors="coerce") > 1).all():
        raise ValueError("documented table: band must be a number > 1 (the allowed factor) or empty")
    if (df.loc[df.band != "", "note"] == "").any():
        raise ValueError("documented table: a row with a band must say why in note")
    dup = df[df.duplicated(["id", "quantity"], keep=False)]
    if len(dup):
        raise ValueError(f"duplicate documented rows: {dup[['id', 'quantity']].values.tolist()}")
    return df
