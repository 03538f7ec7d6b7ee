"""The documented-values table: every figure the documents printed, as data, checked at load."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pandas as pd

from .. import settings
from .verdict import KINDS
from .tolerance import parse_printed, parse_spec

# config: the settings the documented value was measured under (adbench.settings): `key=value; key=value`
COLUMNS = ["id", "quantity", "description", "documented", "unit", "kind", "band", "doc", "section", "note",
           "tolerance", "pattern", "config"]
MAX_BAND = 100.0


def default_path() -> Path:
    """Location of the table shipped with the package."""
    return Path(str(resources.files("adbench") / "data" / "documented.csv"))


def _row_errors(r: pd.Series, note_count: dict) -> list[str]:
    """Everything wrong with one row of the table (empty list when it is well formed)."""
    errors = []
    if r.kind not in KINDS:
        errors.append(f"unknown kind {r.kind!r} (expected one of {KINDS})")
    if not r.documented.strip():
        errors.append("empty documented value")
    try:
        spec = parse_spec(r.tolerance)
    except ValueError as e:
        errors.append(str(e))
        spec = None
    if r.kind == "rounding" and (spec is None or spec[0] == "abs"):
        errors.append("a rounding row must declare tolerance sig:<n> or rel:<x>")
    if r.tolerance and not r.note.strip():
        errors.append("a row with a declared tolerance must say why in note")
    if r.pattern:
        if parse_printed(r.documented) is not None:
            errors.append("pattern is only for text rows")
        try:
            re.compile(r.pattern)
        except re.error as e:
            errors.append(f"pattern does not compile: {e}")
    try:
        settings.parse(r.config)
    except Exception as e:  # a ValueError, or YAML that does not parse
        errors.append(f"config: {e}")
    if r.band:
        band = pd.to_numeric(r.band, errors="coerce")
        if not 1 < band <= MAX_BAND:
            errors.append(f"band {r.band!r} must be a number in (1, {MAX_BAND:g}]")
        # A family boilerplate shared verbatim with other rows does not say why *this* row needs a band.
        if not r.note.strip() or note_count[r.note] > 1:
            errors.append("a row with a band must give a reason in note that no other row shares")
    return errors


def validate(df: pd.DataFrame) -> None:
    """Raise ValueError naming every malformed row (id/quantity) and what is wrong with it."""
    if list(df.columns) != COLUMNS:
        raise ValueError(f"documented table columns {list(df.columns)} != {COLUMNS}")
    note_count = df["note"].value_counts().to_dict()
    problems = [f"{r.id}/{r.quantity}: {e}" for _, r in df.iterrows() for e in _row_errors(r, note_count)]
    dup = df[df.duplicated(["id", "quantity"], keep=False)]
    problems += [f"{i}/{q}: duplicate documented row" for i, q in dup[["id", "quantity"]].values.tolist()]
    if problems:
        raise ValueError("documented table: " + "; ".join(problems))


def load(path: str | Path | None = None) -> pd.DataFrame:
    """Read the table with every cell as printed text (no float parsing, no NaN) and validate it."""
    df = pd.read_csv(path or default_path(), dtype=str, keep_default_na=False)
    validate(df)
    return df
