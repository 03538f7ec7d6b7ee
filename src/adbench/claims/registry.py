"""The claims registry, and the helpers every family's `claims.py` writes its relations with.

A relation is a small pure function over a run's tables ({"X1/table": DataFrame, ...}: the CSVs under
results/<ID>/, keyed as `results/` names them). It returns an Outcome: the verdict, a reason that prints
the numbers the verdict rests on, and the checks behind it. Each check carries its margin, the distance of
the data from its boundary in the check's own unit (positive on the holding side), and the band within
which that margin would not survive another machine (the claim is then `fragile`).

`@relation(*tables, ...)` registers a function under its own name with the tables it reads (a run without
one reads "not measured" instead of raising) and:
- `edge`: its two boundary controls, each one cell of a real table moved: just inside the boundary the
  relation must hold, just past it (the documents' contradiction) it must fail;
- `rests_on`: "timing" or "rounding" when the verdict rests on a stopwatch or on last-bit rounding: always
  fragile, two machines may disagree;
- `definition`: it re-checks the arithmetic that produced its own number; shown, never counted as evidence;
- `single`: it reads one computation's observation against the claim's own stated bound (there is no second
  path to compare it with); every other relation compares two computations.
`sources(...)` declares which computation produced each cell a relation reads; the structural test
(tests/test_claims_structure.py) finds the cells each relation really reads and requires two computations.
`load_all()` imports the modules each family declares in its family.py (`claims`); importing one registers
its relations.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Callable, Mapping

import pandas as pd

from ..outcomes import DEFINITION, FAILS, HOLDS

Tables = Mapping[str, pd.DataFrame]
RESTS_ON = ("", "timing", "rounding")


@dataclass(frozen=True)
class Check:
    """One comparison of a relation. `margin`: NaN for an exact check (a flag, an error type, a count that
    must be zero), which has no distance to speak of; `band` 0: no band (exact checks, counts)."""
    what: str
    ok: bool
    margin: float = math.nan
    unit: str = ""
    band: float = 0.0

    def rank(self) -> float:
        """The margin in bands: checks compare on this scale. A check without a band has no scale to compare: it
        binds only when it fails."""
        if self.band > 0:
            return self.margin / self.band
        return math.inf if self.ok else -math.inf

    @property
    def near_edge(self) -> bool:
        return self.band > 0 and abs(self.margin) <= self.band


@dataclass(frozen=True)
class Outcome:
    verdict: str
    reason: str
    checks: tuple[Check, ...] = ()

    @property
    def binding(self) -> Check | None:
        """The check that says how close the claim came: among the failing checks (or, when every check holds,
        among all) the one nearest its boundary in bands, or furthest past it; None when all are exact."""
        pool = [c for c in self.checks if not c.ok] or list(self.checks)
        numeric = [c for c in pool if not math.isnan(c.margin)]
        return min(numeric, key=Check.rank) if numeric else None  # ties: the first


def judged(reason: str, *checks: Check) -> Outcome:
    """HOLDS when every check holds."""
    return Outcome(HOLDS if checks and all(c.ok for c in checks) else FAILS, reason, tuple(checks))


@dataclass(frozen=True)
class Move:
    """Set `column` of `table`, in the rows matching every `where` item (all rows when empty; a function of the
    tables when the row depends on the data, e.g. the smallest error), to `to`: a value, or a function of the
    tables that gives it."""
    table: str
    where: Mapping[str, object] | Callable[[Tables], Mapping[str, object]]
    column: str
    to: object

    def rows(self, tables: Tables) -> pd.Series:
        d = tables[self.table]
        where = self.where(tables) if callable(self.where) else self.where
        mask = pd.Series(True, index=d.index)
        for col, v in where.items():
            mask &= d[col] == v
        if not mask.any():
            raise KeyError(f"{self.table}: no row where {dict(where)}")
        return mask

    def apply(self, tables: Tables, value: object = None) -> dict[str, pd.DataFrame]:
        """The tables with the cell moved (to `value` when given, else to `to`)."""
        if value is None:
            value = self.to(tables) if callable(self.to) else self.to
        out = dict(tables)
        d = tables[self.table].copy()
        mask = self.rows(tables)
        kind = d[self.column].dtype
        if (isinstance(value, str) != (kind == object or pd.api.types.is_string_dtype(kind))
                or kind == bool and not isinstance(value, bool)):
            d[self.column] = d[self.column].astype(object)  # a text into numbers, a number into text
        elif pd.api.types.is_integer_dtype(kind) and not float(value).is_integer():
            d[self.column] = d[self.column].astype(float)  # a fraction into whole numbers
        d.loc[mask, self.column] = value
        out[self.table] = d
        return out


@dataclass(frozen=True)
class Moves:
    """Several cells moved together, where one cell cannot reach the boundary alone: a pretrained claim's control
    built from random-init tables (each of its checks fails there), or a count that must stay within another."""
    moves: tuple[Move, ...]

    def apply(self, tables: Tables) -> dict[str, pd.DataFrame]:
        for m in self.moves:
            tables = m.apply(tables)
        return dict(tables)


@dataclass(frozen=True)
class Edge:
    inside: Move | Moves  # just inside the boundary: the relation must hold
    past: Move | Moves  # just past it: the relation must fail


@dataclass(frozen=True)
class Flip:
    """Where a boundary has no closed form (a fitted slope, a quarter mean): the controls are the two values,
    found by bisection between `holding` and `failing` (numbers or functions of the tables), on either side of
    the cell value at which the verdict flips. The test then checks that the margin crosses zero there."""
    table: str
    where: Mapping[str, object] | Callable[[Tables], Mapping[str, object]]
    column: str
    holding: object
    failing: object
    log: bool = False  # bisect the logarithm (values spanning orders of magnitude)

    def controls(self, fn: Callable[[Tables], "Outcome"], tables: Tables) -> tuple[dict, dict]:
        move = Move(self.table, self.where, self.column, None)
        at = lambda v: move.apply(tables, v)  # noqa: E731
        lo, hi = (float(x(tables) if callable(x) else x) for x in (self.holding, self.failing))
        if fn(at(lo)).verdict != HOLDS or fn(at(hi)).verdict != FAILS:
            raise ValueError(f"{self.table}.{self.column}: {lo!r} must hold and {hi!r} fail")
        for _ in range(200):
            mid = math.sqrt(lo * hi) if self.log and lo > 0 and hi > 0 else (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if fn(at(mid)).verdict == HOLDS else (lo, mid)
        return at(lo), at(hi)


def edge(table: str, where: Mapping[str, object], column: str, boundary: Callable[[Tables], float],
         holds: str = "above", rel: float = 0.01) -> Edge:
    """The two controls around `boundary(tables)`, the cell value where the verdict flips: `rel` of its size
    on either side; `holds`: on which side ("above" or "below") the relation holds."""
    def at(sign: float) -> Callable[[Tables], float]:
        return lambda t: boundary(t) + sign * rel * abs(boundary(t))
    up, down = Move(table, where, column, at(+1)), Move(table, where, column, at(-1))
    return Edge(up, down) if holds == "above" else Edge(down, up)


@dataclass(frozen=True)
class Relation:
    name: str
    fn: Callable[[Tables], Outcome]
    needs: tuple[str, ...]
    edge: Edge | Flip | None = None
    rests_on: str = ""
    definition: bool = False
    single: bool = False

    def controls(self, tables: Tables) -> tuple[dict, dict]:
        """(tables just inside the boundary, tables just past it), from this relation's edge."""
        if isinstance(self.edge, Flip):
            return self.edge.controls(self.fn, tables)
        return self.edge.inside.apply(tables), self.edge.past.apply(tables)

    def __call__(self, tables: Tables) -> Outcome:
        out = self.fn(tables)
        if self.definition and out.verdict == HOLDS:
            return Outcome(DEFINITION, out.reason, out.checks)
        return out


