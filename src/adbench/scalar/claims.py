"""The S family's conclusions, tested: the scalar tape against torch, finite differences, the complex step.

Each relation reads this family's tables (results/S*/) and returns an Outcome whose checks carry their margins;
each declares its two boundary controls (`edge`). `sources` says which computation produced each cell.
Issue 28's conclusions live in claims_checks.py (S7's gradient checks) and claims_engines.py (S4's visited set,
S8's upstream vector, S10's counted engine); family.py lists all three for the registry.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..claims import (EPS32, EPS64, FAR, ROUNDING64, Edge, Flip, Move, at_least, at_most, flag, g, judged,
                      near, qv, relation, row, same_float, sources, times_at_least, times_within, truthy,
                      ulps_away)


sources("S1/gradients", {"tape": "tape", "torch float64": "torch float64", "torch float32": "torch float32",
                         "central difference": "central difference", "central difference:h": "input",
                         "torch float64:abs_diff_da_vs_tape": "torch float64, tape",
                         "torch float32:abs_diff_da_vs_tape": "torch float32, tape",
                         "central difference:abs_diff_da_vs_tape": "central difference, tape"}, by="method")
sources("S2/nudges", {"nudge": "input", "f_x": "difference quotient", "f_x_plus_h": "difference quotient",
                      "ratio": "difference quotient", "exact_2x_plus_h": "formula 2x + h"})
sources("S3/routes", {"value": "hand chain rule", "torch": "torch float64, one route detached", "b": "input",
                      "factors": "input"}, by="route")
sources("S3/values", {"m": "hand chain rule", "z": "hand chain rule", "dL_dz": "hand chain rule",
                      "dL_db": "hand chain rule", "route_through_m": "hand chain rule",
                      "route_direct": "hand chain rule", "route_sum": "hand chain rule"}, by="quantity")
sources("S4/variants", {"analytic": "analytic formula", "correct +=": "tape", "BUG = (overwrite)": "tape, = bug",
                        "BUG wrong order": "tape, build order"}, by="variant")
sources("S4/values", {"exceptions_raised": "tape bugs run"}, by="quantity")
sources("S4/factor", {"a": "input", "b": "input", "correct_dL_da": "tape", "overwrite_dL_da": "tape, = bug",
                      "overwrite_over_correct": "tape, = bug"})
sources("S5/sweep", {"h": "input", "forward_est": "forward difference", "forward_err": "forward difference, tape",
                     "central_est": "central difference", "central_err": "central difference, tape",
                     "central_est_float32": "float32 central difference",
                     "central_err_float32": "float32 central difference, tape"})
sources("S5/slopes", {"forward": "forward difference, tape", "central": "central difference, tape",
                      **{f"{m}:{c}": "input" for m in ("forward", "central") for c in ("theory", "h_min", "h_max", "points")}},
        by="method")
sources("S6/sweep", {"h": "input", "estimate": "complex step", "abs_err": "complex step, tape"})
sources("S6/controls", {"complex_step": "complex step", "real_slope": "analytic slope", "outcome": "complex step"},
        by="control")
sources("S7/directions", {"abs_error": "directional difference, torch gradient",
                          "corrupted_abs_error": "directional difference, corrupted gradient",
                          "loss": "loss at x", "h": "input"})
sources("S8/modes", {"x": "input", "forward_mode": "forward mode (dual numbers)", "reverse_mode": "reverse mode (tape)",
                     "forward_ops": "forward mode op count"})
sources("S8/reconstruction", {"seeds": "input", "inputs": "input", "rank": "forward mode seeds",
                              "forward_passes": "forward mode seeds", "forward_ops": "forward mode op count",
                              "reverse_backward_passes": "reverse mode", "reverse_closures": "reverse mode",
                              "max_abs_err": "forward mode seeds (least squares), reverse mode",
                              "err_norm": "forward mode seeds (least squares), reverse mode",
                              "outside_span_norm": "forward mode seeds (least squares), reverse mode",
                              "grad_norm": "reverse mode"})
sources("S9/per_process", {"ratio": "tape timing, torch timing", "reported": "timing protocol"})
sources("S10/values", {"a_grad_accumulate": "tape", "a_grad_torch": "torch", "a_grad_overwrite": "tape, = bug",
                       "reuse_x_grad_torch": "torch float64",
                       "reuse_x_grad_counted": "tape closures under a dependency-counted engine",
                       "reuse_x_grad_eager": "tape closures run on their first contribution"}, by="quantity")
sources("S10/mlp_grads", {"tape_grad": "tape", "torch_float32_grad": "torch float32", "abs_diff": "tape, torch float32"})


def _method(t, name: str):
    return row(t["S1/gradients"], "method", name)


# ---- S1 -----------------------------------------------------------------------------------------------
@relation("S1/gradients", edge=Flip("S1/gradients", {"method": "torch float64"}, "dL_da",
                                    holding=lambda t: _method(t, "tape").dL_da,
                                    failing=lambda t: ulps_away(_method(t, "tape").dL_da, 256)))
def tape_equals_torch64(t):
    tape, torch = _method(t, "tape"), _method(t, "torch float64")
    return judged(f"dL/da tape {float(tape.dL_da)!r} vs torch64 {float(torch.dL_da)!r}; dL/db {float(tape.dL_db)!r} "
                  f"vs {float(torch.dL_db)!r}",
                  same_float(tape.dL_da, torch.dL_da, 64, EPS64, "dL/da, tape vs torch64"),
                  same_float(tape.dL_db, torch.dL_db, 64, EPS64, "dL/db, tape vs torch64"))


@relation("S1/gradients", edge=Flip("S1/gradients", {"method": "central difference"}, "abs_diff_da_vs_tape",
                                    holding=lambda t: 1e3 * _method(t, "torch float32").abs_diff_da_vs_tape,
                                    failing=lambda t: _method(t, "torch float32").abs_diff_da_vs_tape, log=True))
def secant_gap_exceeds_rounding(t):
    central, f32 = _method(t, "central difference"), _method(t, "torch float32")
    c, r = float(central.abs_diff_da_vs_tape), float(f32.abs_diff_da_vs_tape)
    return judged(f"|central(h={central.h:g}) - tape| = {g(c)} vs float32 rounding {g(r)} (x{g(c / r)})",
                  times_at_least(c, r, FAR, f"the chord's gap over float32 rounding, at least x{FAR:g}"))


# the float32 path rounds each of its handful of operations (mul, add, tanh, 1 - t², the two products) once:
# eight float32 ulps of |dL/da| bound that; a float64 rounding gap (64 ulps of float64) is no float32 path at all
F32_OPS = 8


def _f32_gap(t) -> tuple[float, float]:
    tape, f32 = _method(t, "tape"), _method(t, "torch float32")
    return abs(float(f32.dL_da) - float(tape.dL_da)), float(tape.dL_da)


@relation("S1/gradients", edge=Flip("S1/gradients", {"method": "torch float32"}, "dL_da",
                                    holding=lambda t: _method(t, "torch float32").dL_da,
                                    failing=lambda t: ulps_away(_method(t, "tape").dL_da, 4 * F32_OPS, EPS32)))
def float32_differs_by_rounding(t):
    """torch float32's dL/da differs from the binary64 tape's, by no more than float32 rounding of its few
    operations: the same rule on rounded intermediates, not another rule."""
    gap, ga = _f32_gap(t)
    ulps32 = gap / (EPS32 * max(abs(ga), 1e-300))
    return judged(f"|torch32 - tape| = {g(gap)}: {g(ulps32)} float32 ulps of |dL/da| = {g(abs(ga))}",
                  times_at_least(gap, ROUNDING64 * max(abs(ga), 1.0), 1, "beyond float64 rounding: a float32 path"),
                  at_most(ulps32, F32_OPS, f"within {F32_OPS} float32 ulps of |dL/da|", "ulps", F32_OPS / 4))


# ---- S2, S3, S4 ----------------------------------------------------------------------------------------
def _derivative(t):  # 2x from the table's own formula column, one row per nudge
    d = t["S2/nudges"].sort_values("nudge", ascending=False)
    return d, (d["exact_2x_plus_h"] - d["nudge"]).to_numpy()


@relation("S2/nudges", edge=Flip("S2/nudges", lambda t: {"nudge": t["S2/nudges"].nudge.min()}, "ratio",
                                 holding=lambda t: t["S2/nudges"].exact_2x_plus_h.min(),
                                 failing=lambda t: t["S2/nudges"].exact_2x_plus_h.min() * (1 + 1e-7)))
def ratio_approaches_derivative(t):
    d, two_x = _derivative(t)
    gaps = d["ratio"].to_numpy() - two_x
    rel = np.abs(gaps / d["nudge"].to_numpy() - 1)  # the gap should be the nudge itself
    return judged("ratio - 2x per nudge: " + ", ".join(f"{h:g}: {g(gp)}" for h, gp in zip(d["nudge"], gaps)),
                  flag(np.all(np.diff(np.abs(gaps)) < 0), "the gap shrinks with the nudge"),
                  # cancellation in f(x+h) - f(x) leaves about ten good digits at h = 0.001
                  at_most(rel.max(), 1e-9, "largest |gap/nudge - 1|", "relative", 2.5e-10))


def _routes(t):
    r = t["S3/routes"].set_index("route")
    return r.loc["a -> m -> z -> L"], r.loc["a -> z -> L"], r.loc["sum"]


@relation("S3/routes", "S1/gradients",
          edge=Flip("S3/routes", {"route": "a -> z -> L"}, "torch",
                    holding=lambda t: _routes(t)[1].torch,
                    failing=lambda t: ulps_away(_routes(t)[1].torch, 256)))
def routes_add(t):
    """The hand routes' sum is the tape's and torch's dL/da; torch, with the other route cut, finds each route,
    and the route through the product carries b times the direct one."""
    m, direct, total = _routes(t)
    tape, torch = _method(t, "tape").dL_da, _method(t, "torch float64").dL_da
    return judged(f"hand routes {g(m.value)} + {g(direct.value)} = {g(total.value)}; tape {g(tape)}, torch64 {g(torch)}; "
                  f"torch per route {g(m.torch)}, {g(direct.torch)} (ratio {g(m.torch / direct.torch)}, b = {g(m.b)})",
                  same_float(m.value + direct.value, tape, 64, EPS64, "hand routes' sum vs the tape"),
                  same_float(m.value + direct.value, torch, 64, EPS64, "hand routes' sum vs torch64"),
                  same_float(m.value, m.torch, 64, EPS64, "route through m, hand vs torch"),
                  same_float(direct.value, direct.torch, 64, EPS64, "direct route, hand vs torch"),
                  same_float(m.torch / direct.torch, m.b, 64, EPS64, "torch's route ratio vs b"))


@relation("S3/values", "S1/gradients",
          edge=Flip("S3/values", {"quantity": "dL_db"}, "value", holding=lambda t: float(qv(t["S3/values"], "dL_db")),
                    failing=lambda t: ulps_away(float(qv(t["S3/values"], "dL_db")), 256)))
def single_route_is_product(t):
    """b reaches L by one route: the hand product of the local rates along it, dL/dz * 1 * a, is the tape's and
    torch's dL/db."""
    hand = float(qv(t["S3/values"], "dL_db"))
    tape, torch = float(_method(t, "tape").dL_db), float(_method(t, "torch float64").dL_db)
    return judged(f"hand dL/dz * 1 * a = {hand!r}; tape {tape!r}, torch64 {torch!r}",
                  same_float(hand, tape, 64, EPS64, "hand product vs the tape"),
                  same_float(hand, torch, 64, EPS64, "hand product vs torch64"))


