"""Build results/comparison.csv from every values.csv and the documented table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import cache
from ..families import from_dicts
from ..io import read_csv
from . import documented
from .summary import summary_table, with_claims
from .verdict import NOT_JUDGED, compare


def _ids_of(path: str) -> set[str]:
    """The IDs a values.csv speaks for: its folder (results/<ID>/values.csv) and the IDs it names."""
    parts = Path(path).parts
    ids = {parts[1]} if len(parts) > 2 else set()
    try:
        ids |= set(read_csv(path)["id"].astype(str))
    except Exception:  # a truncated or garbled file names no IDs; its folder still does
        pass
    return ids


def withhold(comparison: pd.DataFrame, untrusted: dict[str, str]) -> pd.DataFrame:
    """No verdict from a file that is not what its job wrote: the rows of its IDs become `not judged`,
    without a measured value, and say which file and why (they leave the reproduction score)."""
    out = comparison.copy()
    for path, problem in untrusted.items():
        if Path(path).name != "values.csv":
            continue
        rows = out.id.isin(_ids_of(path))
        out.loc[rows, ["status", "note"]] = [NOT_JUDGED, f"{path} {problem}"]
        out.loc[rows, ["measured", "measured_printed"]] = [None, "—"]
    return out


def untrusted_column(summary: pd.DataFrame, untrusted: dict[str, str], families: list) -> pd.DataFrame:
    """summary.csv's `untrusted` column, only when some file failed the check (a clean run's summary is
    unchanged): per family the files under its IDs' folders, on the 'all' row every one."""
    ids = {f.key: set(f.ids) for f in families}
    def files(key):
        return "; ".join(f"{p}: {why}" for p, why in untrusted.items()
                         if key == "all" or (len(Path(p).parts) > 2 and Path(p).parts[1] in ids.get(key, ())))
    return summary.assign(untrusted=[files(k) for k in summary.family])


def compare_documented(values_path: list[str], files_path: list[str], documented_path: str, families: list[dict],
                       reduced: bool = False, claims_summary: pd.DataFrame | None = None,
                       settings: dict | None = None) -> dict:
    """Join measured to documented (one row per documented quantity), and the per-family summary:
    outcome counts and reproduction score, then the family's claims counts from `claims_summary`
    (results/claims_summary.csv; written where the rule declares a `summary` output).
    `values_path`: every registered values.csv; `files_path`: every registered output, checked against
    the records its jobs wrote (adbench.cache) first; `documented_path`: the table, loaded (and checked) here;
    `settings`: the run's configuration (rows declared under other settings are not judged)."""
    # a file without a record (e.g. from before records were kept) is named in the report, not withheld
    untrusted = {p: why for p, why in cache.check(files_path) if why != cache.NO_RECORD}
    values = [read_csv(p) for p in values_path if p not in untrusted]
    measured = pd.concat(values, ignore_index=True) if values else pd.DataFrame(
        columns=["id", "quantity", "value", "note"])
    comparison = withhold(compare(documented.load(documented_path), measured, reduced=reduced, settings=settings), untrusted)
    fams = from_dicts(families)
    summary = with_claims(summary_table(comparison, fams), claims_summary)
    return {"comparison": comparison,
            "summary": untrusted_column(summary, untrusted, fams) if untrusted else summary}
