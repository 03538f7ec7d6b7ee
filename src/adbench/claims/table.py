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
# scope_note: what a non-`any` scope depends on; finding: why the claim fails, as measured at full size
COLUMNS = ["claim", "id", "doc", "line", "section", "conclusion", "relation", "tolerance", "scope", "size", "model",
           "config", "scope_note", "finding"]
# any: must hold on whatever ran; pretrained: needs the real weights of its model; proxy: judged on a stand-in
# trained here (counted apart); setup: needs something the documents pinned that this run cannot reproduce
SCOPES = ("any", "pretrained", "proxy", "setup")
# independent: the claim says nothing about sizes, so it is judged at reduced smoke sizes too
SIZES = ("independent", "dependent")
DOCS = ("000", "004")
CLAIM_ID = re.compile(r"^[A-Z]\d+\.[a-z0-9][a-z0-9-]*$")


def default_path() -> Path:
    return Path(str(resources.files("adbench") / "data" / "claims.csv"))


# Testable conclusions of the documents that the claims table does not judge, each with the reason:
# the denominator of the coverage statement together with the claims table itself.
LEFT_OUT_COLUMNS = ["doc", "section", "conclusion", "reason"]


def default_left_out_path() -> Path:
    return Path(str(resources.files("adbench") / "data" / "claims_left_out.csv"))


def load_left_out(path: str | Path | None = None) -> pd.DataFrame:
    """src/adbench/data/claims_left_out.csv, every cell text; ValueError names each malformed row."""
    df = pd.read_csv(path or default_left_out_path(), dtype=str, keep_default_na=False)
    if list(df.columns) != LEFT_OUT_COLUMNS:
        raise ValueError(f"claims left-out table columns {list(df.columns)} != {LEFT_OUT_COLUMNS}")
    problems = [f"row {i + 2}: " + ("bad doc " + repr(r.doc) if r.doc not in DOCS else "empty conclusion or reason")
                for i, r in df.iterrows() if r.doc not in DOCS or not r.conclusion.strip() or not r.reason.strip()]
    problems += [f"{c!r}: listed twice" for c in sorted(set(df.conclusion[df.conclusion.duplicated()]))]
    if problems:
        raise ValueError("claims left-out table: " + "; ".join(problems))
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
