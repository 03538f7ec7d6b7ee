"""Judge every claim against a run's tables: results/claims.csv, its per-family counts and the coverage."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from .. import settings as run_settings
from ..families import Family, from_dicts
from ..io import read_csv
from ..outcomes import DEFINITION, FAILS, HOLDS, NOT_JUDGED
from . import table
from .registry import Outcome, Relation, load_all

OUTPUT = ["claim", "id", "scope", "verdict", "fragile", "margin", "margin_unit", "basis", "reason", "conclusion",
          "tolerance", "doc", "line", "section"]


def load_judged(path: str | Path) -> pd.DataFrame:
    """results/claims.csv as written: every cell text (document ids such as 000 stay as printed)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def tables_from(paths: list[str], results_dir: str = "results") -> dict[str, pd.DataFrame]:
    """'results/X1/table.csv' -> {'X1/table': DataFrame} for every CSV among `paths`."""
    out = {}
    for p in map(Path, paths):
        if p.suffix == ".csv":
            rel = p.relative_to(results_dir) if p.is_relative_to(results_dir) else p
            out[str(rel.with_suffix("")).replace("\\", "/")] = read_csv(p)
    return out


@dataclass(frozen=True)
class Run:
    """What the judge needs to know about the run besides its tables: reduced sizes, which weights each model
    record says ran (model name -> its model_source, e.g. 'random-init'), and the configuration (None: not known,
    judged as configured)."""
    reduced: bool = False
    models: Mapping[str, str] | None = None
    settings: Mapping[str, Any] | None = None


def fragility(rel: Relation, out: Outcome) -> str:
    """Why a judged claim could read otherwise on another machine ('' when it would not)."""
    if rel.rests_on == "timing":
        return "rests on timing (host and load dependent)"
    if rel.rests_on == "rounding":
        return "rests on last-bit rounding"
    b = out.binding
    if b is not None and b.near_edge:
        return f"margin {b.margin:+.3g} {b.unit} within its band of {b.band:g} ({b.what})"
    return ""


def _margin_text(out: Outcome) -> str:
    b = out.binding
    return "exact" if b is None else f"margin {b.margin:+.3g} {b.unit} ({b.what})"


def _unjudged(claim: pd.Series, run: Run, model_source: str) -> str:
    """Why a claim whose relation ran is not judged here ('' when it is)."""
    if claim.scope == "pretrained" and model_source != "pretrained":
        return f"needs the pretrained {claim.model or 'model'} weights; this run used {model_source or 'none'}"
    if claim.scope == "setup":
        return f"depends on the documents' setup: {claim.scope_note}"
    differs = run_settings.not_judged_reason(claim.config, run.settings)
    if differs:
        return differs
    if run.reduced and claim["size"] == "dependent":  # claim.size is the Series length
        return "measured at reduced sizes and the claim depends on size"
    return ""


def _basis(claim: pd.Series, model_source: str) -> str:
    if claim.scope == "proxy":
        return f"proxy: {claim.scope_note}"
    if claim.scope == "any" and claim.model and model_source and model_source != "pretrained":
        return f"judged on {model_source} {claim.model} weights"
    return ""


def judge_one(claim: pd.Series, tables: Mapping[str, pd.DataFrame], run: Run, relations: Mapping[str, Relation]) -> dict:
    """One row of results/claims.csv. The relation runs whenever its tables exist, so a claim that is not
    judged still shows what its test would read; a relation that raises is not judged, with the error."""
    model_source = (run.models or {}).get(claim.model, "") if claim.model else ""
    base = {"claim": claim.claim, "id": claim.id, "scope": claim.scope, "fragile": "", "margin": math.nan,
            "margin_unit": "", "basis": _basis(claim, model_source), "conclusion": claim.conclusion,
            "tolerance": claim.tolerance, "doc": claim.doc, "line": claim.line, "section": claim.section}
    rel = relations[claim.relation]
    missing = [k for k in rel.needs if k not in tables]
    if missing:
        return {**base, "verdict": NOT_JUDGED, "reason": f"not measured: no {', '.join(missing)}"}
    try:
        out = rel(tables)
    except Exception as e:  # a table of an unexpected shape: say so, keep the report
        return {**base, "verdict": NOT_JUDGED, "reason": f"the relation failed on this run's tables: "
                                                           f"{type(e).__name__}: {e}"}
    why = _unjudged(claim, run, model_source)
    if why:
        return {**base, "verdict": NOT_JUDGED, "reason": f"{why} (on this run it would read {out.verdict}: "
                                                           f"{out.reason}; {_margin_text(out)})"}
    reason = f"{out.reason}; {_margin_text(out)}"  # a failure is explained by this run's numbers only
    b = out.binding
    return {**base, "verdict": out.verdict, "reason": reason, "fragile": fragility(rel, out),
            "margin": math.nan if b is None else b.margin, "margin_unit": "exact" if b is None else b.unit}