def _variant(t, name: str):
    return row(t["S4/variants"], "variant", name)


@relation("S4/variants", "S3/routes", edge=Flip("S4/variants", {"variant": "BUG = (overwrite)"}, "dL_da",
                                                holding=lambda t: _routes(t)[0].value,
                                                failing=lambda t: ulps_away(_routes(t)[0].value, 256)))
def overwrite_keeps_last_route(t):
    bug, ok = _variant(t, "BUG = (overwrite)"), _variant(t, "correct +=")
    through_m = float(_routes(t)[0].value)
    return judged(f"overwrite dL/da {g(bug.dL_da)} (hand route through m {g(through_m)}, correct {g(ok.dL_da)}); "
                  f"dL/db {g(bug.dL_db)} vs {g(ok.dL_db)}",
                  same_float(bug.dL_da, through_m, 64, EPS64, "overwrite's dL/da vs the hand route through m"),
                  flag(abs(bug.dL_da - ok.dL_da) > 64 * EPS64 * max(abs(ok.dL_da), 1), "overwrite's dL/da is wrong"),
                  same_float(bug.dL_db, ok.dL_db, 64, EPS64, "dL/db, used once, stays right"))


@relation("S4/variants", "S4/values", single=True,
          edge=Edge(Move("S4/variants", {"variant": "BUG wrong order"}, "dL_da", 0.0),
                    Move("S4/variants", {"variant": "BUG wrong order"}, "dL_da", 5e-324)))  # the smallest nonzero
