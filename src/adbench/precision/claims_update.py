"""The P family's conclusions about rounding at a boundary and at the update: ties at a subnormal midpoint (P2), the
loss scale through backward (P4), and what a weight update keeps in fp16, bf16, fp32 and fp64 (P6). Imported by
precision/claims.py; every bound is a format landmark read from P1 or a size the documents' sentence names.
"""

from __future__ import annotations

import math

import numpy as np

from ..claims import Edge, Flip, Move, at_least, at_most, flag, g, judged, qv, relation, row, sources
from ..claims.helpers import decades
from .formats import TIES

sources("P4/leaf_grads", {"param": "input", "index": "input", "scale": "input", "grad": "autograd on L",
                          "scaled_grad": "autograd on S * L", "scale_times_grad": "autograd on L"})
sources("P6/values", {"update_in_fp16": "torch fp16 cast", "update": "input", "fp16_weight": "fp16 additions",
                      "fp32_master": "fp32 additions", "exact": "exact rational sum",
                      "fp16_spacing_at_1": "fp16 nextafter", "fp32_drift": "fp32 additions, exact rational sum",
                      "fp64_master": "fp64 additions", "fp64_drift": "fp64 additions, exact rational sum"},
        by="quantity")
sources("P6/direct_update", {"weight": "input", "update": "input", "fp16_update": "torch fp16 cast",
                             "fp16_after": "fp16 addition", "fp16_changes": "fp16 addition",
                             "bf16_update": "torch bf16 cast", "bf16_after": "bf16 addition",
                             "bf16_changes": "bf16 addition"})


def _fmt(t, name: str):
    return row(t["P1/landmarks"], "format", name)


def _gap_above(t, name: str, w: float) -> float:
    """The gap above a normal weight w in a format, from its gap above 1."""
    return float(_fmt(t, name).gap_above_1) * 2.0 ** math.floor(math.log2(abs(w)))


# ---- P2: the tie rule at a subnormal midpoint ----------------------------------------------------------------
def _ties(t):
    d = t["P2/casts"]
    return d[d.role.isin(list(TIES.values()))]


def _tie_to_even(steps: float) -> float:
    """The even neighbour of a midpoint k/2 (k odd), in subnormal steps."""
    lo = math.floor(steps)
    return float(lo if lo % 2 == 0 else lo + 1)


def _first_tie(t) -> dict:
    return {"role": TIES[min(TIES)]}


@relation("P2/casts", "P1/landmarks", edge=Edge(Move("P2/casts", _first_tie, "fp16", 0.0),
                                                Move("P2/casts", _first_tie, "fp16",
                                                     lambda t: float(_fmt(t, "fp16").smallest_subnormal))))
def midpoint_ties_to_even(t):
    """A value exactly half-way between two fp16 subnormals goes to the neighbour with an even significand, in torch
    and numpy: half a step to zero, three halves up to two steps, five halves down to two; the probes sit exactly on
    midpoints and between them tell ties-to-even from ties away from zero and from truncation."""
    sub = float(_fmt(t, "fp16").smallest_subnormal)
    d = _ties(t)
    steps = d.grad / sub
    want = np.array([_tie_to_even(s) * sub for s in steps])
    on_mid = all(float(s) * 2 % 2 == 1 for s in steps)
    down, up = (steps > want / sub).any(), (steps < want / sub).any()
    return judged("midpoints (subnormal steps -> fp16 steps): " + ", ".join(
                      f"{s:g} -> {f / sub:g} (numpy {n / sub:g})" for s, f, n in zip(steps, d.fp16, d.numpy_fp16)),
                  flag(len(d) >= 2 and on_mid, "every probe exactly half-way between two subnormals"),
                  flag(bool(down and up), "ties both down and up: the rule is not a direction"),
                  flag(bool((d.fp16.to_numpy(float) == want).all()), "torch: every tie to the even neighbour"),
                  flag(bool((d.numpy_fp16.to_numpy(float) == want).all()), "numpy: every tie to the even neighbour"))


# ---- P4: the scale through backward ----------------------------------------------------------------------------
def _leaf_worst(t) -> dict:
    d = t["P4/leaf_grads"]
    return {"param": d.param.iloc[0], "index": int(d["index"].iloc[0])}


def _nudged(t) -> float:
    """The first leaf's scaled gradient one float32 gap away from S times its gradient."""
    v = float(t["P4/leaf_grads"].scale_times_grad.iloc[0])
    return float(np.nextafter(np.float32(v), np.float32(np.inf)))


@relation("P4/leaf_grads", edge=Edge(Move("P4/leaf_grads", _leaf_worst, "scaled_grad",
                                          lambda t: float(t["P4/leaf_grads"].scale_times_grad.iloc[0])),
                                     Move("P4/leaf_grads", _leaf_worst, "scaled_grad", _nudged)))
