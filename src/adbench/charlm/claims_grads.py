"""C1's gradient-side conclusions: per-group gradient norms logged before clipping, the scaled loss under
plain SGD and one AdamW step (float64 checks), and the detached position table. Listed in charlm/family.py,
which declares the tables' sources."""

from __future__ import annotations

import math

import numpy as np

from ..claims import (EPS32, EPS64, Edge, Flip, Move, at_least, at_most, flag, g, judged, near, relation, row,
                      same_float, truthy)


def _norms(t, variant: str, group: str):
    d = t["C1/grad_norms"]
    return d[(d.variant == variant) & (d.group == group)].sort_values("step")


def _factor(t) -> float:
    """The factor the scaled run multiplied its loss by: charlm.train.loss_scale, as C1/summary wrote it."""
    return float(t["C1/summary"].set_index("variant").loss_scale["loss_scaled"])


# ---- the scaled loss --------------------------------------------------------------------------------------
# float32 gradients of the same first batch: the scaled run's norms are the factor times the correct run's up to
# float32 rounding of the backward (each op rounds once; 64 ulps of the ratio leaves room for a few dozen)
FIRST_STEP_ULPS = 64


def _first_ratio(t):
    d = t["C1/grad_norms"]
    first = d[d.step == d.step.min()].pivot_table(index="group", columns="variant", values="grad_norm")
    return first["loss_scaled"] / first["correct"]


def _first_total(t) -> dict:
    d = t["C1/grad_norms"]
    return {"variant": "loss_scaled", "step": int(d.step.min()), "group": "total"}


def _scaled_total(ulps: float):
    """The scaled run's first total norm at the factor times the correct run's, moved `ulps` float32 ulps."""
    def value(t):
        d = t["C1/grad_norms"]
        c = float(d[(d.variant == "correct") & (d.step == d.step.min()) & (d.group == "total")].grad_norm.iloc[0])
        return _factor(t) * c * (1 + ulps * EPS32)
    return value


@relation("C1/grad_norms", "C1/summary", edge=Flip("C1/grad_norms", _first_total, "grad_norm",
                                                   holding=_scaled_total(0), failing=_scaled_total(4 * FIRST_STEP_ULPS)))
def scaled_loss_scales_first_gradient(t):
    ratio, factor = _first_ratio(t), _factor(t)
    d = t["C1/grad_norms"]
    return judged(f"step {int(d.step.min())} gradient norm, scaled run / correct run per group: {g(ratio.min())}.."
                  f"{g(ratio.max())} (the loss factor {g(factor)})",
                  flag(len(ratio) > 0 and bool(ratio.notna().all()), "every group logged in both runs"),
                  *(same_float(r, factor, FIRST_STEP_ULPS, EPS32, f"{grp}: ratio vs the factor") for grp, r in ratio.items()))


def _tol(d):
    return math.sqrt(EPS64) * d.max_abs_move  # half the float64 digits of how far the weights moved


def _worst_sgd_step(t) -> dict:
    d = t["C1/checks/sgd_steps"]
    return {"step": int(d.step[(d.max_abs_diff_vs_scaled_lr / _tol(d)).idxmax()])}


def _sgd_tol(f: float):
    return lambda t: f * float(_tol(t["C1/checks/sgd_steps"])[t["C1/checks/sgd_steps"].step == _worst_sgd_step(t)["step"]].iloc[0])


@relation("C1/checks/sgd_steps", edge=Flip("C1/checks/sgd_steps", _worst_sgd_step, "max_abs_diff_vs_scaled_lr",
                                           holding=_sgd_tol(1e-3), failing=_sgd_tol(1e3), log=True))
def sgd_scaled_loss_is_scaled_lr(t):
    """float64 runs: a real mismatch would be of the size of the move; agreement is rounding, far below
    sqrt(eps) of it. Margins in decades below / above that tolerance."""
    d = t["C1/checks/sgd_steps"]
    tol = _tol(d)
    same = np.log10(tol / d.max_abs_diff_vs_scaled_lr.clip(lower=np.finfo(float).tiny))
    other = np.log10(d.max_abs_diff_vs_unscaled / tol)
    return judged(f"over {len(d)} steps: largest |loss x scale - lr x scale| weight difference "
                  f"{g(d.max_abs_diff_vs_scaled_lr.max())}, weights moved up to {g(d.max_abs_move.max())}; vs the "
                  f"unscaled run {g(d.max_abs_diff_vs_unscaled.min())} or more",
                  flag(len(d) > 1, "several steps"),
                  at_least(same.min(), 0, "scaled loss vs scaled lr: decades below sqrt(eps) of the move", "decades", 1.0),
                  at_least(other.min(), 0, "scaled loss vs unscaled: decades above that", "decades", 1.0))


def _adamw(t):
    d = t["C1/checks/one_step"]
    return row(d, "optimizer", "adamw"), row(d, "optimizer", "sgd")


def _eps_tol(f: float):
    return lambda t: f * math.sqrt(EPS64) * float(_adamw(t)[0].step_norm_unscaled)


# "changed nothing": the AdamW step with the scaled loss differs from the unscaled one by at most a tenth of it
UNCHANGED = 0.1


@relation("C1/checks/one_step", edge=Flip("C1/checks/one_step", {"optimizer": "adamw"}, "residual_norm",
                                          holding=_eps_tol(1e-3), failing=_eps_tol(1e3), log=True))