def wrong_order_leaves_zero_silently(t):
    bug = _variant(t, "BUG wrong order")
    raised = float(qv(t["S4/values"], "exceptions_raised"))
    return judged(f"wrong order: dL/da {bug.dL_da}, dL/db {bug.dL_db}; exceptions raised by both bugs: {raised:g}",
                  flag(bug.dL_da == 0 and bug.dL_db == 0, "every leaf gradient exactly zero"),
                  flag(raised == 0, "no exception"))


@relation("S4/factor", edge=Flip("S4/factor", {"b": -2.0}, "overwrite_over_correct", holding=2.0,
                                 failing=ulps_away(2.0, 256)))
def overwrite_factor_two_needs_b_minus_2(t):
    d = t["S4/factor"]
    # the claim names b = -2 and the factor 2; at every other b the ratio is b/(b+1)
    ratio = d.overwrite_dL_da / d.correct_dL_da
    at = d[d.b == -2]
    checks = [flag(len(at) == 1 and (d.b != -2).any(), "b = -2 and other b measured")]
    checks += [same_float(r.overwrite_over_correct, r.b / (r.b + 1), 64, EPS64, f"ratio at b = {r.b:g} vs b/(b+1)")
               for r in d.itertuples() if r.b != -1]
    checks.append(same_float(float(at.overwrite_over_correct.iloc[0]) if len(at) else math.nan, 2.0, 64, EPS64,
                             "the factor at b = -2"))
    return judged("overwrite / correct dL/da per b: " + ", ".join(f"{b:g}: {g(r)}" for b, r in zip(d.b, ratio)), *checks)


