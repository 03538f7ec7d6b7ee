"""The P family's conclusions, tested: fp16 and bf16 casts, loss scaling, swamping, GPT-2 gradients in 16 bits.

Each relation reads this family's tables (results/P*/) and returns an Outcome whose checks carry their margins;
each declares its two boundary controls (`edge`). `sources` says which computation produced each cell. Every bound
is a format landmark read from P1 (finfo, nextafter) or a size the documents' sentence names; casts are exact IEEE
rounding, the same on every machine, so their checks carry no band.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..claims import (Edge, Flip, Move, Moves, at_least, at_most, flag, g, judged, near, relation, row, sources,
                      times_at_least, truthy)
from .formats import PROBE, TIES

sources("P1/landmarks", {"smallest_normal": "format landmarks", "smallest_subnormal": "format landmarks",
                         "largest": "format landmarks", "gap_above_1": "format landmarks",
                         "log2_smallest_normal": "format landmarks", "log2_smallest_subnormal": "format landmarks"},
        by="format")
sources("P2/casts", {"fp16": "torch fp16 cast", "numpy_fp16": "numpy float16 cast",
                     "subnormal_steps": "torch fp16 cast, format landmarks", "configured:grad": "input",
                     f"{PROBE}:grad": "format landmarks",
                     **{f"{role}:grad": "format landmarks" for role in TIES.values()}}, by="role")
sources("P3/errors", {"x": "input", "fp16": "torch fp16 cast", "fp16_rel_error": "torch fp16 cast",
                      "bf16": "torch bf16 cast", "bf16_rel_error": "torch bf16 cast"})
sources("P3/sweep", {"x": "input", "fp16_rel_error": "torch fp16 cast (sweep)",
                     "bf16_rel_error": "torch bf16 cast (sweep)"})
sources("P4/static", {"grad": "input", "scale": "input", "scaled_exact": "input", "scaled_fp16": "scaled fp16 cast",
                      "finite": "scaled fp16 cast", "unscaled": "scaled fp16 cast",
                      "unscaled_rel_error": "scaled fp16 cast", "unscaled_fp16_direct": "torch fp16 cast"})
sources("P5/attempts", {"attempt": "dynamic scaler", "scale": "dynamic scaler", "grad": "input",
                        "scaled_fp16": "dynamic scaler", "finite": "dynamic scaler", "step": "dynamic scaler"})
sources("P5/settled", {"grad": "input", "scale": "dynamic scaler", "scaled_fp16": "scaled fp16 cast",
                       "unscaled": "scaled fp16 cast"})
sources("P6/trajectory", {"step": "input", "fp16": "fp16 additions", "fp32_master": "fp32 additions",
                          "exact": "exact rational sum", "fp64_master": "fp64 additions"})
sources("P7/spacing", {"weight": "input", "fp16_gap_above": "fp16 nextafter", "half_gap": "fp16 nextafter",
                       "update": "input", "update_changes_weight": "fp16 addition"})
sources("P8/casts", {"value": "input", "fp16": "torch fp16 cast", "numpy_fp16": "numpy float16 cast",
                     "bf16": "torch bf16 cast"})
sources("P8/gaps", {"gap_above_1": "format landmarks", "smallest_normal": "format landmarks",
                    "gap_over_fp16_gap": "format landmarks"}, by="format")
sources("P9/summary", {"values": "gradient count", "fp32_zeros": "gradient count", "to_zero": "16-bit cast count",
                       "to_zero_pct": "16-bit cast count", "scale": "input",
                       "scaled_still_zero": "scaled 16-bit cast count",
                       "scaled_recovered": "16-bit cast count, scaled 16-bit cast count",
                       "scaled_above_fp16_max": "scaled 16-bit cast count",
                       "scaled_to_inf": "scaled 16-bit cast count"}, by="dtype")


def _fmt(t, name: str):
    return row(t["P1/landmarks"], "format", name)


def _half_ulp(t, name: str, x: float) -> float:
    """Half the gap above |x| in a format, from its gap above 1 (normal range): round to nearest's worst error."""
    return float(_fmt(t, name).gap_above_1) * 2.0 ** math.floor(math.log2(abs(x))) / 2


# ---- P2, P3 -------------------------------------------------------------------------------------------------
def _sub(t) -> float:
    return float(_fmt(t, "fp16").smallest_subnormal)


