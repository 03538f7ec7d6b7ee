"""P1-P3, P7, P8: format landmarks, casts of small gradients, spacing, bf16 beside fp16.

Every landmark is read from the format itself (torch.finfo, torch.nextafter) and
cross-checked against numpy's float16 where numpy has the type; nothing is typed in.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import torch

from ..tables import values_table

log = logging.getLogger(__name__)
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64}
# measurement-level controls (claims_bugs.py): each a realistic bug of the measurement, None in every real run. With
# a bug on, the numpy cross-checks that would stop the job are skipped: the controls show the claims catch it too.
FORMATS_BUGS = ("round-toward-zero", "absolute-error", "bf16-truncated", "update-promoted", "bf16-via-fp16")


def cast(x: float, dtype: torch.dtype) -> float:
    """Round a binary64 number to `dtype` (round to nearest, ties to even) and back."""
    return torch.tensor(x, dtype=torch.float64).to(dtype).to(torch.float64).item()


def cast_toward_zero(x: float, dtype: torch.dtype) -> float:
    """A hand-rolled cast that truncates (rounds toward zero): what masking off low bits does."""
    r = cast(x, dtype)
    if abs(r) > abs(x):
        r = torch.nextafter(torch.tensor(r, dtype=dtype), torch.tensor(0.0, dtype=dtype)).double().item()
    return r


def _check_bug(bug: str | None) -> None:
    if bug not in (None, *FORMATS_BUGS):
        raise ValueError(f"bug {bug!r} not in {FORMATS_BUGS}")


def next_above(x: float, dtype: torch.dtype) -> float:
    """The next representable value above `x` in `dtype`."""
    a = torch.tensor(x, dtype=dtype)
    return torch.nextafter(a, torch.tensor(float("inf"), dtype=dtype)).double().item()


def landmarks(dtype: torch.dtype) -> dict[str, float]:
    """Smallest normal, smallest subnormal, largest finite and gap above 1.0 of a format."""
    fi = torch.finfo(dtype)
    return {"smallest_normal": float(fi.smallest_normal), "smallest_subnormal": next_above(0.0, dtype),
            "largest": float(fi.max), "gap_above_1": next_above(1.0, dtype) - 1.0}


def _numpy_fp16_landmarks() -> dict[str, float]:
    """The same landmarks from numpy's independent float16 implementation."""
    fi = np.finfo(np.float16)
    one = np.float16(1)
    return {"smallest_normal": float(fi.smallest_normal), "smallest_subnormal": float(fi.smallest_subnormal),
            "largest": float(fi.max), "gap_above_1": float(np.nextafter(one, np.float16(2)) - one)}


def _check_numpy(name: str, torch_value: float, numpy_value: float) -> None:
    if torch_value != numpy_value:
        raise AssertionError(f"{name}: torch gives {torch_value!r}, numpy float16 gives {numpy_value!r}")


def measure_p1() -> dict:
    """P1: fp16 landmarks for every format, with numpy as a cross-check for fp16."""
    table = pd.DataFrame([{"format": k, **landmarks(dt)} for k, dt in DTYPES.items()])
    ours, ref = landmarks(torch.float16), _numpy_fp16_landmarks()
    for k in ours:
        _check_numpy(f"fp16 {k}", ours[k], ref[k])
    table["log2_smallest_normal"] = np.log2(table.smallest_normal)
    table["log2_smallest_subnormal"] = np.log2(table.smallest_subnormal)
    items = [(f"fp16_{k}", v) for k, v in ours.items()]
    return {"values": values_table("P1", items, {q: "torch and numpy float16 agree bit for bit" for q, _ in items}),
            "landmarks": table}


# P2/casts `role` of the value cast between half the smallest subnormal and the subnormal itself
PROBE = "probe: 3/4 of the smallest subnormal"
# P2/casts roles of the midpoints k/2 subnormal steps (k odd): ties to even go down at 1/2 and 5/2, up at 3/2, so
# they tell ties-to-even from ties away from zero (1, 3 steps at 1/2, 5/2) and from truncation (1 step at 3/2)
TIES = {k: f"tie: {k}/2 subnormal steps" for k in (1, 3, 5)}