# ---- S5, S6 -------------------------------------------------------------------------------------------------
def _sweep(t):
    return t["S5/sweep"].sort_values("h", ascending=False).reset_index(drop=True)


@relation("S5/sweep", edge=Flip("S5/sweep", lambda t: {"h": _sweep(t).h.iloc[-1]}, "central_err",
                                holding=lambda t: 1e3 * _sweep(t).central_err.min(),
                                failing=lambda t: _sweep(t).central_err.min() * 1.01, log=True))
def central_valley_has_interior_minimum(t):
    d = _sweep(t)
    i = int(d["central_err"].idxmin())
    low, first, last = d.central_err[i], d.central_err.iloc[0], d.central_err.iloc[-1]
    return judged(f"smallest central error {g(low)} at h={d.h[i]:g}, inside h={d.h.iloc[0]:g}..{d.h.iloc[-1]:g} "
                  f"(errors at the ends {g(first)}, {g(last)})",
                  flag(0 < i < len(d) - 1, "the minimum is interior"),
                  # "rises again on both sides": by more than an order of magnitude on each
                  times_at_least(first, low, 10, "truncation side over the minimum, at least x10"),
                  times_at_least(last, low, 10, "cancellation side over the minimum, at least x10"))


@relation("S5/slopes", single=True, edge=Flip("S5/slopes", {"method": "central"}, "slope", holding=2.0, failing=1.5))
def truncation_orders(t):
    d = t["S5/slopes"].set_index("method")
    # "slope about 1", "about 2": within a tenth of the theoretical order the table states
    return judged(f"log-log slopes: forward {g(d.slope['forward'])}, central {g(d.slope['central'])}",
                  near(d.slope["forward"], d.theory["forward"], 0.1, "forward slope vs its order", "slope", 0.02),
                  near(d.slope["central"], d.theory["central"], 0.1, "central slope vs its order", "slope", 0.02))


