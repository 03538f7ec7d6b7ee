"""The claims table: one row per conclusion of the documents, as data, checked at load."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pandas as pd

from .. import settings
from .registry import load_all

# line: where the seed document states the conclusion (doc:line); model: the model record whose weights the
# tables come from ('' when none); config: the settings the conclusion was drawn under (adbench.settings);
# scope_note: what a non-`any` scope depends on. Why a claim fails is its relation's reason on the run, never
# pre-written text (a reference run's counts would read as this run's)
COLUMNS = ["claim", "id", "doc", "line", "section", "conclusion", "relation", "tolerance", "scope", "size", "model",
           "config", "scope_note"]
# any: must hold on whatever ran; pretrained: needs the real weights of its model; proxy: judged on a stand-in
# trained here (counted apart); setup: needs something the documents pinned that this run cannot reproduce
SCOPES = ("any", "pretrained", "proxy", "setup")
# independent: the claim says nothing about sizes, so it is judged at reduced smoke sizes too
SIZES = ("independent", "dependent")
DOCS = ("000", "004")
CLAIM_ID = re.compile(r"^[A-Z]\d+\.[a-z0-9][a-z0-9-]*$")


def default_path() -> Path:
    return Path(str(resources.files("adbench") / "data" / "claims.csv"))


# The reading (docs/reading.csv, docs/reading.md): every statement of the two essays that a CPU run can test, each
# with the claims that judge it (space-separated ids; empty when none does), whether they test the essay's own
# strength (`yes`, or `no: <why>`; empty when no claim is named) and why nothing judges it (`reason`). It is the
# denominator of the coverage line; it lives beside the documents' reading, not in the package, so the rule
# passes its path.
READING_COLUMNS = ["doc", "line", "statement", "claims", "full_strength", "reason"]


def reading_claims(cell: str) -> list[str]:
    """The claim ids one reading row names ('' -> [])."""
    return str(cell).split()


def _reading_errors(r: pd.Series) -> list[str]:
    errors = []
    if r.doc not in DOCS:
        errors.append(f"bad doc {r.doc!r} (expected one of {DOCS})")
    if not r.line.isdigit() or int(r.line) < 1:
        errors.append(f"line {r.line!r} must be the seed document's line number")
    if not r.statement.strip():
        errors.append("empty statement")
    ids = reading_claims(r.claims)
    bad = [c for c in ids if not CLAIM_ID.match(c)]
    if bad:
        errors.append(f"claim ids {bad} must read <ID>.<kebab-name>, separated by spaces")
    if ids and not (r.full_strength == "yes" or (r.full_strength.startswith("no:") and r.full_strength[3:].strip())):
        errors.append(f"full_strength {r.full_strength!r} must be 'yes' or 'no: <why>'")
    if not ids and r.full_strength:
        errors.append("full_strength must be empty when no claim is named")
    if not ids and not r.reason.strip():
        errors.append("a statement no claim judges must say why in reason")
    return errors


def load_reading(path: str | Path) -> pd.DataFrame:
    """docs/reading.csv, every cell text; ValueError names each malformed row (by its CSV line) and the fix."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(df.columns) != READING_COLUMNS:
        raise ValueError(f"reading {path}: columns {list(df.columns)} != {READING_COLUMNS}")
    problems = [f"row {i + 2} ({r.doc}:{r.line}): {e}" for i, r in df.iterrows() for e in _reading_errors(r)]
    dup = df[df.duplicated(["doc", "line", "statement"])]
    problems += [f"row {i + 2} ({r.doc}:{r.line}): statement listed twice" for i, r in dup.iterrows()]
    if problems:
        raise ValueError(f"reading {path}: " + "; ".join(problems))
    return df


def _row_errors(r: pd.Series) -> list[str]:
    errors = []
    if not CLAIM_ID.match(r.claim):
        errors.append("claim id must read <ID>.<kebab-name>")
    elif r.claim.split(".")[0] != r.id:
        errors.append(f"claim id does not start with its measurement id {r.id!r}")
    if r.relation not in load_all():
        errors.append(f"unknown relation {r.relation!r}")
    if r.scope not in SCOPES:
        errors.append(f"bad scope {r.scope!r} (expected one of {SCOPES})")
    if r["size"] not in SIZES:  # r.size is the Series length
        errors.append(f"bad size {r['size']!r} (expected one of {SIZES})")
    if r.doc not in DOCS:
        errors.append(f"bad doc {r.doc!r} (expected one of {DOCS})")
    if not r.conclusion.strip():
        errors.append("empty conclusion")
    if not r.tolerance.strip():
        errors.append("empty tolerance (say 'exact' or the rounding scale, and why)")
    if r.scope != "any" and not r.scope_note.strip():
        errors.append(f"a {r.scope} claim must say in scope_note what it depends on")
    if r.scope == "pretrained" and not r.model.strip():
        errors.append("a pretrained claim must name its model")
    if not r.line.isdigit() or int(r.line) < 1:
        errors.append(f"line {r.line!r} must be the seed document's line number")
    try:
        settings.parse(r.config)
    except Exception as e:  # a ValueError, or YAML that does not parse
        errors.append(f"config: {e}")
    return errors


def validate(df: pd.DataFrame) -> None:
    """Raise ValueError naming every malformed row and what is wrong with it."""
    if list(df.columns) != COLUMNS:
        raise ValueError(f"claims table columns {list(df.columns)} != {COLUMNS}")
    problems = [f"{r.claim or '<no id>'}: {e}" for _, r in df.iterrows() for e in _row_errors(r)]
    problems += [f"{c}: duplicate claim id" for c in sorted(set(df.claim[df.claim.duplicated()]))]
    if problems:
        raise ValueError("claims table: " + "; ".join(problems))


def load(path: str | Path | None = None) -> pd.DataFrame:
    """Read every cell as text (no NaN) and validate."""
    df = pd.read_csv(path or default_path(), dtype=str, keep_default_na=False)
    validate(df)
    return df