@relation("P2/casts", "P1/landmarks",
          edge=Edge(Move("P2/casts", {"role": PROBE}, "fp16", _sub), Move("P2/casts", {"role": PROBE}, "fp16", 0.0)))
def below_half_subnormal_rounds_to_zero(t):
    """Zero exactly where a value lies below half the smallest subnormal (or on it: ties to even); the probe between
    half the subnormal and the subnormal itself is kept (a rule that flushed everything below the subnormal would
    zero it)."""
    d, sub = t["P2/casts"], _sub(t)
    probe = row(d, "role", PROBE)
    flushed = d.grad <= sub / 2  # the midpoint itself ties to even: to zero
    rule = ((d.fp16 == 0) == flushed) & ((d.numpy_fp16 == 0) == flushed)
    return judged("fp16 casts: " + ", ".join(f"{x:.3g} -> {y:.4g}" for x, y in zip(d.grad, d.fp16))
                  + f"; half the smallest subnormal {g(sub / 2)}",
                  flag(sub / 2 < probe.grad < sub, "the probe lies between half the subnormal and the subnormal"),
                  flag(probe.fp16 > 0 and probe.numpy_fp16 > 0, "the probe survives the cast (torch and numpy)"),
                  flag(rule.all(), "zero exactly below half the smallest subnormal, every value, torch and numpy"))


def _normal_worst(t) -> float:
    sw = t["P3/sweep"]
    return float(sw[sw.x >= float(_fmt(t, "fp16").smallest_normal)].fp16_rel_error.max())


def _below_normal(t):
    d = t["P3/errors"]
    return d[d.x < float(_fmt(t, "fp16").smallest_normal)]


@relation("P3/errors", "P3/sweep", "P1/landmarks",
          edge=Flip("P3/errors", lambda t: {"x": _below_normal(t).x.max()}, "fp16_rel_error",
                    holding=lambda t: 2 * _normal_worst(t), failing=lambda t: 0.9 * _normal_worst(t), log=True))
def fp16_error_grows_below_normal(t):
    """In the normal range a cast moves a value by at most half a gap (relative). Below it every documented value
    is moved more, more the smaller it is, and a value the cast still keeps is distorted at least ten times the
    normal range's worst (the documents: 1.3 % at 1e-6, almost 100 % at 3e-8)."""
    normal_worst, half = _normal_worst(t), float(_fmt(t, "fp16").gap_above_1) / 2
    low = _below_normal(t).sort_values("x", ascending=False)
    err = low.fp16_rel_error.to_numpy(float)
    kept = low[low.fp16 != 0]
    return judged(f"largest relative error in the normal range {g(normal_worst)} (half a gap {g(half)}); below it: "
                  + ", ".join(f"x={x:g}: {g(e)}" for x, e in zip(low.x, low.fp16_rel_error)),
                  times_at_least(err.min() if len(err) else math.nan, normal_worst, 1,
                                 "below normal: every error above the normal range's worst", band=0.0),
                  flag(len(low) > 1 and (low.x > 0).all(), "documented values below the normal range, above zero"),
                  flag(bool(np.all(np.diff(err) > 0)), "the error grows as the value shrinks"),
                  times_at_least(kept.fp16_rel_error.max() if len(kept) else math.nan, normal_worst, 10,
                                 "a value the cast keeps: at least x10 the normal range's worst", band=0.0),
                  at_most(normal_worst / half, 1.0, "normal-range error over half fp16's gap", "half gaps"))


@relation("P3/sweep", "P1/landmarks",
          edge=Flip("P3/sweep", lambda t: {"x": t["P3/sweep"].x.min()}, "bf16_rel_error",
                    holding=0.0, failing=lambda t: float(_fmt(t, "bf16").gap_above_1)))
def bf16_relative_error_bounded(t):
    """Over the whole sweep (ten decades, far below fp16's normal range) bf16 stays within half its gap, relative:
    every swept value is a bf16 normal."""
    sw = t["P3/sweep"]
    half = float(_fmt(t, "bf16").gap_above_1) / 2
    worst = float(sw.bf16_rel_error.max())
    return judged(f"largest bf16 relative error over {len(sw)} values from {g(sw.x.min())} to {g(sw.x.max())}: "
                  f"{g(worst)} (half its gap {g(half)})",
                  flag(sw.x.min() >= float(_fmt(t, "bf16").smallest_normal), "every swept value is a bf16 normal"),
                  flag(sw.x.min() < float(_fmt(t, "fp16").smallest_normal), "the sweep reaches below fp16's normals"),
                  at_most(worst / half, 1.0, "largest bf16 error over half its gap", "half gaps"))