def _best(t, col: str) -> dict:
    d = t["S5/sweep"]
    return {"h": d.loc[d[col].idxmin(), "h"]}


@relation("S5/sweep", edge=Flip("S5/sweep", lambda t: _best(t, "forward_err"), "forward_err",
                                holding=lambda t: 1e3 * t["S5/sweep"].central_err.min(),
                                failing=lambda t: t["S5/sweep"].central_err.min(), log=True))
def central_beats_forward(t):
    d = t["S5/sweep"]
    c, f = float(d["central_err"].min()), float(d["forward_err"].min())
    # the documents' own bests differ by x57: more than an order of magnitude, short of two
    return judged(f"best central error {g(c)} vs best forward error {g(f)} (x{g(f / c)})",
                  times_at_least(f, c, 10, "best forward over best central, at least x10"))


def _best_h(t, col: str) -> float:
    d = t["S5/sweep"]
    return float(d.loc[d[col].idxmin(), "h"])


def _fwd_at_central_best(t) -> float:
    d = t["S5/sweep"]
    return float(d.loc[d.h == _best_h(t, "central_err"), "forward_err"].iloc[0])


@relation("S5/sweep", edge=Flip("S5/sweep", lambda t: {"h": _best_h(t, "central_err")}, "forward_err",
                                holding=_fwd_at_central_best, failing=lambda t: t["S5/sweep"].forward_err.min(),
                                log=True))
def forward_best_step_smaller(t):
    """The forward difference's smallest error sits at a smaller step than the central difference's, and at the
    central's best step the forward error is still at least x10 its own smallest (its bottom is elsewhere)."""
    d = t["S5/sweep"]
    f, c, at, low = _best_h(t, "forward_err"), _best_h(t, "central_err"), _fwd_at_central_best(t), d.forward_err.min()
    return judged(f"best step: forward h={f:g}, central h={c:g}; forward error at h={c:g} {g(at)}, its smallest "
                  f"{g(low)}",
                  flag(f < c, "forward's best step below central's"),
                  times_at_least(at, low, 10, "forward at central's best step, at least x10 its own best"))


# "at another step": at float64's best step float32 is at least an order of magnitude above its own best; one
# decade is also what separates neighbouring steps of the power-of-ten sweep
OTHER_STEP = 10.0


def _f32_at_64_best(t) -> float:
    d = t["S5/sweep"]
    return float(d.loc[d.h == _best_h(t, "central_err"), "central_err_float32"].iloc[0])


@relation("S5/sweep", edge=Flip("S5/sweep", lambda t: {"h": _best_h(t, "central_err")}, "central_err_float32",
                                holding=_f32_at_64_best,
                                failing=lambda t: t["S5/sweep"].central_err_float32.min(), log=True))
def dtype_moves_valley(t):
    """The same central difference in float32 bottoms out at another step: at float64's best step, float32's
    error is at least x10 its own smallest."""
    d = t["S5/sweep"]
    b64, b32, at = _best_h(t, "central_err"), _best_h(t, "central_err_float32"), _f32_at_64_best(t)
    low = float(d.central_err_float32.min())
    return judged(f"valley bottom: float64 at h={b64:g}, float32 at h={b32:g}; float32's error at h={b64:g} is "
                  f"{g(at)}, its smallest {g(low)} (x{g(at / low)})",
                  times_at_least(at, low, OTHER_STEP, f"float32 at float64's best step, at least x{OTHER_STEP:g} "
                                                      "its own best"))