def measure_p2(grads: list[float], bug: str | None = None) -> dict:
    """P2: small gradients cast to fp16 (torch) beside numpy's float16, one probe below the smallest subnormal but
    above half of it (round to nearest keeps it, so zero starts at half a step, not at one), and three midpoints."""
    _check_bug(bug)
    sub = landmarks(torch.float16)["smallest_subnormal"]
    to16 = cast_toward_zero if bug == "round-toward-zero" else cast  # bug: a truncating cast
    probes = [(0.75 * sub, PROBE)] + [(k * sub / 2, role) for k, role in TIES.items()]  # exact in binary64
    rows = []
    for g, role in [(g, "configured") for g in grads] + probes:
        t, n = to16(g, torch.float16), float(np.float16(g))
        if bug is None:
            _check_numpy(f"cast {g:g}", t, n)
        rows.append({"grad": g, "role": role, "fp16": t, "numpy_fp16": n, "subnormal_steps": t / sub})
    configured = [r for r in rows if r["role"] == "configured"]  # the documented values; the probe is a control
    # Names are fixed by position in precision.fp16_grads; the gradient itself is a note and the casts table's
    # `grad` column, never part of the name (documented rows declare the item they were measured under).
    items = [(f"cast_grad{i}", r["fp16"]) for i, r in enumerate(configured)]
    items += [(f"subnormal_steps_grad{i}", r["subnormal_steps"]) for i, r in enumerate(configured)]  # "two steps"
    notes = {f"{q}_grad{i}": grad_note(i, r["grad"])
             for i, r in enumerate(configured) for q in ("cast", "subnormal_steps")}
    return {"values": values_table("P2", items, notes), "casts": pd.DataFrame(rows)}


def grad_note(index: int, grad: float) -> str:
    """The configured gradient a P2 row measured, named by its key: 'precision.fp16_grads[2] = 1e-07'."""
    return f"precision.fp16_grads[{index}] = {grad:g}"


def error_sweep(lo_exp: float, hi_exp: float, points: int, bug: str | None = None) -> pd.DataFrame:
    """Relative error of fp16 and bf16 casts at `points` log-spaced x in [10^lo, 10^hi]."""
    x = torch.logspace(lo_exp, hi_exp, points, dtype=torch.float64)
    out = {"x": x.numpy()}
    for k in ("fp16", "bf16"):
        if bug == "bf16-truncated" and k == "bf16":  # bug: bf16 emulated by dropping fp32's low 16 bits
            c = (x.float().view(torch.int32) & -65536).view(torch.float32).double()
        else:
            c = x.to(DTYPES[k]).to(torch.float64)
        out[f"{k}_rel_error"] = ((c - x).abs() / x).numpy()
    return pd.DataFrame(out)


def rel_error(cast_x: float, x: float, bug: str | None = None) -> float:
    """|cast(x) - x| / |x| (bug "absolute-error": the division dropped)."""
    return abs(cast_x - x) / (1.0 if bug == "absolute-error" else abs(x))


def measure_p3(xs: list[float], sweep: dict, bug: str | None = None) -> dict:
    """P3: relative representation error |cast(x) - x| / |x| in fp16 and bf16."""
    _check_bug(bug)
    for x in xs:
        _check_numpy(f"cast {x:g}", cast(x, torch.float16), float(np.float16(x)))
    rows = [{"x": x, "fp16": cast(x, torch.float16), "fp16_rel_error": rel_error(cast(x, torch.float16), x, bug),
             "bf16": cast(x, torch.bfloat16), "bf16_rel_error": rel_error(cast(x, torch.bfloat16), x, bug)}
            for x in xs]
    items = [(f"relerr_{r['x']:.0e}", r["fp16_rel_error"]) for r in rows]
    return {"values": values_table("P3", items), "errors": pd.DataFrame(rows),
            "sweep": error_sweep(sweep["lo_exp"], sweep["hi_exp"], sweep["points"], bug)}