# ---- P4, P5 -------------------------------------------------------------------------------------------------
def _overflow_at(t) -> float:
    """Round to nearest sends to inf what lies at or above the largest finite value plus half its gap."""
    big = float(_fmt(t, "fp16").largest)
    return big + _half_ulp(t, "fp16", big)


def _tiny(t):
    d = t["P4/static"]
    return d.loc[d.grad.idxmin()]


@relation("P4/static", "P1/landmarks",
          edge=Flip("P4/static", lambda t: {"grad": _tiny(t).grad}, "unscaled", holding=lambda t: _tiny(t).grad,
                    failing=lambda t: 1.01 * _tiny(t).grad))
def static_scale_rescues_small_overflows_large(t):
    """The smallest gradient, zero in fp16, comes back within fp16's rounding through the scale; exactly the scaled
    values past fp16's overflow threshold become infinite, and the large ones do."""
    d, tiny = t["P4/static"], _tiny(t)
    rel = abs(float(tiny.unscaled) - float(tiny.grad)) / float(tiny.grad)
    over = _overflow_at(t)
    finite = d.finite.map(truthy)
    return judged(f"smallest grad {g(tiny.grad)}: fp16 alone {tiny.unscaled_fp16_direct}, scaled and back "
                  f"{g(tiny.unscaled)} (relative error {g(rel)}); scaled values at or above {over:g} "
                  f"overflow: {', '.join(f'{x:g}' for x in d.scaled_exact[~finite])}",
                  flag(tiny.unscaled_fp16_direct == 0, "fp16 alone zeroes the smallest gradient"),
                  at_most(rel / (float(_fmt(t, "fp16").gap_above_1) / 2), 1.0,
                          "the rescued gradient's error over fp16's half gap (relative)", "half gaps"),
                  flag(((d.scaled_exact >= over) == ~finite).all(), "infinite exactly past the overflow threshold"),
                  flag((~finite).any(), "the scale overflows a large gradient"))


def _attempts(t):
    a = t["P5/attempts"]
    return a.groupby("attempt").agg(scale=("scale", "first"), finite=("finite", lambda x: x.map(truthy).all()))


@relation("P5/attempts", "P5/settled", "P1/landmarks",
          edge=Flip("P5/settled", lambda t: {"grad": t["P5/settled"].grad.min()}, "unscaled",
                    holding=lambda t: t["P5/settled"].grad.min(), failing=lambda t: 1.01 * t["P5/settled"].grad.min()))
def dynamic_scale_halves_until_finite(t):
    """Every overflowing attempt halves the scale, the first finite one is kept, and both gradients come back
    within fp16's rounding (relative half gap)."""
    per, s = _attempts(t), t["P5/settled"]
    halves = all(per.scale.iloc[i + 1] == per.scale.iloc[i] / 2 for i in range(len(per) - 1))
    half = float(_fmt(t, "fp16").gap_above_1) / 2
    errs = [abs(r.unscaled - r.grad) / abs(r.grad) / half for r in s.itertuples()]
    return judged(f"scales {per.scale.tolist()}, all finite {per.finite.tolist()}; unscaled "
                  + ", ".join(f"{r.grad:g} -> {g(r.unscaled)}" for r in s.itertuples()),
                  flag(len(per) > 1 and halves, "an overflow, then each attempt halves the scale"),
                  flag(bool(per.finite.iloc[-1]) and not per.finite.iloc[:-1].any(),
                       "the first finite attempt is kept"),
                  flag((s.scale == per.scale.iloc[-1]).all(), "the gradients are unscaled by the kept scale"),
                  at_most(max(errs), 1.0, "largest recovered error over fp16's half gap (relative)", "half gaps"))


# ---- P6, P7, P8 ------------------------------------------------------------------------------------------------
def _p6(t):
    d = t["P6/trajectory"].sort_values("step")
    return d.iloc[0], d.iloc[-1]


