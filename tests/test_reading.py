"""The reading (docs/reading.csv): every testable statement of the two essays, the coverage line's denominator.

It loads and refuses malformed rows; every claim it names is in the claims table; every claim of the table that is
evidence (not a definition) either judges a statement of the reading or is a project control listed below with
why no essay sentence states it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from adbench.claims import table
from adbench.claims.registry import load_all

ROOT = Path(__file__).resolve().parents[1]
READING = ROOT / "docs" / "reading.csv"

# Claims that judge no sentence of the essays: controls of the project's own instruments. Each says why; they
# count in neither side of the coverage line.
PROJECT_CONTROLS = {
    "D1.tape-matches-torch": "the scalar engine against torch on the depth chains: a control of the instrument D1 "
                             "measures with; its conclusion says the documents state no comparison",
}


def _named(reading: pd.DataFrame) -> set[str]:
    return {c for cell in reading.claims for c in table.reading_claims(cell)}


def unknown_claims(reading: pd.DataFrame, claims: pd.DataFrame) -> list[str]:
    """The claim ids the reading names that the claims table lacks (planned, or misspelt)."""
    return sorted(_named(reading) - set(claims.claim))


def unread_claims(reading: pd.DataFrame, claims: pd.DataFrame, controls: dict[str, str]) -> list[str]:
    """The claims of the table that are evidence (not definitions), judge no statement of the reading and are not
    listed as project controls."""
    relations = load_all()
    evidence = {r.claim for r in claims.itertuples() if not relations[r.relation].definition}
    return sorted(evidence - _named(reading) - set(controls))


def test_the_shipped_reading_loads_covers_both_documents_and_cites_lines_inside_them():
    reading = table.load_reading(READING)
    assert set(reading.doc) == set(table.DOCS) and len(reading) > 100
    seeds = ROOT.parent / "shared" / "seeds"
    files = {p.name[:3]: p for p in seeds.glob("*.txt")}
    if not files:
        pytest.skip("the seed documents are not beside this checkout")
    lengths = {d: len(p.read_text(encoding="utf-8").splitlines()) for d, p in files.items()}
    over = reading[[int(r.line) > lengths[r.doc] for r in reading.itertuples()]]
    assert over.empty, over[["doc", "line", "statement"]]


def test_every_claim_the_reading_names_is_in_the_claims_table():
    missing = unknown_claims(table.load_reading(READING), table.load())
    assert not missing, f"docs/reading.csv names claims that src/adbench/data/claims.csv lacks: {missing}"


def test_the_claims_the_reading_names_that_exist_are_of_its_document():
    """The part of the check above that holds today: each named claim that exists cites the row's document."""
    reading, claims = table.load_reading(READING), table.load().set_index("claim")
    wrong = [(r.doc, r.line, c) for r in reading.itertuples() for c in table.reading_claims(r.claims)
             if c in claims.index and claims.doc[c] != r.doc]
    assert not wrong, f"claims named on a row of another document: {wrong}"


def test_every_claim_that_is_evidence_judges_a_statement_of_the_reading_or_is_a_project_control():
    reading, claims = table.load_reading(READING), table.load()
    left = unread_claims(reading, claims, PROJECT_CONTROLS)
    assert not left, (f"claims that judge no statement of docs/reading.csv: {left}; add each id to the row of the "
                      "statement it judges, or to PROJECT_CONTROLS here with why no essay sentence states it")
    stale = sorted(set(PROJECT_CONTROLS) - set(claims.claim)) + sorted(set(PROJECT_CONTROLS) & _named(reading))
    assert not stale, f"PROJECT_CONTROLS entries that are not claims, or that the reading names: {stale}"


def test_the_checks_see_an_unknown_and_an_unread_claim():
    """Negative control: a reading that names a claim the table lacks, and a table claim the reading omits."""
    claims = table.load()
    first = claims.iloc[0]
    reading = pd.DataFrame([{"doc": first.doc, "line": first.line, "statement": "s", "claims": "S1.no-such-claim",
                             "full_strength": "yes", "reason": ""}], columns=table.READING_COLUMNS)
    assert unknown_claims(reading, claims) == ["S1.no-such-claim"]
    assert first.claim in unread_claims(reading, claims, PROJECT_CONTROLS)


@pytest.mark.parametrize("edit, message", [
    ({"doc": "007"}, "bad doc '007'"),
    ({"line": "0"}, "line '0' must be"),
    ({"statement": " "}, "empty statement"),
    ({"claims": "S1 tape"}, "must read <ID>.<kebab-name>"),
    ({"full_strength": "maybe"}, "must be 'yes' or 'no: <why>'"),
    ({"full_strength": "no:"}, "must be 'yes' or 'no: <why>'"),
    ({"claims": "", "full_strength": "", "reason": ""}, "must say why in reason"),
    ({"claims": "", "full_strength": "yes", "reason": "r"}, "full_strength must be empty"),
])
def test_a_malformed_reading_row_is_refused(tmp_path, edit, message):
    row = {"doc": "000", "line": "8", "statement": "s", "claims": "S1.tape-matches-torch64", "full_strength": "yes",
           "reason": ""}
    path = tmp_path / "reading.csv"
    pd.DataFrame([row, {**row, "statement": "t", **edit}], columns=table.READING_COLUMNS).to_csv(path, index=False)
    with pytest.raises(ValueError, match=f"row 3 \\(.*\\): .*{message}"):
        table.load_reading(path)
    pd.DataFrame([row], columns=table.READING_COLUMNS).to_csv(path, index=False)
    assert len(table.load_reading(path)) == 1  # control: the untouched row loads
