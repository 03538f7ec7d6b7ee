"""Judge every claim against a run's tables: results/claims.csv and its per-family counts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..families import Family, from_dicts
from ..io import read_csv
from . import table
from .relations import FAILS, HOLDS, NEEDS, NOT_JUDGED, RELATIONS, VERDICTS

OUTPUT = ["claim", "id", "scope", "verdict", "reason", "conclusion", "doc", "section"]


def tables_from(paths: list[str], results_dir: str = "results") -> dict[str, pd.DataFrame]:
    """'results/S5/sweep.csv' -> {'S5/sweep': DataFrame} for every CSV among `paths`."""
    out = {}
    for p in map(Path, paths):
        if p.suffix == ".csv":
            rel = p.relative_to(results_dir) if p.is_relative_to(results_dir) else p
            out[str(rel.with_suffix("")).replace("\\", "/")] = read_csv(p)
    return out


def judge_one(claim: pd.Series, tables: dict[str, pd.DataFrame], reduced: bool, model_source: str | None) -> tuple[str, str]:
    """(verdict, reason) for one claim row. The relation runs whenever its tables exist, so a claim
    that is not judged still shows what it would read."""
    missing = [k for k in NEEDS[claim.relation] if k not in tables]
    if missing:
        return NOT_JUDGED, f"not measured: no {', '.join(missing)}"
    outcome, reason = RELATIONS[claim.relation](tables)
    would = f" (on this run it would read {outcome}: {reason})"
    if claim.scope == "pretrained" and model_source != "pretrained":
        return NOT_JUDGED, f"needs the pretrained GPT-2 weights; this run used {model_source or 'no'} GPT-2{would}"
    if claim.scope == "setup":
        return NOT_JUDGED, f"depends on the documents' setup: {claim.note}{would}"
    if reduced and claim["size"] == "dependent":  # claim.size is the Series length
        return NOT_JUDGED, f"measured at reduced sizes and the claim depends on size{would}"
    if outcome == FAILS and claim.note.strip():
        return outcome, f"{reason}. {claim.note}"  # a claim that fails here is a finding: say why
    return outcome, reason


def judge(claims: pd.DataFrame, tables: dict[str, pd.DataFrame], reduced: bool = False,
          model_source: str | None = None) -> pd.DataFrame:
    """One row per claim: OUTPUT columns."""
    rows = []
    for _, c in claims.iterrows():
        v, reason = judge_one(c, tables, reduced, model_source)
        rows.append({"claim": c.claim, "id": c.id, "scope": c.scope, "verdict": v, "reason": reason,
                     "conclusion": c.conclusion, "doc": c.doc, "section": c.section})
    return pd.DataFrame(rows, columns=OUTPUT)


def counts(judged: pd.DataFrame, families: list[Family]) -> pd.DataFrame:
    """Holds / fails / not judged per family and overall (results/claims_summary.csv)."""
    def tally(rows: pd.DataFrame) -> dict:
        return {v: int((rows.verdict == v).sum()) for v in VERDICTS} | {"claims": len(rows)}
    out = [{"family": f.key, **tally(judged[judged.id.isin(f.ids)])} for f in families]
    out.append({"family": "all", **tally(judged)})
    return pd.DataFrame(out, columns=["family", HOLDS, FAILS, NOT_JUDGED, "claims"])


COVERAGE = ["doc", "testable", "judged", HOLDS, FAILS, NOT_JUDGED, "left_out", "judged_share"]


def coverage(judged: pd.DataFrame, left_out: pd.DataFrame) -> pd.DataFrame:
    """Per document and overall: the testable conclusions (claims table + left-out table), how many got a
    verdict here (holds or fails), and the share judged (results/claims_coverage.csv)."""
    def row(doc: str, rows: pd.DataFrame, out: pd.DataFrame) -> dict:
        n = {v: int((rows.verdict == v).sum()) for v in VERDICTS}
        testable = len(rows) + len(out)
        judged_n = n[HOLDS] + n[FAILS]
        return {"doc": doc, "testable": testable, "judged": judged_n, **n, "left_out": len(out),
                "judged_share": round(judged_n / testable, 4) if testable else float("nan")}
    docs = sorted(set(judged.doc) | set(left_out.doc))
    out = [row(d, judged[judged.doc == d], left_out[left_out.doc == d]) for d in docs]
    out.append(row("all", judged, left_out))
    return pd.DataFrame(out, columns=COVERAGE)


def measure_claims(files_path: list[str], table_path: str, left_out_path: str, model: list[dict],
                   families: list[dict], reduced: bool = False) -> dict:
    """rule report_claims: judge the claims table (`table_path`) against every registered output (`files_path`);
    `left_out_path`: the testable conclusions the table leaves out (the coverage's denominator with it);
    `model`: [results/gpt2/model.json] when the run has a GPT-2 family (which weights ran)."""
    judged = judge(table.load(table_path), tables_from(files_path), reduced=reduced,
                   model_source=model[0].get("model_source") if model else None)
    return {"claims": judged, "claims_summary": counts(judged, from_dicts(families)),
            "claims_coverage": coverage(judged, table.load_left_out(left_out_path))}