def _drift_bound(t) -> float:
    """One fp32 rounding per addition (half a gap at the largest value reached) plus the update's own fp32
    rounding, added once per step."""
    start, end = _p6(t)
    steps = float(end.step)
    update = (float(end.exact) - float(start.exact)) / steps
    return steps * (_half_ulp(t, "fp32", max(abs(end.exact), abs(start.exact))) + _half_ulp(t, "fp32", update))


@relation("P6/trajectory", "P1/landmarks",
          edge=Flip("P6/trajectory", lambda t: {"step": _p6(t)[1].step}, "fp32_master",
                    holding=lambda t: _p6(t)[1].exact + _drift_bound(t) / 2,
                    failing=lambda t: _p6(t)[1].exact + 2 * _drift_bound(t)))
def fp16_weight_swamped_master_moves(t):
    """The fp16 weight never moves; the fp32 master makes the exact movement up to a drift that is not zero and
    stays within one fp32 rounding per addition."""
    d = t["P6/trajectory"]
    start, end = _p6(t)
    moved, exact_moved = float(end.fp32_master - start.fp32_master), float(end.exact - start.exact)
    drift, bound = abs(float(end.fp32_master - end.exact)), _drift_bound(t)
    return judged(f"after {int(end.step)} updates: fp16 {end.fp16}, fp32 master {g(end.fp32_master)}, exact "
                  f"{g(end.exact)} (drift {g(drift)}, rounding bound {g(bound)})",
                  flag((d.fp16 == start.fp16).all() and exact_moved != 0, "the fp16 weight never moves"),
                  at_most(drift / bound, 1.0, "drift over one fp32 rounding per addition", "of the bound"),
                  flag(drift > 0, "a rounding drift of its own"),
                  near(moved / exact_moved, 1.0, 0.01, "master's movement over the exact one, within 1 %", "ratio"))


def _lightest(t) -> dict:
    return {"weight": t["P7/spacing"].weight.min()}


@relation("P7/spacing", "P1/landmarks", edge=Edge(Move("P7/spacing", _lightest, "update_changes_weight", "no"),
                                                  Move("P7/spacing", _lightest, "update_changes_weight", "yes")))
def update_below_half_gap_changes_nothing(t):
    """The gap grows with the weight at about constant relative size (between half and one gap above 1), and an
    update below half the gap leaves the weight where it was."""
    d = t["P7/spacing"].sort_values("weight")
    rel, unit = d.fp16_gap_above / d.weight, float(_fmt(t, "fp16").gap_above_1)
    below = d[d["update"] < d.half_gap]
    return judged("gap above weight: " + ", ".join(f"{r.weight:g}: {g(r.fp16_gap_above)} ({r.update_changes_weight})"
                                                   for r in d.itertuples()),
                  flag(len(d) > 1 and bool(np.all(np.diff(d.fp16_gap_above) > 0)), "the gap grows with the weight"),
                  flag(((rel > unit / 2) & (rel <= unit)).all(), "gap / weight within (1/2, 1] gap above 1"),
                  flag(len(below) > 0 and (below.update_changes_weight.astype(str) == "no").all(),
                       "every update below half the gap changes nothing"))


@relation("P8/casts", "P8/gaps",
          edge=Flip("P8/casts", lambda t: {"value": t["P8/casts"].value.min()}, "bf16",
                    holding=lambda t: t["P8/casts"].value.min(), failing=lambda t: 1.01 * t["P8/casts"].value.min()))
def bf16_keeps_range_loses_precision(t):
    """Tiny values fp16 zeroes survive bf16 within half its gap (relative); bf16's smallest normal is fp32's; its
    gap above 1 is eight times fp16's."""
    c, gp = t["P8/casts"], t["P8/gaps"]
    bf, f16, f32 = (row(gp, "format", n) for n in ("bf16", "fp16", "fp32"))
    worst = float(((c.bf16 - c.value).abs() / c.value).max()) / (float(bf.gap_above_1) / 2)
    return judged(f"tiny casts: fp16 {c.fp16.tolist()}, bf16 {[g(x) for x in c.bf16]}; bf16 gap "
                  f"x{g(bf.gap_above_1 / f16.gap_above_1)} fp16's",
                  flag(((c.fp16 == 0) & (c.numpy_fp16 == 0)).all(), "fp16 zeroes every tiny value (torch and numpy)"),
                  at_most(worst, 1.0, "largest bf16 error over half its gap (relative)", "half gaps"),
                  flag(bf.smallest_normal == f32.smallest_normal, "bf16's smallest normal is fp32's"),
                  flag(bf.gap_above_1 == 8 * f16.gap_above_1, "bf16's gap above 1 is eight times fp16's"))