def measure_p7(weights: list[float], update: float, bug: str | None = None) -> dict:
    """P7: gap to the next fp16 value above each weight, and whether +update moves it."""
    _check_bug(bug)
    # bug: the update made an fp32 tensor, which promotes the sum to fp32
    u16 = torch.tensor(update, dtype=torch.float32 if bug == "update-promoted" else torch.float16)
    rows = []
    for w in weights:
        w16 = torch.tensor(w, dtype=torch.float16)
        moved = bool((w16 + u16) != w16)   # one fp16 addition, rounded to fp16
        _check_numpy(f"gap above {w:g}", next_above(w, torch.float16) - w, float(np.spacing(np.float16(w))))
        if bug is None:
            _check_numpy(f"{w:g} + {update:g}", (w16 + u16).item(), float(np.float16(w) + np.float16(update)))
        rows.append({"weight": w, "fp16_gap_above": next_above(w, torch.float16) - w,
                     "half_gap": (next_above(w, torch.float16) - w) / 2, "update": update,
                     "update_changes_weight": "yes" if moved else "no"})
    table = pd.DataFrame(rows)
    items = [(f"gap_{r['weight']:g}", r["fp16_gap_above"]) for r in rows]
    items += [(f"changes_{r['weight']:g}", r["update_changes_weight"]) for r in rows]
    return {"values": values_table("P7", items), "spacing": table}


def measure_p8(values: list[float], bug: str | None = None) -> dict:
    """P8: bf16 beside fp16: casts of tiny values, gaps above 1.0, bf16's smallest normal."""
    _check_bug(bug)
    # bug: the values reach bf16 through an fp16 copy (a model stored in fp16, converted)
    via = (lambda v: cast(cast(v, torch.float16), torch.bfloat16)) if bug == "bf16-via-fp16" else (
        lambda v: cast(v, torch.bfloat16))
    casts = pd.DataFrame([{"value": v, "fp16": cast(v, torch.float16), "numpy_fp16": float(np.float16(v)),
                           "bf16": via(v)} for v in values])
    for r in casts.itertuples():
        _check_numpy(f"cast {r.value:g}", r.fp16, r.numpy_fp16)
    gaps = pd.DataFrame([{"format": k, "gap_above_1": landmarks(DTYPES[k])["gap_above_1"],
                          "smallest_normal": landmarks(DTYPES[k])["smallest_normal"]}
                         for k in ("fp16", "bf16", "fp32")])
    gaps["gap_over_fp16_gap"] = gaps.gap_above_1 / gaps.gap_above_1.iloc[0]
    items = []
    for r in casts.itertuples():
        items += [(f"fp16_{r.value:.0e}", r.fp16), (f"bf16_{r.value:.0e}", r.bf16)]
    items += [(f"gap_{r.format}", r.gap_above_1) for r in gaps.itertuples()]
    g = gaps.set_index("format")
    items += [("gap_bf16_exact", g.gap_above_1["bf16"]), ("bf16_gap_over_fp16", g.gap_over_fp16_gap["bf16"])]
    items.append(("bf16_smallest_normal", landmarks(torch.bfloat16)["smallest_normal"]))
    return {"values": values_table("P8", items), "casts": casts, "gaps": gaps}


def measure_formats(grads: list[float], rel_error_x: list[float], rel_error_sweep: dict,
                    spacing_weights: list[float], update: float, bf16_values: list[float]) -> dict:
    """One job for P1, P2, P3, P7 and P8 (each is milliseconds; torch's import dominates)."""
    out: dict = {}
    for mid, res in (("p1", measure_p1()), ("p2", measure_p2(grads)), ("p3", measure_p3(rel_error_x, rel_error_sweep)),
                     ("p7", measure_p7(spacing_weights, update)), ("p8", measure_p8(bf16_values))):
        out[mid.upper()] = res
        log.info("%s: %d value rows", mid.upper(), len(res["values"]))
    return out
