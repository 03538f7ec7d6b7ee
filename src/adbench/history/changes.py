"""What moved between an archived run and this one: per documented quantity, by its printed digits or its timing samples."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

from .. import machine
from ..io import read_csv
from ..missing import is_blank, is_missing
from ..verdicts.tolerance import declared_spec, describe, format_like, moved_beyond, parse_printed, text_of
from ..verdicts.verdict import KINDS
from .archive import environment_line, run_machine
from .timing_moves import machines, percent, recorded_machines, timing_moved, timing_rules

# Kinds whose digits the documents pinned: they move beyond the row's tolerance, as the verdict holds
# them to it. Shape, pretrained and config values are not pinned to digits, so they move by a relative
# change; timings by their samples (timing_moves).
TOLERANCE_KINDS = ("exact", "rounding", "derived", "property")

_PAIR = re.compile(r"^(.*)_(min|max)(_[a-z]+)?$")


def _num(x):
    """The cell as a float; None for text (and for a NaN, which is no number)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if is_missing(v) else v


def _intervals(df: pd.DataFrame) -> dict:
    """(id, base quantity) -> (min, max) for timing quantities that come in _min/_max pairs."""
    out: dict = {}
    for r in df.itertuples(index=False):
        m = _PAIR.match(r.quantity)
        if m and _num(r.measured) is not None:
            key = (r.id, m.group(1) + (m.group(3) or ""))
            lo, hi = out.get(key, (math.inf, -math.inf))
            out[key] = (min(lo, _num(r.measured)), max(hi, _num(r.measured)))
    return out


def moved(kind: str, documented: str, old, new, rel_threshold: float, tolerance: str = "") -> tuple[bool, str]:
    """Whether one non-timing quantity moved, and the rule applied.

    `tolerance`: the row's tolerance cell (the comparison's column, or the documented table's): a
    pinned kind moves beyond exactly the allowance its verdict uses (adbench.verdicts.tolerance).
    A text, or a row whose documented value is a text, moves when its text changes beyond
    whitespace, as the verdict compares texts."""
    a, b = _num(old), _num(new)
    if a is None or b is None or parse_printed(documented) is None:
        differs = text_of(old) != text_of(new)
        return differs, "text differs" if differs else "same text"
    if kind in TOLERANCE_KINDS:
        spec = declared_spec(tolerance)
        return moved_beyond(documented, a, b, spec), describe(documented, spec)
    scale = max(abs(a), abs(b))
    rel = 0.0 if scale == 0 else abs(b - a) / scale
    return rel > rel_threshold, f"relative change {rel:.1%} vs threshold {rel_threshold:.0%}"


def moved_rules_text(rel_threshold: float, timing_threshold: float) -> list[str]:
    """What counts as moved, one sentence per rule, from the names `moved` and `timing_moved` use
    (the report and the history page print it, so it cannot drift from the code)."""
    relative = [k for k in KINDS if k not in TOLERANCE_KINDS and k != "timing"]
    return [f"A value of kind {_either(TOLERANCE_KINDS)} moves when it changes by more than its row's tolerance, "
            "the one its verdict uses (the comparison's tolerance column): half a unit of its documented printed "
            "digits unless the row declares abs:, rel: or sig:, and no change at all for a printed zero.",
            "A text moves when it changes beyond whitespace.",
            f"A value of kind {_either(relative)} moves when it changes by more than {percent(rel_threshold)} of "
            "the larger of the two (changes.relative_threshold).",
            *timing_rules(timing_threshold)]


def _either(words) -> str:
    """'a, b or c'."""
    words = list(words)
    return ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]


def printed(documented: str, value) -> str:
    """A then/now cell with the documented number of digits (text as it is)."""
    x = _num(value)
    if x is None or parse_printed(documented) is None:
        return "—" if is_missing(value) else str(value)
    return format_like(documented, x)


