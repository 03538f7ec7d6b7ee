"""Printed numbers and the tolerance a documented row allows.

A documented "0.25" allows |measured - 0.25| <= 0.005 (half a unit in the last printed place);
a printed zero ("0", "0.0", "0.000e+00") means exactly 0; a row may instead declare `abs:<x>`,
`rel:<x>` or `sig:<n>` (the first n significant digits agree: half a unit of the n-th).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_SPEC = re.compile(r"^(abs|rel|sig):(.+)$")


def bare(printed: str) -> str:
    """A printed number without thousands separators, unit suffix (%, ×) or typographic minus."""
    return str(printed).strip().replace(",", "").replace("\u2212", "-").rstrip("%×x ").strip()


def parse_printed(text: str) -> tuple[float, float] | None:
    """(value, half-unit tolerance) of a printed number; None when it is not a number."""
    s = bare(text)
    if s.lower() in ("inf", "+inf", "-inf"):
        return (float(s), 0.0)
    if not _NUM.match(s):
        return None
    try:
        d = Decimal(s)
    except InvalidOperation:  # pragma: no cover - guarded by the regex
        return None
    return float(d), 0.5 * 10.0 ** d.as_tuple().exponent


def is_printed_zero(documented: str) -> bool:
    """Whether the documents printed a zero ("0", "0.0000", "0.000e+00")."""
    return parse_printed(documented) is not None and Decimal(bare(documented)) == 0


def parse_spec(spec: str) -> tuple[str, float] | None:
    """('abs'|'rel'|'sig', amount) of a declared tolerance; None when empty; ValueError when malformed."""
    spec = (spec or "").strip()
    if not spec:
        return None
    m = _SPEC.match(spec)
    try:
        amount = float(m.group(2)) if m else math.nan
    except ValueError:
        amount = math.nan
    if not m or not amount > 0 or (m.group(1) == "sig" and not amount.is_integer()):
        raise ValueError(f"tolerance {spec!r}: expected abs:<x>, rel:<x> (x > 0) or sig:<n> (integer n >= 1)")
    return m.group(1), amount


def within_printed(documented: str, measured: float) -> bool:
    """|measured - documented| <= half a unit in the last printed place, in exact decimal
    arithmetic (the binary value of `measured` against the decimal the documents printed);
    a printed zero means exactly 0."""
    d = Decimal(bare(documented))
    if d == 0:
        return measured == 0
    half_unit = Decimal(5).scaleb(d.as_tuple().exponent - 1)
    return abs(Decimal(measured) - d) <= half_unit


def within_spec(documented: str, measured: float, spec: tuple[str, float]) -> bool:
    """Whether `measured` lies within a declared abs/rel/sig tolerance of the documented value."""
    how, amount = spec
    d = Decimal(bare(documented))
    diff = abs(Decimal(measured) - d)
    if how == "abs":
        return diff <= Decimal(repr(amount))
    if how == "rel":
        return diff <= Decimal(repr(amount)) * abs(d)
    if d == 0:
        return measured == 0
    # sig:n -> half a unit of the n-th significant digit of the documented value
    return diff <= Decimal(5).scaleb(d.adjusted() - int(amount))


def describe(documented: str, spec: tuple[str, float] | None) -> str:
    """The tolerance in words, for notes: '±5.0e-11 (printed digits)', 'exactly 0', 'sig:3'."""
    if spec is not None:
        return f"{spec[0]}:{spec[1]:g}"
    if is_printed_zero(documented):
        return "exactly 0"
    return f"±{parse_printed(documented)[1]:.1e} (printed digits)"


def format_like(printed: str, value: float) -> str:
    """Format `value` with the same notation and number of digits as `printed`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if not isinstance(value, (int, float)):
        return str(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    commas = "," in str(printed)
    m = re.match(r"^[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$", bare(printed))
    if not m:
        return repr(value)
    decimals = len(m.group(2) or "")
    if m.group(3) is not None:
        mant, exp = f"{value:.{decimals}e}".split("e")
        exp_digits = m.group(3).lstrip("+-")
        sign = "-" if int(exp) < 0 else ("+" if m.group(3).startswith("+") else "")
        return f"{mant}e{sign}{abs(int(exp)):0{len(exp_digits)}d}"
    out = f"{value:,.{decimals}f}" if commas else f"{value:.{decimals}f}"
    if value != 0 and float(out.replace(",", "")) == 0:
        return f"{value:.3e}"  # a nonzero value below the printed resolution must not read as 0
    return out
