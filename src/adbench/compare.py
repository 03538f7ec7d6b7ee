"""Join measured values to the documented table and give each row a verdict.

Tolerance comes from the printed digits: a documented "0.25" allows
|measured - documented| <= 0.005 (half a unit in the last printed place).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

import pandas as pd

KINDS = ("exact", "rounding", "shape", "derived", "pretrained", "timing", "property", "config")
# Non-exact kinds still fail loudly when the measured value is off by more than this
# factor (or has the other sign): the mechanism did not reproduce.
ORDER_FACTOR = 10.0
_NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _bare(printed: str) -> str:
    """A printed number without thousands separators, unit suffix (%, ×) or typographic minus."""
    return str(printed).strip().replace(",", "").replace("\u2212", "-").rstrip("%×x ").strip()


def parse_printed(text: str) -> tuple[float, float] | None:
    """(value, half-unit tolerance) of a printed number; None when it is not a number."""
    s = _bare(text)
    if s.lower() in ("inf", "+inf", "-inf"):
        return (float(s), 0.0)
    if not _NUM.match(s):
        return None
    try:
        d = Decimal(s)
    except InvalidOperation:  # pragma: no cover - guarded by the regex
        return None
    exponent = d.as_tuple().exponent
    return float(d), 0.5 * 10.0 ** exponent


def format_like(printed: str, value: float) -> str:
    """Format `value` with the same notation and number of digits as `printed`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if not isinstance(value, (int, float)):
        return str(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    commas = "," in str(printed)
    core = _bare(printed)
    m = re.match(r"^[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$", core)
    if not m:
        return repr(value)
    decimals = len(m.group(2) or "")
    if m.group(3) is not None:
        out = f"{value:.{decimals}e}"
        mant, exp = out.split("e")
        exp_digits = m.group(3).lstrip("+-")
        out = f"{mant}e{'-' if int(exp) < 0 else ('+' if m.group(3).startswith('+') else '')}{abs(int(exp)):0{len(exp_digits)}d}"
        return out
    out = f"{value:,.{decimals}f}" if commas else f"{value:.{decimals}f}"
    if value != 0 and float(out.replace(",", "")) == 0:
        return f"{value:.3e}"  # a nonzero value below the printed resolution must not read as 0
    return out


def within_printed(documented: str, measured: float) -> bool:
    """|measured - documented| <= half a unit in the last printed place, in exact decimal
    arithmetic (the binary value of `measured` against the decimal the documents printed)."""
    s = _bare(documented)
    d = Decimal(s)
    if d == 0 and "e" in s.lower():
        return measured == 0  # %e prints any nonzero value with its own exponent: "0.000e+00" means 0
    half_unit = Decimal(5).scaleb(d.as_tuple().exponent - 1)
    return abs(Decimal(measured) - d) <= half_unit


def _within_order(doc: float, meas: float, factor: float = ORDER_FACTOR) -> bool:
    if doc == 0 or meas == 0:
        return abs(doc - meas) == 0
    return (doc > 0) == (meas > 0) and 1 / factor <= meas / doc <= factor


TIME_UNITS = ("µs", "us", "ms", "s")


def verdict(kind: str, documented: str, measured, model_source: str | None = None,
            unit: str = "", band: float | None = None, reduced: bool = False) -> tuple[str, str]:
    """(status, reason) for one documented row against its measured value.

    `band` widens the order-of-magnitude guard of a non-exact row (default ×10) where the
    documented table says why; `reduced` marks a run at smoke sizes, where only exact,
    rounding and derived rows can be held to the documents.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    if measured is None or (isinstance(measured, float) and math.isnan(measured)):
        return "MISSING", "no measured value was produced for this quantity"
    if kind == "pretrained" and model_source not in (None, "", "pretrained"):
        return "differs", (f"measured on a {model_source} GPT-2, not the pinned pretrained weights; "
                           "the documented value needs those weights")
    parsed = parse_printed(documented)
    if parsed is None:  # text: the documented phrase must occur in the measured text
        ok = str(documented).strip().strip(".…") in str(measured)
        return ("match", "documented text found in the installed library's output") if ok else (
            "MISMATCH" if kind == "exact" else "differs",
            "the installed library prints a different text")
    doc, tol = parsed
    try:
        meas = float(measured)
    except (TypeError, ValueError):
        return "MISMATCH", f"measured value {measured!r} is not a number"
    if math.isinf(doc) or math.isinf(meas):
        return ("match", "") if doc == meas else ("MISMATCH", "one side is infinite")
    if within_printed(documented, meas):
        return "match", ""
    if kind in ("exact", "derived"):
        return "MISMATCH", f"outside the printed-digit tolerance ±{tol:.1e}"
    if kind == "timing" and unit in TIME_UNITS:
        # An absolute duration measures the CPU as much as the code: only ratios are checked.
        return "differs", "absolute wall-clock time on a different CPU and load; only the ratio rows are checked"
    if reduced:
        return "differs", "measured at reduced (smoke) sizes: only exact, rounding and derived rows are held to the documents"
    factor = band or ORDER_FACTOR
    if not _within_order(doc, meas, factor):
        return "MISMATCH", f"more than ×{factor:g} from the documented value or of the other sign"
    return "differs", {
        "rounding": "rounding-side digits depend on the platform's libm and operation order",
        "shape": "depends on random data or details the documents did not pin; order of magnitude agrees",
        "pretrained": "same model source but a different library version or platform",
        "timing": "wall-clock on a different CPU; only ratios within one run are comparable",
    }[kind]


def compare(documented: pd.DataFrame, measured: pd.DataFrame, reduced: bool = False) -> pd.DataFrame:
    """Comparison table: id, quantity, documented, measured, kind, status, note."""
    meas = measured.drop_duplicates(["id", "quantity"], keep="last").set_index(["id", "quantity"])
    rows = []
    for d in documented.itertuples(index=False):
        key = (d.id, d.quantity)
        value = meas["value"].get(key) if key in meas.index else None
        source = meas["model_source"].get(key) if "model_source" in meas and key in meas.index else None
        source = None if source is None or (isinstance(source, float) and math.isnan(source)) else source
        band = float(d.band) if _clean(getattr(d, "band", "")) else None
        status, reason = verdict(d.kind, d.documented, _to_number(value), source, _clean(d.unit), band, reduced)
        notes = [n for n in (reason, _clean(getattr(d, "note", "")) if status != "match" else "",
                             _clean(meas["note"].get(key)) if key in meas.index and "note" in meas else "") if n]
        rows.append({"id": d.id, "quantity": d.quantity, "description": d.description,
                     "documented": d.documented, "unit": _clean(d.unit), "measured": value,
                     "measured_printed": format_like(d.documented, _to_number(value))
                     if parse_printed(d.documented) else ("—" if value is None else str(value)),
                     "kind": d.kind, "status": status, "note": "; ".join(notes),
                     "model_source": source or ""})
    return pd.DataFrame(rows)


def _clean(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)


def _to_number(value):
    """Measured cells arrive as strings from mixed-type CSVs: recover floats where possible."""
    if value is None or isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except ValueError:
        return value