def judge(claims: pd.DataFrame, tables: Mapping[str, pd.DataFrame], run: Run = Run()) -> pd.DataFrame:
    """One row per claim: OUTPUT columns."""
    relations = load_all()
    rows = [judge_one(c, tables, run, relations) for _, c in claims.iterrows()]
    return pd.DataFrame(rows, columns=OUTPUT)


COUNTS = [HOLDS, FAILS, NOT_JUDGED, DEFINITION, "proxy holds", "proxy fails", "fragile", "claims"]


def tally(rows: pd.DataFrame) -> dict:
    """The counts of one set of claims: proxies (judged on a stand-in model) apart from the rest."""
    proxy = rows.scope == "proxy"
    own = rows[~proxy]
    return {HOLDS: int((own.verdict == HOLDS).sum()), FAILS: int((own.verdict == FAILS).sum()),
            NOT_JUDGED: int((rows.verdict == NOT_JUDGED).sum()), DEFINITION: int((rows.verdict == DEFINITION).sum()),
            "proxy holds": int((rows[proxy].verdict == HOLDS).sum()),
            "proxy fails": int((rows[proxy].verdict == FAILS).sum()),
            "fragile": int((rows.fragile.fillna("") != "").sum()), "claims": len(rows)}


def counts(judged: pd.DataFrame, families: list[Family]) -> pd.DataFrame:
    """Per family and overall (results/claims_summary.csv)."""
    out = [{"family": f.key, **tally(judged[judged.id.isin(f.ids)])} for f in families]
    out.append({"family": "all", **tally(judged)})
    return pd.DataFrame(out, columns=["family", *COUNTS])


# How one statement of the reading stands on this run, in the order the first that applies is named:
# no claim named; a named claim not in the claims table yet (planned); a named claim not judged here; a definition;
# judged on a proxy; judged, but the reading says the claims do not test the essay's own strength; else judged at
# full strength: holds when every claim holds, fails when one fails.
NO_CLAIM, PLANNED, WEAK = "no claim", "planned", "not full strength"
STANDINGS = (NO_CLAIM, PLANNED, NOT_JUDGED, DEFINITION, "proxy", WEAK, HOLDS, FAILS)
COVERAGE = ["doc", "statements", "judged_full_strength", *STANDINGS, "share"]


def standing(claim_ids: list[str], full_strength: str, judged: pd.DataFrame) -> str:
    """One reading row's standing (STANDINGS) given the judged claims (results/claims.csv rows, by claim)."""
    if not claim_ids:
        return NO_CLAIM
    if any(c not in judged.index for c in claim_ids):
        return PLANNED
    rows = judged.loc[claim_ids]
    for verdict in (NOT_JUDGED, DEFINITION):
        if (rows.verdict == verdict).any():
            return verdict
    if (rows.scope == "proxy").any():
        return "proxy"
    if full_strength != "yes":
        return WEAK
    return FAILS if (rows.verdict == FAILS).any() else HOLDS


def standings(judged: pd.DataFrame, reading: pd.DataFrame) -> pd.DataFrame:
    """The reading with each statement's `standing` on this run (the report lists those not counted)."""
    by_claim = judged.set_index("claim")
    out = reading.copy()
    out["standing"] = [standing(table.reading_claims(r.claims), r.full_strength, by_claim)
                       for r in reading.itertuples()]
    return out


def coverage(judged: pd.DataFrame, reading: pd.DataFrame) -> pd.DataFrame:
    """Per document and overall: the statements of the reading (the denominator), how many are judged at full
    strength (holds or fails, the numerator), each standing, and the share."""
    rows = standings(judged, reading)

    def one(doc: str, part: pd.DataFrame) -> dict:
        n = {s: int((part.standing == s).sum()) for s in STANDINGS}
        full = n[HOLDS] + n[FAILS]
        return {"doc": doc, "statements": len(part), "judged_full_strength": full, **n,
                "share": round(full / len(part), 4) if len(part) else float("nan")}
    out = [one(d, rows[rows.doc == d]) for d in sorted(set(rows.doc))]
    out.append(one("all", rows))
    return pd.DataFrame(out, columns=COVERAGE)


def judge_claims(files_path: list[str], table_path: str, reading_path: str, model: list[dict],
                 families: list[dict], reduced: bool = False, settings: dict | None = None,
                 models: list[str] = ()) -> dict:
    """rule verdicts_claims: judge the claims table (`table_path`) against every registered output (`files_path`);
    `reading_path`: docs/reading.csv, every testable statement of the documents (the coverage's denominator);
    `model`: the model records the families declared ({'model_source': ...} each), `models` their names (a
    claim's `model`); `settings`: the run's configuration."""
    sources = {name: rec.get("model_source", "") for name, rec in zip(models, model)}
    run = Run(reduced=reduced, models=sources, settings=settings)
    judged = judge(table.load(table_path), tables_from(files_path), run)
    return {"claims": judged, "claims_summary": counts(judged, from_dicts(families)),
            "claims_coverage": coverage(judged, table.load_reading(reading_path))}
