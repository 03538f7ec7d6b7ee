"""Join measured values to the documented table and give each row one of five verdicts.

match: within the row's tolerance (see adbench.verdicts.tolerance). differs: outside it, for a kind
whose digits the documents did not pin (rounding, shape, pretrained, timing ratio), with the
reason. not judged: never scored (absolute times, config echoes, pretrained rows on another
model, reduced sizes, rows the measurement flagged). MISMATCH: a value or text that should
have reproduced and did not. MISSING: nothing was measured.
"""

from __future__ import annotations

import math
import re

import pandas as pd

from .. import settings as run_settings
from ..missing import is_blank, is_missing
from ..outcomes import LOUD, NOT_JUDGED, STATUSES  # the names every layer shares
from .tolerance import describe, format_like, parse_printed, parse_spec, text_of, within

__all__ = ["KINDS", "STATUSES", "JUDGED", "compare", "verdict", "score", "format_like", "parse_printed", "within"]

KINDS = ("exact", "rounding", "derived", "shape", "pretrained", "timing", "property", "config")
JUDGED = ("match", "differs", "MISMATCH", "MISSING")  # the denominator of the reproduction score
# Non-exact kinds still fail loudly when the measured value is off by more than this
# factor (or has the other sign): the mechanism did not reproduce.
ORDER_FACTOR = 10.0
TIME_UNITS = ("µs", "us", "ms", "s")
# A note starting with this marks a row whose documented value holds only at the full configured sizes.
SIZE_DEPENDENT = "size-dependent:"
TORCH_DEPENDENT = "torch-version-dependent:"  # a note starting with this: the value moves with the torch version
_DIFFERS = {
    "rounding": "agrees to the declared digits; the further digits depend on the platform's libm and operation order",
    "shape": "depends on random data or details the documents did not pin; order of magnitude agrees",
    "pretrained": "same model source but a different library version or platform",
    "timing": "wall-clock ratio on a different CPU and load; order of magnitude agrees",
}


def _within_order(doc: float, meas: float, factor: float) -> bool:
    if doc == 0 or meas == 0:
        return doc == meas
    return (doc > 0) == (meas > 0) and 1 / factor <= meas / doc <= factor


REDUCED_UNJUDGED = ("shape", "pretrained", "timing")  # kinds that hold only at the documents' sizes


def _unscored(kind: str, model_source, unit: str, reduced: bool) -> str:
    """Why a row with a measured value is not judged at all; '' when it is judged."""
    if kind == "config":
        return "echoes the configuration: shown, not scored"
    if kind == "pretrained" and not is_blank(model_source) and model_source != "pretrained":
        return (f"measured on {model_source} weights, not the pinned pretrained ones; "
                "the documented value needs those weights")
    if kind == "timing" and unit in TIME_UNITS:
        return "absolute wall-clock time measures the CPU as much as the code; only ratios are judged"
    if reduced and kind in REDUCED_UNJUDGED:
        return "measured at reduced (smoke) sizes: only exact, rounding, derived and property rows are judged"
    return ""


def verdict(kind: str, documented: str, measured, model_source: str | None = None, unit: str = "",
            band: float | None = None, reduced: bool = False, tolerance: str = "", pattern: str = "",
            unjudged: str = "") -> tuple[str, str]:
    """(status, reason) for one documented row against its measured value.

    `tolerance`/`pattern` are the row's declared columns; `band` widens the ×10 guard of a
    shape/pretrained/timing row; `unjudged` is a reason the measurement gave for not judging.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    if is_blank(documented):
        raise ValueError("documented value is empty: every row must print what the documents printed")
    spec = parse_spec(tolerance)
    if kind == "rounding" and (spec is None or spec[0] == "abs"):
        raise ValueError(f"rounding row {documented!r} must declare tolerance sig:<n> or rel:<x>")
    if kind != "config" and is_missing(measured):
        if reduced and (kind in REDUCED_UNJUDGED or not is_blank(unjudged)):
            return NOT_JUDGED, "not measured at reduced (smoke) sizes, where this row is not judged anyway"
        return "MISSING", "no measured value was produced for this quantity"
    why = _unscored(kind, model_source, unit, reduced) or ("" if is_blank(unjudged) else str(unjudged))
    if why:
        return NOT_JUDGED, why
    if parse_printed(documented) is None:
        return _judge_text(documented, measured, pattern)
    try:
        meas = float(measured)
    except (TypeError, ValueError):
        return "MISMATCH", f"measured value {measured!r} is not a number"
    return _judge_number(kind, documented, meas, spec, band)


def _judge_text(documented: str, measured, pattern: str) -> tuple[str, str]:
    """Equal after whitespace normalisation, or a full match of the row's pattern."""
    got = text_of(measured)
    if pattern:
        ok, why = re.fullmatch(pattern, got) is not None, "the measured text does not match the row's pattern"
    else:
        ok, why = got == text_of(documented), "the measured text differs from the documented text"
    return ("match", "") if ok else ("MISMATCH", why)


