"""Build results/comparison.csv from every values.csv and the documented table."""

from __future__ import annotations

import pandas as pd

from ..families import from_dicts
from . import documented
from .summary import summary_table
from .verdict import compare


def measure_comparison(values: list[pd.DataFrame], documented_path: str, families: list[dict],
                       reduced: bool = False) -> dict:
    """Join measured to documented (one row per documented quantity), and the per-family summary:
    outcome counts and reproduction score (written where the rule declares a `summary` output).
    `values`: every registered values.csv; `documented_path`: the table, loaded (and checked) here."""
    measured = pd.concat(values, ignore_index=True) if values else pd.DataFrame(
        columns=["id", "quantity", "value", "note"])
    comparison = compare(documented.load(documented_path), measured, reduced=reduced)
    return {"comparison": comparison, "summary": summary_table(comparison, from_dicts(families))}
