"""Printed numbers and the tolerance a documented row allows.

A documented "0.25" allows |measured - 0.25| <= 0.005 (half a unit in the last printed place);
a printed zero ("0", "0.0", "0.000e+00") means exactly 0; a row may instead declare `abs:<x>`,
`rel:<x>` or `sig:<n>` (the first n significant digits agree: half a unit of the n-th), or `about`
when the sentence writes "about 820": the trailing zeros of a whole number are then not significant
(half a unit of its last nonzero digit, ±5), while digits written after a point ("about 2.0") stay so.
`allowance` is that rule, in one place: the verdicts (`within`) and the history of what moved
between runs (`moved_beyond`) both measure against it.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from ..missing import is_missing, is_blank

_NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_SPEC = re.compile(r"^(abs|rel|sig):(.+)$")
ABOUT = "about"  # the declared tolerance of a number the sentence writes "about": ("about", 0.0) parsed


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
    """('abs'|'rel'|'sig', amount) of a declared tolerance, or ('about', 0.0); None when empty; ValueError when
    malformed."""
    spec = (spec or "").strip()
    if not spec:
        return None
    if spec == ABOUT:
        return ABOUT, 0.0
    m = _SPEC.match(spec)
    try:
        amount = float(m.group(2)) if m else math.nan
    except ValueError:
        amount = math.nan
    if not m or not amount > 0 or (m.group(1) == "sig" and not amount.is_integer()):
        raise ValueError(f"tolerance {spec!r}: expected abs:<x>, rel:<x> (x > 0), sig:<n> (integer n >= 1) or "
                         f"{ABOUT} (the sentence writes 'about <number>')")
    return m.group(1), amount


def declared_spec(cell) -> tuple[str, float] | None:
    """The abs/rel/sig/about tolerance named in a tolerance cell, else None (the printed digits apply).

    Takes the documented table's column ("sig:3", "about", "") as well as the comparison's `tolerance`
    column, which holds `describe`'s words: "rel:2" and "about (±5: ...)" parse back, while "±5.0e-11
    (printed digits)", "exactly 0", "pattern" and "same text" name no declared tolerance."""
    if is_blank(cell):
        return None
    text = str(cell).strip()
    if text == ABOUT or text.startswith(ABOUT + " "):
        return ABOUT, 0.0
    return parse_spec(text) if _SPEC.match(text) else None


def _about_exponent(printed: str) -> int:
    """The exponent of the last significant digit of a number written "about <printed>": a whole number's
    trailing zeros do not count (about 820: tens), written decimals and an exponent's mantissa do (about 2.0)."""
    s = bare(printed)
    d = Decimal(s)
    if "." in s or "e" in s.lower():
        return d.as_tuple().exponent
    return d.normalize().as_tuple().exponent


def allowance(documented: str, spec: tuple[str, float] | None = None) -> Decimal:
    """Half-width of the interval a row allows, exactly: its declared abs/rel/sig tolerance, else
    half a unit in the last printed place; nothing (0) around a printed zero or an infinity.

    The one tolerance rule: the verdict holds a measurement within it of the documented value,
    and the history holds a later run within it of the earlier one (`moved_beyond`)."""
    d = Decimal(bare(documented))
    if spec is not None and spec[0] == "abs":  # the one tolerance that widens a printed zero (abs:1e-15)
        return Decimal(repr(spec[1]))
    if d == 0 or d.is_infinite():  # a printed zero means exactly 0 (rel: and sig: of 0 are 0 too)
        return Decimal(0)
    if spec is None:
        return Decimal(5).scaleb(d.as_tuple().exponent - 1)
    how, amount = spec
    if how == ABOUT:
        return Decimal(5).scaleb(_about_exponent(documented) - 1)
    if how == "rel":
        return Decimal(repr(amount)) * abs(d)
    return Decimal(5).scaleb(d.adjusted() - int(amount))  # sig:n, half a unit of the n-th significant digit


def _apart(x, y) -> Decimal:
    """|x - y| in exact decimal arithmetic (a float counts at its binary value, a printed number at
    its decimal); 0 or infinite when either side is infinite, so infinities never raise."""
    a, b = Decimal(x), Decimal(y)
    if a.is_nan() or b.is_nan():
        raise ValueError("a tolerance needs two numbers; NaN is a missing value (adbench.missing)")
    if a.is_infinite() or b.is_infinite():
        return Decimal(0) if a == b else Decimal("Infinity")
    return abs(a - b)


def within(documented: str, measured: float, spec: tuple[str, float] | None = None) -> bool:
    """Whether `measured` lies within the row's `allowance` of the documented decimal."""
    return _apart(bare(documented), measured) <= allowance(documented, spec)


def moved_beyond(documented: str, old: float, new: float, spec: tuple[str, float] | None = None) -> bool:
    """Whether two runs' values of one row differ by more than the row's `allowance`: the same
    width, computed the same way, as the verdict's `within`."""
    return _apart(old, new) > allowance(documented, spec)


def text_of(x) -> str:
    """A text cell with its whitespace normalised: texts that differ only in spacing are the same."""
    return " ".join(str(x).split())


def describe(documented: str, spec: tuple[str, float] | None) -> str:
    """The tolerance in words, for notes: '±5.0e-11 (printed digits)', 'exactly 0', 'sig:3', 'about (±5: ...)'."""
    if spec is not None and spec[0] == ABOUT:
        return f"{ABOUT} (±{allowance(documented, spec):g}: written 'about', trailing zeros not significant)"
    if spec is not None:
        short = f"{spec[1]:g}"  # as the comparison always printed it, unless that loses digits
        return f"{spec[0]}:{short if float(short) == spec[1] else repr(spec[1])}"
    if is_printed_zero(documented):
        return "exactly 0"
    return f"±{parse_printed(documented)[1]:.1e} (printed digits)"


def format_like(printed: str, value: float) -> str:
    """Format `value` with the same notation and number of digits as `printed`."""
    if is_missing(value):
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