@relation("S6/sweep", edge=Edge(Move("S6/sweep", lambda t: {"h": t["S6/sweep"].h.min()}, "abs_err",
                                     lambda t: _complex(t)[1][-2]),
                                Move("S6/sweep", lambda t: {"h": t["S6/sweep"].h.min()}, "abs_err",
                                     lambda t: np.nextafter(_complex(t)[1][-2], np.inf))))
def complex_step_never_worsens(t):
    d, err = _complex(t)
    worse = int((np.diff(err) > 0).sum())
    return judged("error as h shrinks: " + ", ".join(f"{h:g}: {g(e)}" for h, e in zip(d.h, err)),
                  flag(worse == 0, "no smaller step has a larger error"))


def _complex(t):
    d = t["S6/sweep"].sort_values("h", ascending=False)
    return d, d["abs_err"].to_numpy(float)


@relation("S6/sweep", edge=Flip("S6/sweep", lambda t: {"h": _complex(t)[0].h.iloc[1]}, "abs_err",
                                holding=lambda t: _complex(t)[1][1], failing=lambda t: _complex(t)[1][0], log=True))
def complex_step_order_two(t):
    """Above float64 rounding (64 ulps of the derivative) the error falls with log-log slope 2 (within a tenth),
    and the smallest steps reach that rounding floor."""
    d, err = _complex(t)
    floor = 64 * EPS64 * float(d["estimate"].abs().max())
    above = d[err > floor]
    slope = (float(np.polyfit(np.log10(above.h.to_numpy(float)), np.log10(above.abs_err.to_numpy(float)), 1)[0])
             if len(above) >= 2 else math.nan)
    return judged(f"log-log slope {g(slope)} over h = {g(above.h.min())}..{g(above.h.max())}; smallest error "
                  f"{g(err.min())} against the rounding floor {g(floor)}",
                  flag(len(above) >= 2, "two steps above the rounding floor"),
                  near(slope, 2.0, 0.1, "slope above the floor vs 2", "slope", 0.02),
                  at_most(err.min(), floor, "smallest error vs the rounding floor", "", 0.0))


def _control(t, name: str):
    return row(t["S6/controls"], "control", name)


@relation("S6/controls", edge=Flip("S6/controls", {"control": "abs at +2"}, "complex_step",
                                   holding=lambda t: _control(t, "abs at +2").complex_step,
                                   failing=lambda t: _control(t, "abs at +2").real_slope))
def complex_step_abs_silent(t):
    r = _control(t, "abs at +2")
    raised = isinstance(r.outcome, str) and r.outcome.strip() != ""
    wrong = abs(float(r.complex_step) - float(r.real_slope)) / (EPS64 * max(abs(float(r.real_slope)), 1.0))
    return judged(f"abs at +2: complex step {r.complex_step}, real slope {r.real_slope}, error raised: {raised}",
                  at_least(wrong, 64, "complex step off the real slope, beyond rounding", "ulps"),
                  flag(not raised, "nothing raised"))


def _branches(t):
    d = t["S6/controls"]
    return d[d["control"].astype(str).str.startswith("ReLU branch at ") & ~d["control"].astype(str).str.contains("kink")]


@relation("S6/controls", edge=Flip("S6/controls", lambda t: {"control": _branches(t).control.iloc[0]}, "complex_step",
                                   holding=lambda t: _branches(t).real_slope.iloc[0],
                                   failing=lambda t: ulps_away(_branches(t).real_slope.iloc[0], 256)))
