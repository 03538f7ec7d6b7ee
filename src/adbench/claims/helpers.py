"""What a family's relations are written with: checks that know their margin, and small table readers.

Tolerances are float rounding scales (machine epsilon times a small count of operations) or a bound the
claim itself names ("far more" is two orders of magnitude, "nearly all" nine tenths); never a documented or
measured value. Every check returns its margin in its own unit, positive on the holding side.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .registry import Check

EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)
EPS16 = float(np.finfo(np.float16).eps)
# A handful of float64 operations stand between two computations of the same exact quantity; 64 ulps
# leaves room for that and is still 10^-14 relative, far below any effect a claim is about.
ROUNDING64 = 64 * EPS64
# The essays' words of degree as numbers, defined once here; a claim that says them tests them at this strength.
FAR = 100.0  # "far more", "far above", "far beyond": at least two orders of magnitude
NEARLY_ALL = 0.9  # "nearly all": nine tenths


# ---- checks -------------------------------------------------------------------------------------------
def flag(ok: bool, what: str) -> Check:
    """An exact check: a flag, an error type, a value that must be exactly zero."""
    return Check(what, bool(ok))


def at_least(x: float, bound: float, what: str, unit: str = "", band: float = 0.0, strict: bool = False) -> Check:
    x, bound = float(x), float(bound)
    return Check(what, bool(x > bound if strict else x >= bound), x - bound, unit, band)


def at_most(x: float, bound: float, what: str, unit: str = "", band: float = 0.0, strict: bool = False) -> Check:
    x, bound = float(x), float(bound)
    return Check(what, bool(x < bound if strict else x <= bound), bound - x, unit, band)


def near(x: float, target: float, tol: float, what: str, unit: str = "", band: float = 0.0) -> Check:
    """|x - target| <= tol."""
    m = tol - abs(float(x) - float(target))
    return Check(what, bool(m >= 0), m, unit, band)


def decades(x: float) -> float:
    """log10 of a positive number (+-inf at 0 and infinity)."""
    x = float(x)
    return math.log10(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def times_at_least(big: float, small: float, factor: float, what: str, band: float = 0.1) -> Check:
    """big >= factor x small, the margin in decades (orders of magnitude) beyond the factor."""
    m = decades(big) - decades(small) - decades(factor)
    return Check(what, bool(m >= 0), m, "decades", band)


def times_within(x: float, target: float, decades_tol: float, what: str, band: float = 0.1) -> Check:
    """x within `decades_tol` orders of magnitude of `target` ("about a thousand")."""
    m = decades_tol - abs(decades(x) - decades(target))
    return Check(what, bool(m >= 0), m, "decades", band)


def same_float(a: float, b: float, ulps: float, eps: float, what: str) -> Check:
    """a and b agree within `ulps` units of `eps` relative to the larger magnitude (absolute near zero);
    the band is a quarter of the allowance."""
    scale = eps * max(abs(float(a)), abs(float(b)), 1.0)
    m = ulps - abs(float(a) - float(b)) / scale
    return Check(what, bool(m >= 0), m, "ulps", ulps / 4)


def sum_is_zero(x: np.ndarray, what: str) -> Check:
    """sum(x) is zero at the rounding scale of summing x: n x 4 ulps of sum(|x|); margin in those ulps."""
    s, scale = float(np.sum(x)), float(np.sum(np.abs(x)))
    unit = EPS64 * max(scale, np.finfo(np.float64).tiny)
    allowed = len(x) * 4
    return Check(what, bool(abs(s) <= allowed * unit), allowed - abs(s) / unit, "ulps", allowed / 4)


# ---- table readers --------------------------------------------------------------------------------------
def ulps_away(x: float, n: float, eps: float = EPS64) -> float:
    """x moved by n units of eps relative to max(|x|, 1): the scale `same_float` measures in."""
    return float(x) + n * eps * max(abs(float(x)), 1.0)


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
