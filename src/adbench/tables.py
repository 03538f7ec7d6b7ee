"""The long `values` table every measurement returns (one row per documented quantity)."""

from __future__ import annotations

import pandas as pd


def values_table(mid: str, items: list[tuple[str, object]], notes: dict | None = None,
                 model_source: str | None = None) -> pd.DataFrame:
    """Rows (id, quantity, value, note[, model_source]) for measurement `mid`."""
    notes = notes or {}
    rows = [{"id": mid, "quantity": q, "value": v, "note": notes.get(q, "")} for q, v in items]
    if model_source is not None:
        for r in rows:
            r["model_source"] = model_source
    return pd.DataFrame(rows)
