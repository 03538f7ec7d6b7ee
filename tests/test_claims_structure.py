"""Every claim can fail, and fails where the documents' sentence says it would.

On the real tables of a full run (tests/data/claims, see claims_fixture.py):
- every relation has two boundary controls: one cell moved just inside its boundary must hold, just past must
  fail, and the margin it reports sits on the matching side of zero, within the check's band;
- every relation compares two computations: the cells it really reads (found by perturbing one cell group at a
  time) must come from at least two of the computations its family declares with `sources(...)`, unless it is
  a definition (shown, never counted) or declared `single` (one observation against the claim's own bound).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from adbench.claims import judged, relation, table
from adbench.claims.helpers import mat, same_float, EPS64
from adbench.claims.registry import RELATIONS, SOURCES, Relation, load_all, source_of
from adbench.outcomes import DEFINITION, FAILS, HOLDS
from claims_fixture import load, needed

load_all()
REAL = load()


def _signature(rel: Relation, tables) -> tuple:
    try:
        out = rel(tables)
    except Exception as e:  # noqa: BLE001 - a relation that raises on a moved cell read that cell
        return ("raised", type(e).__name__)
    b = out.binding
    return (out.verdict, None if b is None else round(b.margin, 12))


def _perturbed(values: pd.Series) -> list[pd.Series]:
    """Cell values that any relation reading them would notice: far off, slightly off, or of another kind."""
    if values.dtype == bool:
        return [~values]
    num = pd.to_numeric(values, errors="coerce")
    if num.notna().all():
        return [num * -3.7 + 1.3, num * (1 + 1e-6) + 1e-300, num + 1, num * math.nan]
    return [values.astype(str) + " (moved)", pd.Series("moved", index=values.index)]


def read_cells(rel: Relation, tables) -> set[tuple[str, str | None, str]]:
    """(table, row key or None, column) of every cell group whose change changes the relation's verdict or margin."""
    base, found = _signature(rel, tables), set()
    for key in rel.needs:
        d = tables[key]
        by = SOURCES.get(key, (None, {}))[0]
        groups = [(None, d.index)] if by is None else [(k, d.index[d[by] == k]) for k in d[by].unique()]
        for col in d.columns:
            if col == by:
                continue
            for rk, idx in groups:
                for moved in _perturbed(d.loc[idx, col]):
                    t = dict(tables)
                    t[key] = d.copy()
                    t[key][col] = t[key][col].astype(object)
                    t[key].loc[idx, col] = moved.values
                    if _signature(rel, t) != base:
                        found.add((key, None if rk is None else str(rk), col))
                        break
    return found


def computations(cells) -> tuple[set[str], list[str]]:
    """The computations behind `cells` (inputs do not count), and the cells no `sources(...)` declares."""
    comps, undeclared = set(), []
    for key, rk, col in cells:
        src = source_of(key, rk, col)
        if src is None:
            undeclared.append(f"{key}[{rk}].{col}" if rk else f"{key}.{col}")
            continue
        comps |= {s.strip() for s in src.split(",") if not s.strip().startswith("input")}
    return comps, undeclared


USED = sorted(set(table.load().relation))


def test_every_registered_relation_judges_a_claim_and_every_table_is_in_the_fixture():
    assert sorted(RELATIONS) == USED, "a relation no claim uses, or a claim without a relation"
    assert set(needed()) <= set(REAL), f"refresh tests/data/claims: {sorted(set(needed()) - set(REAL))}"


@pytest.mark.parametrize("name", USED)
def test_boundary_controls(name):
    rel = RELATIONS[name]
    assert rel.edge is not None, f"{name} declares no boundary controls"
    inside, past = rel.controls(REAL)
    a, b = rel(inside), rel(past)
    assert a.verdict in (HOLDS, DEFINITION), f"just inside: {a.reason}"
    assert b.verdict == FAILS, f"just past: {b.reason}"
    for out, side in ((a, +1), (b, -1)):
        c = out.binding
        if c is not None and c.band > 0:  # the control sits at the boundary the margin measures
            assert side * c.margin >= 0 and abs(c.margin) <= c.band, (side, c)


@pytest.mark.parametrize("name", USED)
def test_relation_compares_independent_computations(name):
    rel = RELATIONS[name]
    comps, undeclared = computations(read_cells(rel, REAL))
    assert not undeclared, f"{name} reads cells whose computation no sources(...) declares: {undeclared}"
    if rel.definition:
        return
    need = 1 if rel.single else 2
    assert len(comps) >= need, f"{name} reads only {sorted(comps)}: it re-checks one computation's arithmetic"


def test_a_tautology_is_caught():
    """Negative control: T2's old test read p and dz from the hand column, both one function's output."""
    def hand_only(t):
        d = t["T2/matrices"]
        p, dz = mat(d, "p").ravel(), mat(d, "dz").ravel()
        return judged("", same_float(dz[1], p[1], 64, EPS64, "dz = p off target"))
    rel = Relation("hand_only", hand_only, ("T2/matrices",))
    comps, undeclared = computations(read_cells(rel, REAL))
    assert not undeclared and len(comps) == 1, comps


def test_the_margin_crosses_zero_where_the_verdict_flips():
    """The binding margin and the verdict agree on every control and on the real tables."""
    for name in USED:
        rel = RELATIONS[name]
        for t in (REAL, *rel.controls(REAL)):
            out = rel(t)
            c = out.binding
            if c is not None and not math.isnan(c.margin):
                ok = c.margin >= 0 if out.verdict in (HOLDS, DEFINITION) else c.margin <= 0
                assert ok, (name, out.verdict, c)


def test_relation_registration_is_checked():
    with pytest.raises(ValueError, match="registered twice"):
        relation()(RELATIONS[USED[0]].fn)
    with pytest.raises(ValueError, match="rests_on"):
        relation(rests_on="luck")
