"""The tests behind the claims table: one small pure function per conclusion, registered by name.

Each relation takes the measurement's tables ({"S1/gradients": DataFrame, ...}, the CSVs under
results/<ID>/ keyed as the report keys them) and returns (verdict, reason); the reason prints the
numbers the verdict rests on. `@relation(*tables)` registers the function under its own name and
records the tables it reads, so the judge can say "not measured" instead of raising KeyError.

Tolerances are float rounding scales (machine epsilon times a small count of operations) or a
threshold the claim itself names; never a documented or measured value.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np
import pandas as pd

HOLDS, FAILS, NOT_JUDGED = "holds", "fails", "not judged"
VERDICTS = (HOLDS, FAILS, NOT_JUDGED)

Tables = Mapping[str, pd.DataFrame]
Result = tuple[str, str]

RELATIONS: dict[str, Callable[[Tables], Result]] = {}
NEEDS: dict[str, tuple[str, ...]] = {}
# relations whose reason quotes stopwatch numbers: their rows of claims.csv differ from run to run
# (tests/dag/test_determinism.py leaves them out of the byte comparison)
VOLATILE: set[str] = set()

EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)
EPS16 = float(np.finfo(np.float16).eps)
# A handful of float64 operations stand between two computations of the same exact quantity; 64 ulps
# leaves room for that and is still 10^-14 relative, far below any effect a claim is about.
ROUNDING64 = 64 * EPS64


def relation(*tables: str, volatile: bool = False):
    """Transitional: register an old-style relation ((verdict, reason)) in the claims registry."""
    from .registry import RELATIONS as REG, Outcome, Relation

    def register(fn):
        def wrapped(t, fn=fn):
            v, why = fn(t)
            return Outcome(v, why, ())
        wrapped.__name__ = fn.__name__
        REG[fn.__name__] = Relation(fn.__name__, wrapped, tables, rests_on="timing" if volatile else "")
        RELATIONS[fn.__name__] = fn
        NEEDS[fn.__name__] = tables
        return fn
    return register


def verdict(ok: bool, reason: str) -> Result:
    return (HOLDS if ok else FAILS), reason


def g(x: float) -> str:
    """A number as a reason prints it."""
    return f"{float(x):.4g}"


def close(a: float, b: float, rel: float = ROUNDING64) -> bool:
    """Equal up to float64 rounding, relative to the larger magnitude (absolute near zero)."""
    return abs(a - b) <= rel * max(abs(a), abs(b), 1.0)


def qv(df: pd.DataFrame, quantity: str):
    """One quantity's value in a values.csv table."""
    hit = df.loc[df["quantity"] == quantity, "value"]
    if hit.empty:
        raise KeyError(f"quantity {quantity!r} not in values table")
    return hit.iloc[0]


def row(df: pd.DataFrame, col: str, key) -> pd.Series:
    hit = df[df[col] == key]
    if hit.empty:
        raise KeyError(f"no row with {col} == {key!r}")
    return hit.iloc[0]


def truthy(x) -> bool:
    """A CSV boolean, whether pandas parsed it or left the text."""
    return x is True or (isinstance(x, (bool, np.bool_)) and bool(x)) or str(x).strip().lower() == "true"


def is_none(x) -> bool:
    """A CSV cell that printed None: pandas reads the text None as a missing value."""
    return x is None or (isinstance(x, float) and math.isnan(x)) or str(x).strip() == "None"


def mat(df: pd.DataFrame, name: str, col: str = "hand") -> np.ndarray:
    """A matrix from a matrices.csv table (matrix,row,col,hand,torch,abs_diff)."""
    m = df[df["matrix"] == name]
    if m.empty:
        raise KeyError(f"matrix {name!r} not in table")
    out = np.full((int(m["row"].max()) + 1, int(m["col"].max()) + 1), np.nan)
    for r in m.itertuples():
        out[int(r.row), int(r.col)] = float(getattr(r, col))
    return out