RELATIONS: dict[str, Relation] = {}
# table -> (row-key column or None, {column, row key, or "row:column" -> the computation that produced it})
SOURCES: dict[str, tuple[str | None, dict[str, str]]] = {}


def relation(*tables: str, edge: Edge | Flip | None = None, rests_on: str = "", definition: bool = False,
             single: bool = False):
    """Register `fn` under its name (see the module docstring)."""
    if rests_on not in RESTS_ON:
        raise ValueError(f"rests_on {rests_on!r} not in {RESTS_ON}")

    def register(fn: Callable[[Tables], Outcome]) -> Relation:
        if fn.__name__ in RELATIONS:
            raise ValueError(f"relation {fn.__name__!r} registered twice")
        RELATIONS[fn.__name__] = rel = Relation(fn.__name__, fn, tables, edge, rests_on, definition, single)
        return rel
    return register


def sources(table: str, cells: Mapping[str, str], by: str | None = None) -> None:
    """Declare which computation produced each cell of `table`: keys are its columns or, with `by`, the values
    of that row-key column (a whole row) or "row:column" (one cell)."""
    if table in SOURCES:
        raise ValueError(f"sources of {table!r} declared twice")
    SOURCES[table] = (by, dict(cells))


def source_of(table: str, row_key: str | None, column: str) -> str | None:
    """The computation a cell came from, or None when undeclared."""
    by, cells = SOURCES.get(table, (None, {}))
    if by is not None and row_key is not None:
        return cells.get(f"{row_key}:{column}") or cells.get(str(row_key)) or cells.get(column)
    return cells.get(column)


def load_all() -> dict[str, Relation]:
    """Import the claims modules every family declares (family.py's `claims`): their @relation functions register
    here. No module imports a sibling to register it, so the family's modules form no import circle."""
    from ..families import declared

    for fam in declared():
        for name in fam.claims:
            importlib.import_module(fam.module(name))
    return RELATIONS