def relu_branch_local_slopes(t):
    """A ReLU written as a branch on the real part gives, through the complex step, the local slopes away from
    the kink (1 above, 0 below)."""
    d = _branches(t)
    return judged("complex step vs real slope: " + "; ".join(f"{r.control}: {r.complex_step!r} vs {r.real_slope!r}"
                                                            for r in d.itertuples()),
                  flag(len(d) >= 2 and (d.real_slope > 0).any() and (d.real_slope == 0).any(),
                       "a point on each side of the kink"),
                  *(same_float(r.complex_step, r.real_slope, 64, EPS64, f"{r.control}") for r in d.itertuples()))


@relation("S6/controls", single=True,
          edge=Edge(Move("S6/controls", {"control": "max(0, 2+ih)"}, "outcome", "TypeError: '>' not supported"),
                    Move("S6/controls", {"control": "max(0, 2+ih)"}, "outcome", "ValueError: complex compared")))
def complex_max_raises(t):
    d = t["S6/controls"]
    hit = d[d["control"].astype(str).str.startswith("max(")]
    out = "" if hit.empty else str(hit.iloc[0].outcome)
    return judged(f"max(0, 2+ih): {out or 'no row / no error'}", flag(out.startswith("TypeError"), "raises TypeError"))


# ---- S7, S8 ---------------------------------------------------------------------------------------------------
def _least_corrupted(t) -> dict:
    d = t["S7/directions"]
    return {"direction": d.loc[d.corrupted_abs_error.idxmin(), "direction"]}


@relation("S7/directions", edge=Flip("S7/directions", _least_corrupted, "corrupted_abs_error",
                                     holding=lambda t: 1e3 * t["S7/directions"].abs_error.max(),
                                     failing=lambda t: t["S7/directions"].abs_error.max(), log=True))
def directional_catches_corruption(t):
    d = t["S7/directions"]
    worst_ok, best_bad = float(d["abs_error"].max()), float(d["corrupted_abs_error"].min())
    return judged(f"largest error of the correct gradient {g(worst_ok)}; smallest error with the coordinate "
                  f"corrupted {g(best_bad)} over {len(d)} directions",
                  times_at_least(best_bad, worst_ok, FAR, f"every corrupted check over the correct ones, x{FAR:g}"))


@relation("S8/modes", edge=Edge(Move("S8/modes", {"input": "x1"}, "reverse_mode", lambda t: _s8(t, "x1").forward_mode),
                                Move("S8/modes", {"input": "x1"}, "reverse_mode",
                                     lambda t: np.nextafter(_s8(t, "x1").forward_mode, np.inf))))
def forward_reverse_agree(t):
    d = t["S8/modes"]
    diff = float((d["forward_mode"] - d["reverse_mode"]).abs().max())
    return judged(f"max |forward - reverse| over {len(d)} inputs = {diff:g}",
                  flag(diff == 0, "bit-identical (the documents: maximum difference 0)"))


def _s8(t, name: str):
    return row(t["S8/modes"], "input", name)


def _seeds(t):
    d = t["S8/reconstruction"].sort_values("seeds")
    return d, d[d.seeds == d.inputs].iloc[0], d[d.seeds == d.inputs - 1].iloc[0]


@relation("S8/reconstruction", edge=Flip("S8/reconstruction", lambda t: {"seeds": _seeds(t)[1].seeds}, "err_norm",
                                         holding=0.0, failing=lambda t: 1e-6 * _seeds(t)[1].grad_norm))
def forward_needs_a_pass_per_input(t):
    """Forward mode's seeds recover the gradient only when there are as many as inputs (least squares over the
    directional derivatives, against the reverse gradient); reverse mode needs one backward pass."""
    d, full, short = _seeds(t)
    floor = 64 * EPS64 * float(full.grad_norm)  # float64 rounding of the gradient's norm
    return judged(f"least-squares error from k forward seeds: " + ", ".join(f"k={r.seeds}: {g(r.err_norm)}"
                                                                           for r in d.itertuples())
                  + f" (gradient norm {g(full.grad_norm)}); reverse mode: {int(full.reverse_backward_passes)} backward pass",
                  times_at_least(short.err_norm, floor, FAR, f"{int(short.seeds)} seeds for {int(short.inputs)} "
                                                            "inputs miss by far more than rounding"),
                  at_most(full.err_norm / (EPS64 * float(full.grad_norm)), 64,
                          f"{int(full.seeds)} seeds recover it to rounding", "ulps", 16),
                  flag(full.reverse_backward_passes == 1, "one reverse pass"))