def adamw_scaled_loss_step_up_to_eps(t):
    a, s = _adamw(t)
    tol = math.sqrt(EPS64) * a.step_norm_unscaled  # the difference is the eps term, to half the float64 digits
    return judged(f"AdamW: the x{g(a.scale)} step differs by {g(a.diff_over_step)} of the step; the eps term predicts "
                  f"{g(a.eps_term_norm)} of the difference {g(a.diff_norm)} (residual {g(a.residual_norm)}); SGD "
                  f"differs by {g(s.diff_over_step)}",
                  at_least(math.log10(tol / max(a.residual_norm, np.finfo(float).tiny)), 0,
                           "difference minus the eps term: decades below sqrt(eps) of the step", "decades", 1.0),
                  at_most(a.diff_over_step, UNCHANGED, f"AdamW's step change, at most {UNCHANGED:g} of the step",
                          "of the step", 0.02),
                  near(s.diff_over_step, s.scale - 1, 1e-9 * (s.scale - 1), "SGD's step change vs scale - 1", "of the step",
                       2.5e-10 * (s.scale - 1)))


# ---- the piled-up gradient ------------------------------------------------------------------------------
def _quarters(t):
    v = _norms(t, "no_zero_grad", "total")
    return np.array_split(v.index.to_numpy(), 4), v


def _quarter_means(t) -> list[float]:
    parts, v = _quarters(t)
    return [float(v.grad_norm.loc[p].mean()) for p in parts if len(p)]


def _slowest_rise(t) -> dict:
    """The last logged step of the quarter whose rise to the next is the smallest: the edge raises it."""
    parts, v = _quarters(t)
    q = _quarter_means(t)
    i = int(np.argmin(np.array(q[1:]) / np.array(q[:-1])))
    return {"variant": "no_zero_grad", "group": "total", "step": int(v.step.loc[parts[i][-1]])}


def _pile_cell(f: float):
    return lambda t: f * float(_norms(t, "no_zero_grad", "total").grad_norm.max())


@relation("C1/grad_norms", single=True, edge=Flip("C1/grad_norms", _slowest_rise, "grad_norm",
                                     holding=lambda t: float(_norms(t, "no_zero_grad", "total").set_index("step")
                                                             .grad_norm[_slowest_rise(t)["step"]]),
                                     failing=_pile_cell(1e3), log=True))
def no_zero_grad_norm_keeps_growing(t):
    q = _quarter_means(t)
    rises = [b / a - 1 for a, b in zip(q, q[1:])]
    # "piled up", "creeps up": a trend over the run, not every log; margin the smallest quarter-to-quarter rise
    return judged("no zero_grad: total gradient norm, quarter means of the logged steps " + " -> ".join(map(g, q)),
                  flag(len(q) == 4, "four quarters of logged steps"),
                  at_least(min(rises) if rises else -math.inf, 0, "smallest rise from one quarter to the next",
                           "relative", 0.1, strict=True))


# ---- the detached position table --------------------------------------------------------------------------
@relation("C1/summary", edge=Edge(Move("C1/summary", {"variant": "detached_positions"}, "position_grad_max", 0.0),
                                  Move("C1/summary", {"variant": "detached_positions"}, "position_grad_max", 5e-324)))
def detached_positions_get_no_gradient(t):
    s = t["C1/summary"].set_index("variant")
    det, cor = s.loc["detached_positions"], s.loc["correct"]
    return judged(f"position table gradient: detached max {float(det.position_grad_max)!r}, correct min "
                  f"{g(cor.position_grad_min)}",
                  flag(det.position_grad_max == 0, "detached: exactly zero at every logged step"),
                  flag(cor.position_grad_min > 0, "correct: nonzero at every logged step"))


def _first_detached(t) -> dict:
    return {"variant": "detached_positions", "group": "position_table", "step": int(t["C1/grad_norms"].step.min())}


@relation("C1/grad_norms", edge=Edge(Move("C1/grad_norms", _first_detached, "grad_norm", 0.0),
                                     Move("C1/grad_norms", _first_detached, "grad_norm", 5e-324)))
def detached_zero_from_step_one(t):
    det, cor = _norms(t, "detached_positions", "position_table"), _norms(t, "correct", "position_table")
    first = int(t["C1/grad_norms"].step.min())
    return judged(f"{len(det)} logged steps from step {int(det.step.min()) if len(det) else '-'}: largest "
                  f"{float(det.grad_norm.max())!r}; the correct run's smallest {g(cor.grad_norm.min())}",
                  flag(len(det) > 0 and int(det.step.min()) == first, "logged from the first step"),
                  flag(bool((det.grad_norm == 0).all()), "zero at every logged step"),
                  flag(bool((cor.grad_norm > 0).all()), "the correct run's table gets a gradient"))


def _drift(t, variant: str):
    d = t["C1/checks/drift"]
    return d[(d.variant == variant) & (d.group == "position_table")]


@relation("C1/checks/drift", edge=Edge(
    Move("C1/checks/drift", {"variant": "detached_positions", "group": "position_table"}, "max_abs_change", 0.0),
    Move("C1/checks/drift", {"variant": "detached_positions", "group": "position_table"}, "max_abs_change", 5e-324)))
def detached_table_ends_at_init(t):
    det, cor = _drift(t, "detached_positions"), _drift(t, "correct")
    return judged(f"position table, largest change from its initial value: detached {det.max_abs_change.tolist()} "
                  f"(bit-identical {det.unchanged.tolist()}), correct {cor.max_abs_change.tolist()}",
                  flag(len(det) == 1 and len(cor) == 1, "both runs measured"),
                  flag(len(det) == 1 and truthy(det.unchanged.iloc[0]) and float(det.max_abs_change.iloc[0]) == 0,
                       "detached: bit-identical to the initial state"),
                  flag(len(cor) == 1 and float(cor.max_abs_change.iloc[0]) > 0, "correct: the table moved"))
