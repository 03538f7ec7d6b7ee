"""Strict mode (config `strict: true`, `make report STRICT=1`): the run fails, after the report is written,
when a claim that held in a compared run fails now, or when a documented row is MISMATCH or MISSING.

`check` is the pure decision: from this run's comparison table and its claims against each compared
archive (results/claims_changes.csv), the problems, one line each, and notes on what could not be
checked. A claim counts only as a regression against a compared run (the issue's "a claim fails that
held in the compared run"): with nothing to compare to (compare_to empty), or against an archive that
recorded no claims, failing claims are noted, not counted, and only the rows decide.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..outcomes import FAILS, HOLDS, LOUD

PREFIX = "adbench strict:"


@dataclass
class Check:
    """The outcome: `problems` (one line per claim regression and per MISMATCH / MISSING row; the run
    fails when there is any) and `notes` (what was not checked, claims that fail but are no regression)."""
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def regressions(claims_changes: pd.DataFrame, fragile: bool = False) -> pd.DataFrame:
    """Rows of claims_changes.csv where a claim held in the compared run and fails in this one; `fragile`: the
    ones fragile in either run (two machines may disagree on those: noted, not counted) instead of the rest."""
    flipped = claims_changes[(claims_changes.old == HOLDS) & (claims_changes.new == FAILS)]
    is_fragile = flipped.get("fragile", pd.Series("", index=flipped.index)).fillna("").astype(str) != ""
    return flipped[is_fragile if fragile else ~is_fragile]


def loud_rows(comparison: pd.DataFrame) -> pd.DataFrame:
    """The documented rows this run did not reproduce (MISMATCH) or did not produce (MISSING)."""
    return comparison[comparison.status.isin(LOUD)]


def _text(x) -> str:
    return "" if pd.isna(x) else " ".join(str(x).split())


def check(comparison: pd.DataFrame, claims_changes: pd.DataFrame, compared: list[str],
          claims: pd.DataFrame | None = None) -> Check:
    """Strict mode's decision. `compared`: the archives of compare_to (their labels, in order);
    `claims`: this run's claims.csv, for the note on failing claims that are no regression."""
    out = Check()
    changes = claims_changes.fillna("")
    if not compared:
        out.notes.append("no compared run (compare_to is empty): no claim can regress, only MISMATCH and "
                         "MISSING rows count")
    for label in compared:
        if (changes[changes.archive == label].status == "unrecorded").any():
            out.notes.append(f"archive {label}: no claims recorded in that run, so no claim is checked against it")
    regressed = regressions(changes)
    for claim, rows in regressions(changes, fragile=True).groupby("claim", sort=False):
        out.notes.append(f"fragile claim {claim} fails now and held in {', '.join(rows.archive)} (not counted: "
                         f"{_text(rows.iloc[0].fragile)})")
    for claim, rows in regressed.groupby("claim", sort=False):
        r = rows.iloc[0]
        out.problems.append(f"claim {claim} ({r.id}) fails now and held in {', '.join(rows.archive)}: "
                            f"{_text(r.new_reason)}")
    for r in loud_rows(comparison).itertuples(index=False):
        note = _text(getattr(r, "note", ""))
        measured = _text(getattr(r, "measured_printed", r.measured)) or "—"
        out.problems.append(f"{r.status} {r.id} {r.quantity}: documented {_text(r.documented)}, measured {measured}"
                            + (f" ({note})" if note else ""))
    if claims is not None:
        flipped = set(regressed.claim) | set(regressions(changes, fragile=True).claim)
        failing = [c for c in claims.claim[claims.verdict == FAILS] if c not in flipped]
        if failing:
            out.notes.append(f"{len(failing)} claim(s) fail in this run without a regression against a compared run "
                             f"(not counted): {', '.join(failing)}")
    return out


def lines(result: Check, report: str = "report/report.html") -> list[str]:
    """What strict mode prints: one line per note and per problem, then a closing line."""
    out = [f"{PREFIX} note: {n}" for n in result.notes] + [f"{PREFIX} {p}" for p in result.problems]
    if result.ok:
        return out + [f"{PREFIX} passed: no claim regressed and no row is MISMATCH or MISSING"]
    n_claims = sum(p.startswith("claim ") for p in result.problems)
    n_rows = len(result.problems) - n_claims
    return out + [f"{PREFIX} FAILED: {n_claims} claim(s) that held in the compared run fail now, {n_rows} row(s) "
                  f"MISMATCH or MISSING (the report is written: {report})"]


def _table(path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def run(comparison_path: str, claims_changes_path: str, claims_path: str, compared: list[str], stamp_path: str,
        report: str = "report/report.html", echo=print) -> bool:
    """rule render_strict_check: print (through `echo`) every line of the check; on success write them to
    `stamp_path` (atomically), on failure write nothing. True when the check passed."""
    from ..io import write_bytes

    result = check(_table(comparison_path), _table(claims_changes_path), compared, _table(claims_path))
    text = lines(result, str(Path(report).resolve()))
    for line in text:
        echo(line)
    if result.ok:
        write_bytes(("\n".join(text) + "\n").encode("utf-8"), stamp_path)
    return result.ok