def _judge_number(kind: str, documented: str, meas: float, spec, band: float | None) -> tuple[str, str]:
    """Verdict of a judged numeric row: its tolerance first, then the kind's fallback."""
    doc = parse_printed(documented)[0]
    if math.isinf(doc) or math.isinf(meas):
        return ("match", "") if doc == meas else ("MISMATCH", "one side is infinite")
    if kind == "rounding":  # the printed digits make a match; the declared tolerance, the outer limit
        if within(documented, meas):
            return "match", ""
        if within(documented, meas, spec):
            return "differs", _DIFFERS["rounding"] + f" ({describe(documented, spec)})"
        return "MISMATCH", f"outside the declared tolerance {describe(documented, spec)}"
    if within(documented, meas, spec):
        return "match", ""
    if kind in ("exact", "derived", "property"):
        return "MISMATCH", f"outside the tolerance {describe(documented, spec)}"
    factor = band or ORDER_FACTOR
    if not _within_order(doc, meas, factor):
        return "MISMATCH", f"more than ×{factor:g} from the documented value or of the other sign"
    return "differs", _DIFFERS[kind]


def score(statuses: pd.Series) -> tuple[int, int]:
    """(judged rows that match, judged rows): `not judged` rows are left out of both."""
    judged = statuses[statuses.isin(JUDGED)]
    return int((judged == "match").sum()), int(len(judged))


def compare(documented: pd.DataFrame, measured: pd.DataFrame, reduced: bool = False,
            settings: dict | None = None) -> pd.DataFrame:
    """Comparison table: one row per documented quantity with its measured value and verdict. `settings`: the
    run's configuration; a row measured under other settings than its `config` column declares is not judged
    (and says which key differs), whether or not a value was measured."""
    meas = measured.drop_duplicates(["id", "quantity"], keep="last").set_index(["id", "quantity"])
    rows = []
    for d in documented.itertuples(index=False):
        key = (d.id, d.quantity)
        got = meas.loc[key] if key in meas.index else pd.Series(dtype=object)
        value = got.get("value")
        source = "" if is_blank(got.get("model_source")) else str(got.get("model_source"))
        band = float(d.band) if not is_blank(getattr(d, "band", "")) else None
        tolerance, pattern = _clean(getattr(d, "tolerance", "")), _clean(getattr(d, "pattern", ""))
        unjudged = _clean(got.get("unjudged_reason")) or (
            "measured at reduced (smoke) sizes; the documented value holds only at the full sizes"
            if reduced and _clean(getattr(d, "note", "")).startswith(SIZE_DEPENDENT) else "")
        differs = run_settings.not_judged_reason(_clean(getattr(d, "config", "")), settings)
        if differs:  # before any other reason: it names the setting, also of a shrunken (smoke) run
            status, reason = NOT_JUDGED, differs
        else:
            status, reason = verdict(d.kind, d.documented, _to_number(value), source, _clean(d.unit), band, reduced,
                                     tolerance, pattern, unjudged)
        if status == "differs" and _clean(getattr(d, "note", "")).startswith(TORCH_DEPENDENT):
            reason = ""  # the row's own note says why, better than the kind's generic reason
        notes = [n for n in (reason, _clean(getattr(d, "note", "")) if status != "match" else "",
                             _clean(got.get("note"))) if n]
        numeric = parse_printed(d.documented) is not None
        rows.append({"id": d.id, "quantity": d.quantity, "description": d.description,
                     "documented": d.documented, "unit": _clean(d.unit), "measured": value,
                     "measured_printed": format_like(d.documented, _to_number(value)) if numeric
                     else ("—" if is_missing(value) else str(value)),
                     "kind": d.kind, "status": status, "note": "; ".join(notes), "model_source": source,
                     "tolerance": describe(d.documented, parse_spec(tolerance)) if numeric
                     else ("pattern" if pattern else "same text")})
    return pd.DataFrame(rows)


def _clean(x) -> str:
    return "" if is_blank(x) else str(x)


def _to_number(value):
    """Measured cells arrive as strings from mixed-type CSVs: recover floats where possible."""
    if is_missing(value) or isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except ValueError:
        return value