# ---- P9 (GPT-2's gradients) --------------------------------------------------------------------------------------
LOST_SHARE = 1.0  # percent: "9.3 %" is at least one in a hundred
# another machine's float32 backward can move a few values across fp16's zero threshold: parts per million
# of 124 M; a tenth of a percentage point is far more than that
BAND_PCT = 0.1


@lru_cache(maxsize=None)
def documented(id_: str, quantity: str) -> float:
    """A documented number as the essay printed it (data/documented.csv; "1,743" reads 1743)."""
    from ..verdicts.documented import load

    d = load()
    hit = d[(d["id"] == id_) & (d["quantity"] == quantity)]
    if hit.empty:
        raise KeyError(f"documented.csv has no row {id_}/{quantity}: add it there")
    return float(str(hit.documented.iloc[0]).replace(",", ""))


def left_zero_bound() -> float:
    """"All but 1,743 of 11.6 million" as a number: the share left zero is at most the power of ten just above
    the documents' share (1.5e-4 -> one in a thousand): the same order of magnitude, whatever the weights' draw."""
    share = documented("P9", "scaled_still_zero") / (documented("P9", "fp16_zero_millions") * 1e6)
    return 10.0 ** math.ceil(math.log10(share))


def _allowed_zero(t) -> int:
    """The most fp16 zeros the scale may leave zero in this run's table."""
    return int(math.floor(left_zero_bound() * float(_fp16(t).to_zero)))


def _recovery_edge(extra: int) -> Moves:
    """The run's fp16 zeros with `_allowed_zero + extra` left zero (the loss share well above its bound)."""
    def left(t) -> int:
        return _allowed_zero(t) + extra
    return Moves((Move("P9/summary", {"dtype": "fp16"}, "to_zero_pct", 10 * LOST_SHARE),
                  Move("P9/summary", {"dtype": "fp16"}, "scaled_still_zero", left),
                  Move("P9/summary", {"dtype": "fp16"}, "scaled_recovered", lambda t: int(_fp16(t).to_zero) - left(t))))


@relation("P9/summary", single=True, edge=Edge(Move("P9/summary", {"dtype": "bf16"}, "to_zero", 0),
                                               Move("P9/summary", {"dtype": "bf16"}, "to_zero", 1)))
def bf16_loses_no_gradient(t):
    bf = row(t["P9/summary"], "dtype", "bf16")
    return judged(f"bf16: {bf.to_zero} of {bf['values']:,} gradient values rounded to zero",
                  flag(bf.to_zero == 0, "no value rounds to zero"))


def _fp16(t):
    return row(t["P9/summary"], "dtype", "fp16")


@relation("P9/summary", edge=Edge(_recovery_edge(0), _recovery_edge(1)))
def fp16_loses_some_gradient_scale_recovers(t):
    """At least one gradient value in a hundred rounds to zero in fp16, and the loss scale brings back all but a
    share of them of the documents' order of magnitude (at most one in a thousand left zero)."""
    f, bound = _fp16(t), left_zero_bound()
    left = (float(f.to_zero) - float(f.scaled_recovered)) / float(f.to_zero) if f.to_zero else math.nan
    return judged(f"fp16: {f.to_zero:,} of {f['values']:,} values to zero ({g(f.to_zero_pct)} %); scaled by "
                  f"{f.scale:g}: {f.scaled_recovered:,} back, {f.scaled_still_zero:,} still zero ({g(100 * left)} % "
                  f"of the zeros; at most {g(100 * bound)} %)",
                  at_least(f.to_zero_pct, LOST_SHARE, f"share lost in fp16, at least {LOST_SHARE:g} %", "%", BAND_PCT),
                  at_most(100 * left, 100 * bound,
                          f"share of the zeros the scale leaves zero, at most {100 * bound:g} %", "%", BAND_PCT / 10))