def loss_scale_scales_every_grad(t):
    """Backward of S * L gives every leaf gradient times S, exactly (bit for bit) for a power-of-two S: autograd run
    on the scaled loss beside autograd on L, multiplied afterwards."""
    d = t["P4/leaf_grads"]
    scale = float(d.scale.iloc[0])
    off = (d.scaled_grad - d.scale_times_grad).abs()
    ulp = np.spacing(d.scale_times_grad.abs().to_numpy(np.float32)).astype(float)
    worst = float((off / ulp).max())
    return judged(f"{len(d)} leaf gradients of {d.param.nunique()} tensors, S = {scale:g}: largest "
                  f"|dL_S/dw - S dL/dw| {g(off.max())} ({g(worst)} float32 gaps)",
                  flag(scale > 0 and math.log2(scale).is_integer(), "S is a power of two"),
                  flag(bool((d.grad != 0).all()), "every leaf gradient is nonzero"),
                  at_most(worst, 0.0, "every leaf gradient exactly S times (float32 gaps off)", "gaps"))


# ---- P6: the update itself, more precision, bf16 ----------------------------------------------------------------
def _u16(t) -> float:
    return float(qv(t["P6/values"], "update_in_fp16"))


@relation("P6/values", "P1/landmarks", edge=Flip("P6/values", {"quantity": "update_in_fp16"}, "value",
                                                 holding=_u16, failing=lambda t: 0.99 * _u16(t)))
def update_is_a_normal_fp16(t):
    """The update did not underflow: stored on its own in fp16 it is a normal number, kept within half fp16's
    relative gap; it is lost only when added to the weight."""
    u, u16 = float(qv(t["P6/values"], "update")), _u16(t)
    f = _fmt(t, "fp16")
    rel = abs(u16 - u) / u / (float(f.gap_above_1) / 2)
    return judged(f"the update {u:g} in fp16: {g(u16)} (relative error {g(rel)} half gaps; smallest normal "
                  f"{g(f.smallest_normal)}, x{g(u16 / float(f.smallest_normal))})",
                  flag(u16 >= float(f.smallest_normal), "a normal fp16 number, not a subnormal or zero"),
                  at_most(rel, 1.0, "its relative error within half fp16's gap", "half gaps"))


def _last(t):
    return t["P6/trajectory"].sort_values("step").iloc[-1]


def _drifts(t) -> tuple[float, float]:
    end = _last(t)
    return abs(float(end.fp32_master - end.exact)), abs(float(end.fp64_master - end.exact))


@relation("P6/trajectory", edge=Flip("P6/trajectory", lambda t: {"step": _last(t).step}, "fp64_master",
                                     holding=lambda t: _last(t).fp64_master,
                                     failing=lambda t: 2 * _last(t).fp32_master - _last(t).exact))
def more_precision_less_drift(t):
    """The same updates added to an fp64 master drift from the exact sum less than fp32's, and still drift: more
    precision reduces the accumulated error without turning floating point into real arithmetic."""
    d32, d64 = _drifts(t)
    return judged(f"after {int(_last(t).step)} updates: fp32 drift {g(d32)}, fp64 drift {g(d64)}",
                  at_least(decades(d32) - decades(d64), 0.0, "fp64's drift below fp32's", "decades", 0.1,
                           strict=True),
                  flag(d64 > 0, "fp64 still drifts: not real arithmetic"))


def _direct(t):
    return t["P6/direct_update"].sort_values("update")


def _lost_only_in_bf16(t) -> dict:
    d = _direct(t)
    return {"update": float(d[(d.bf16_changes == "no") & (d.fp16_changes == "yes")]["update"].max())}


@relation("P6/direct_update", "P1/landmarks",
          edge=Edge(Move("P6/direct_update", _lost_only_in_bf16, "bf16_changes", "no"),
                    Move("P6/direct_update", _lost_only_in_bf16, "bf16_changes", "yes")))
def bf16_swamps_worse(t):
    """Added directly to a 16-bit weight, an update stored in the format is lost exactly when it is at most half the
    gap above the weight (P1's landmark); bf16's gap is wider, so bf16 loses every update fp16 loses and more:
    some update fp16 keeps, bf16 loses."""
    d = _direct(t)
    checks, lost = [], {}
    for name in ("fp16", "bf16"):
        half = np.array([_gap_above(t, name, w) / 2 for w in d.weight])
        rule = (d[f"{name}_update"].to_numpy(float) <= half) == (d[f"{name}_changes"] == "no").to_numpy()
        lost[name] = d["update"][d[f"{name}_changes"] == "no"]
        checks.append(flag(bool(rule.all()), f"{name}: lost exactly when at most half the gap above the weight"))
    only_bf16 = set(lost["bf16"]) - set(lost["fp16"])
    return judged(f"{len(d)} updates from {g(d['update'].min())} to {g(d['update'].max())} on a weight of "
                  f"{g(d.weight.iloc[0])}: fp16 loses {len(lost['fp16'])} (up to {g(lost['fp16'].max())}), bf16 "
                  f"loses {len(lost['bf16'])} (up to {g(lost['bf16'].max())})",
                  *checks,
                  flag(set(lost["fp16"]) <= set(lost["bf16"]), "bf16 loses every update fp16 loses"),
                  at_least(len(only_bf16), 1, "updates fp16 keeps and bf16 loses: some", "updates"))