# ---- S9, S10 ---------------------------------------------------------------------------------------------------
def _reported(t):
    d = t["S9/per_process"]
    return d[d["reported"].map(truthy)]


@relation("S9/per_process", rests_on="timing",
          edge=Flip("S9/per_process", lambda t: {"process": _reported(t).process.iloc[0], "reported": True}, "ratio",
                    holding=300.0, failing=30.0, log=True))
def tape_hundreds_slower(t):
    ratios = _reported(t)["ratio"].astype(float)
    # "hundreds of times": 10^2 <= ratio < 10^3 in every reported process
    checks = [times_within(r, 10 ** 2.5, 0.5, f"process ratio {g(r)} within the hundreds") for r in ratios]
    return judged(f"tape/torch per-process ratios {', '.join(g(r) for r in ratios)}",
                  flag(len(ratios) > 0, "a reported process"), *checks)


@relation("S10/values", edge=Edge(Move("S10/values", {"quantity": "a_grad_torch"}, "value",
                                       lambda t: float(qv(t["S10/values"], "a_grad_accumulate"))),
                                  Move("S10/values", {"quantity": "a_grad_torch"}, "value",
                                       lambda t: np.nextafter(float(qv(t["S10/values"], "a_grad_accumulate")), 0))))
def accumulate_matches_torch_overwrite_does_not(t):
    v = t["S10/values"]
    acc, tor, ovw = (float(qv(v, q)) for q in ("a_grad_accumulate", "a_grad_torch", "a_grad_overwrite"))
    return judged(f"a.grad: += {acc:g}, torch {tor:g}, = {ovw:g}", flag(acc == tor, "+= equals torch exactly"),
                  flag(ovw != tor, "= differs from torch"))


def _largest_diff(t) -> dict:
    d = t["S10/mlp_grads"]
    return {"param": d.loc[d.abs_diff.idxmax(), "param"]}


@lru_cache(maxsize=None)
def documented(id_: str, quantity: str) -> float:
    """The largest value that prints as a documented number's text (data/documented.csv): a claim's own bound,
    "within 0.000007", read at the digits the essay printed (up to 0.0000075)."""
    from ..verdicts.documented import load

    d = load()
    hit = d[(d["id"] == id_) & (d["quantity"] == quantity)]
    if hit.empty:
        raise KeyError(f"documented.csv has no row {id_}/{quantity}: add it there")
    text = hit.documented.iloc[0].strip()
    # "within 0.000007": every difference the essay's rounding would print as its number is within it
    half = 0.5 * 10.0 ** -len(text.split(".")[1]) if "." in text and "e" not in text.lower() else 0.0
    return float(text) + half


@relation("S10/mlp_grads", rests_on="rounding", edge=Flip("S10/mlp_grads", _largest_diff, "abs_diff", holding=0.0,
                                     failing=lambda t: 2 * documented("S10", "mlp_max_grad_diff")))
def mlp_tape_matches_torch32(t):
    d = t["S10/mlp_grads"]
    bound = documented("S10", "mlp_max_grad_diff")
    diff, scale = float(d["abs_diff"].max()), float(d["tape_grad"].abs().max())
    spacing = float(np.spacing(np.float32(scale)))  # float32's gap at the largest gradient
    # "within 0.000007": the essay's absolute bound as printed, on the largest difference over the parameters
    return judged(f"max |tape - torch32| {g(diff)} against the essay's {g(bound)} (largest gradient {g(scale)}, "
                  f"float32 spacing there {g(spacing)}: {g(diff / spacing)} spacings)",
                  at_most(diff, bound, f"largest difference within {bound:g}", "", bound / 4))