def _status(kind, doc, quantity, mid, old, new, rel_threshold, timing_threshold, roots, spans, tolerance=""):
    """('moved' | 'noise' | 'same' | 'missing', rule) for one quantity of two runs."""
    if is_missing(old) or is_missing(new):
        return ("same", "measured in neither run") if is_missing(old) and is_missing(new) else \
            ("missing", "measured in only one of the runs")
    a, b = _num(old), _num(new)
    if kind == "timing" and a is not None and b is not None:
        return timing_moved(mid, quantity, roots[0], roots[1], timing_threshold, spans, (a, b))
    did, rule = moved(kind, doc, old, new, rel_threshold, tolerance)
    return ("moved" if did else "same"), rule


def _machine_note(rule: str, mid: str, old_root, new_root) -> str:
    """A moved value's rule, naming the machines when they differ, or when only one run recorded its machine: a GEMM
    on another CPU rounds differently, so a chaotic training run or a count of exact zeros can move with the machine
    alone. Two runs that both predate machine identity get no note (it would say nothing about either)."""
    a, b = recorded_machines(old_root, new_root, mid)
    where = machine.compare(a, b)
    if where == "differs" or (where == "unknown" and (machine.complete(a) or machine.complete(b))):
        return f"{rule}; {machines(old_root, new_root, mid)[1]}"
    return rule


COLUMNS = ["archive", "id", "quantity", "kind", "documented", "old", "new", "old_value", "new_value",
           "moved", "status", "rule", "old_env", "new_env"]


def changes(old: pd.DataFrame, new: pd.DataFrame, archive: str, old_env: str, new_env: str,
            rel_threshold: float, timing_threshold: float = 0.10, old_root=None, new_root=None) -> pd.DataFrame:
    """Every documented quantity of two comparison tables with whether it moved.

    `old_root` / `new_root`: the runs' results (or archive) folders, for raw timing samples and
    meta.json provenance; without them timings fall back to process-run spans.
    """
    spans_old, spans_new = _intervals(old[old.kind == "timing"]), _intervals(new[new.kind == "timing"])
    # a table without a tolerance column (an old archive, a values-only matrix run): printed digits apply
    old, new = (df if "tolerance" in df.columns else df.assign(tolerance="") for df in (old, new))
    merged = old.merge(new, on=["id", "quantity"], how="outer", suffixes=("_old", "_new"))
    rows = []
    for r in merged.itertuples(index=False):
        kind = r.kind_new if isinstance(r.kind_new, str) else r.kind_old
        doc = r.documented_new if isinstance(r.documented_new, str) else r.documented_old
        tolerance = r.tolerance_old if is_blank(r.tolerance_new) else r.tolerance_new  # this run's, as doc
        m = _PAIR.match(r.quantity)
        key = (r.id, m.group(1) + (m.group(3) or "")) if m else None
        spans = (spans_old[key], spans_new[key]) if key in spans_old and key in spans_new else None
        status, rule = _status(kind, doc, r.quantity, r.id, r.measured_old, r.measured_new, rel_threshold,
                               timing_threshold, (old_root, new_root), spans, tolerance)
        if status == "moved" and kind != "timing" and old_root and new_root:
            rule = _machine_note(rule, r.id, old_root, new_root)
        rows.append({"archive": archive, "id": r.id, "quantity": r.quantity, "kind": kind, "documented": doc,
                     "old": printed(doc, r.measured_old), "new": printed(doc, r.measured_new),
                     "old_value": r.measured_old, "new_value": r.measured_new, "moved": status == "moved",
                     "status": status, "rule": rule, "old_env": old_env, "new_env": new_env})
    return pd.DataFrame(rows, columns=COLUMNS)


# ---- claims: whose verdict changed -------------------------------------------------------------------
# status of one claim between two runs: its verdict changed, stayed the same, the claim is new in this run,
# it was removed from the table, or the earlier run recorded no claims at all (an archive made before
# archives held claims.csv)
CLAIM_STATUSES = ("changed", "same", "new", "removed", "unrecorded")
# fragile: why the claim is fragile in either run ('' when in neither): a fragile claim that changes verdict is
# one two machines may disagree on, not a finding
CLAIM_COLUMNS = ["archive", "claim", "id", "old", "new", "changed", "status", "fragile", "old_reason", "new_reason",
                 "conclusion", "old_env", "new_env"]
NO_CLAIMS = "no claims recorded in that run"


