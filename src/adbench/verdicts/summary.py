"""Outcome counts and the reproduction score, per family and overall (results/summary.csv, the report's summary),
beside the claims counts of the same family (results/claims_summary.csv)."""

from __future__ import annotations

import pandas as pd

from ..families import Family
from .verdict import STATUSES, score


def tally(statuses: pd.Series) -> dict:
    """Counts of the five outcomes and the reproduction score (judged rows that match / judged rows)."""
    matched, judged = score(statuses)
    return {"counts": {s: int((statuses == s).sum()) for s in STATUSES}, "matched": matched, "judged": judged,
            "score": None if judged == 0 else matched / judged}


def family_summary(comparison: pd.DataFrame, families: list[Family]) -> list[dict]:
    """Per family: outcome counts, reproduction score and which IDs have rows."""
    out = []
    for fam in families:
        rows = comparison[comparison.id.isin(fam.ids)]
        out.append({"key": fam.key, "title": fam.title, "ids": fam.ids, "rows": len(rows), **tally(rows.status)})
    return out


def summary_table(comparison: pd.DataFrame, families: list[Family]) -> pd.DataFrame:
    """One row per family and one 'all' row: outcome counts, matched, judged and score (for a CSV)."""
    rows = [{"family": f["key"], **f["counts"], "matched": f["matched"], "judged": f["judged"], "score": f["score"]}
            for f in family_summary(comparison, families)]
    total = tally(comparison.status)
    rows.append({"family": "all", **total["counts"], "matched": total["matched"], "judged": total["judged"],
                 "score": total["score"]})
    return pd.DataFrame(rows)


# summary.csv's claims columns, from results/claims_summary.csv's (adbench.claims.judge.COUNTS)
CLAIMS_COLUMNS = {"holds": "claims_holds", "fails": "claims_fails", "not judged": "claims_not_judged",
                  "definition": "claims_definition", "proxy holds": "claims_proxy_holds",
                  "proxy fails": "claims_proxy_fails", "fragile": "claims_fragile", "claims": "claims"}


def with_claims(summary: pd.DataFrame, claims_summary: pd.DataFrame | None) -> pd.DataFrame:
    """summary.csv with the claims counts of each family (and of 'all') as more columns, so each row keeps one
    family: `claims_holds`, `claims_fails`, `claims_not_judged`, `claims_definition`, the proxies'
    `claims_proxy_holds` and `claims_proxy_fails`, `claims_fragile` and `claims` (their total). A family without
    claims, a run that judged none (`claims_summary` None), or a count an older summary lacks reads 0."""
    out = summary.copy()
    counts = pd.DataFrame(columns=["family", *CLAIMS_COLUMNS]) if claims_summary is None else claims_summary
    by_family = counts.set_index("family")
    for src, col in CLAIMS_COLUMNS.items():
        out[col] = [int(by_family.at[f, src]) if f in by_family.index and src in by_family else 0
                    for f in out.family]
    return out