def archived_claims(root) -> pd.DataFrame | None:
    """An archived run's (or results folder's) claims.csv as text cells; None when that run recorded none."""
    path = Path(root) / "claims.csv"
    return pd.read_csv(path, dtype=str, keep_default_na=False) if path.exists() else None


def _with_fragile(claims: pd.DataFrame) -> pd.DataFrame:
    """Text cells, with a `fragile` column (empty for a run archived before claims had one)."""
    out = claims.fillna("").astype(str)
    return out if "fragile" in out else out.assign(fragile="")


def claim_changes(old: pd.DataFrame | None, new: pd.DataFrame, archive: str, old_env: str = "",
                  new_env: str = "") -> pd.DataFrame:
    """Every claim of two runs (their claims.csv) with whether its verdict changed, the claims whose verdict
    changed first (in this run's order), then the rest. `old` None: the earlier run recorded no claims, so
    every claim reads `unrecorded` with the reason NO_CLAIMS (nothing is compared)."""
    new = _with_fragile(new)
    rows = []
    if old is None:
        for r in new.itertuples(index=False):
            rows.append({"claim": r.claim, "id": r.id, "old": "", "new": r.verdict, "status": "unrecorded",
                         "fragile": r.fragile, "old_reason": NO_CLAIMS, "new_reason": r.reason,
                         "conclusion": r.conclusion})
    else:
        before = _with_fragile(old).drop_duplicates("claim").set_index("claim")
        for r in new.itertuples(index=False):
            if r.claim not in before.index:
                status, was, why, frag = "new", "", "not in that run's claims", r.fragile
            else:
                was, why = before.at[r.claim, "verdict"], before.at[r.claim, "reason"]
                status = "same" if was == r.verdict else "changed"
                frag = r.fragile or before.at[r.claim, "fragile"]
            rows.append({"claim": r.claim, "id": r.id, "old": was, "new": r.verdict, "status": status,
                         "fragile": frag, "old_reason": why, "new_reason": r.reason, "conclusion": r.conclusion})
        for claim, r in before[~before.index.isin(set(new.claim))].iterrows():
            rows.append({"claim": claim, "id": r.id, "old": r.verdict, "new": "", "status": "removed",
                         "fragile": r.fragile, "old_reason": r.reason, "new_reason": "not in this run's claims",
                         "conclusion": r.conclusion})
    out = pd.DataFrame(rows, columns=["claim", "id", "old", "new", "status", "fragile", "old_reason", "new_reason",
                                      "conclusion"])
    out = out.assign(archive=archive, changed=out.status == "changed", old_env=old_env, new_env=new_env)
    order = out.status.map({s: i for i, s in enumerate(CLAIM_STATUSES)})
    return out.iloc[order.argsort(kind="stable")].reset_index(drop=True)[CLAIM_COLUMNS]


def compare_runs(comparison: pd.DataFrame, archives: list[str], rel_threshold: float, current_env: dict,
                 timing_threshold: float = 0.10, results_dir: str = "results",
                 claims: pd.DataFrame | None = None) -> dict:
    """results/changes.csv: this run (its `comparison` table) against each archive listed in compare_to;
    results/claims_changes.csv: this run's `claims` (results/claims.csv) against each archive's."""
    new = comparison
    frames, claim_frames = [], []
    # the machines: this run's as its jobs recorded them; an archive made before manifests held one, from its meta.json
    current_env = {"machine": run_machine(results_dir), **current_env}
    for path in archives:
        manifest = json.loads((Path(path) / "MANIFEST.json").read_text())
        manifest.setdefault("machine", run_machine(path))
        old_env, new_env = environment_line(manifest), environment_line(current_env)
        frames.append(changes(read_csv(Path(path) / "comparison.csv"), new, Path(path).name,
                              old_env, new_env, rel_threshold, timing_threshold, Path(path), Path(results_dir)))
        if claims is not None:
            claim_frames.append(claim_changes(archived_claims(path), claims, Path(path).name, old_env, new_env))
    return {"changes": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS),
            "claims_changes": pd.concat(claim_frames, ignore_index=True) if claim_frames
            else pd.DataFrame(columns=CLAIM_COLUMNS)}
