"""The T family's conclusions, tested: each hand-written backward rule beside torch float64 autograd.

Each relation reads this family's tables (results/T*/) and returns an Outcome whose checks carry their margins;
each declares its two boundary controls (`edge`). `sources` says which computation produced each cell: the
`hand` column is one function's output (a rule and the forward it reads), `torch` is autograd's.
"""

from __future__ import annotations

import math

import numpy as np

from ..claims import (EPS64, Edge, Flip, Move, at_most, flag, g, judged, mat, relation, row, same_float, sources,
                      sum_is_zero, ulps_away)

HAND, TORCH = "hand rule", "torch float64"
MATRICES = {"row": "input: index", "col": "input: index", "hand": HAND, "torch": TORCH, "abs_diff": f"{HAND}, {TORCH}"}
sources("T1/matrices", MATRICES, by="matrix")
sources("T2/matrices", MATRICES, by="matrix")  # p and dz by hand are one function's output: one computation
sources("T2/reductions", {"tokens": "input", "ignored": "input", "counted": "input",
                          "grad_norm_sum": "torch, reduction=sum", "grad_norm_mean": "torch, reduction=mean",
                          "sum_over_mean": "torch, reduction=sum, torch, reduction=mean"})
sources("T3/matrices", MATRICES, by="matrix")
sources("T3/control", {"max_diff_correct": f"{HAND}, {TORCH}",
                       "max_diff_forgot_scale": f"hand rule without 1/sqrt(D), {TORCH}",
                       "ratio_forgot_over_correct": f"hand rule without 1/sqrt(D), {HAND}",
                       "caught": f"hand rule without 1/sqrt(D), {TORCH}"}, by="gradient")
# the hand rule's dbeta is the upstream g itself (a copy): it stands for the input, not for a computation
sources("T4/matrices", {**MATRICES, "dbeta:hand": "input: the upstream g",
                        "dx_independent:hand": "hand rule as D independent divisions"}, by="matrix")


def _cell(t, table: str, matrix: str, r: int, c: int, col: str) -> float:
    return float(mat(t[table], matrix, col)[r, c])


# ---- T1 ---------------------------------------------------------------------------------------------------
@relation("T1/matrices",
          edge=Edge(Move("T1/matrices", {"matrix": "dW", "row": 2, "col": 1}, "torch",
                         lambda t: _cell(t, "T1/matrices", "dW", 2, 1, "hand")),
                    Move("T1/matrices", {"matrix": "dW", "row": 2, "col": 1}, "torch",
                         lambda t: np.nextafter(_cell(t, "T1/matrices", "dW", 2, 1, "hand"), np.inf))))
def matmul_transposes_match_torch(t):
    d = t["T1/matrices"]
    # the entries are short dyadic fractions: every summation order gives them exactly, as the documents
    # found ("every entry is equal, with maximum difference 0")
    checks = [flag(np.array_equal(mat(d, n, "hand"), mat(d, n, "torch")), f"{n}: G W^T / X^T G equal torch64")
              for n in ("dX", "dW")]
    diff = max(float(np.abs(mat(d, n, "hand") - mat(d, n, "torch")).max()) for n in ("dX", "dW"))
    return judged(f"max |hand - torch64| over dX, dW = {diff:g}", *checks)


# ---- T2 ---------------------------------------------------------------------------------------------------
def _torch_dz(t) -> np.ndarray:
    return mat(t["T2/matrices"], "dz", "torch").ravel()


@relation("T2/matrices", single=True,
          edge=Flip("T2/matrices", {"matrix": "dz", "col": 2}, "torch", holding=lambda t: _torch_dz(t)[2],
                    failing=lambda t: _torch_dz(t)[2] + 1e-12))
def softmax_grad_sums_to_zero(t):
    """Autograd's logit gradient (not the hand formula) sums to zero at the rounding scale of its sum."""
    dz = _torch_dz(t)
    return judged(f"sum of torch64's dL/dz = {g(dz.sum())} over {len(dz)} logits (sum |dz| = {g(np.abs(dz).sum())})",
                  sum_is_zero(dz, "sum of torch's dL/dz vs the rounding of the sum"))


@relation("T2/matrices", edge=Flip("T2/matrices", {"matrix": "dz", "col": 1}, "torch",
                                   holding=lambda t: mat(t["T2/matrices"], "p").ravel()[1],
                                   failing=lambda t: ulps_away(mat(t["T2/matrices"], "p").ravel()[1], 256)))
def softmax_grad_is_p_minus_onehot(t):
    """torch's dL/dz against the hand softmax p minus the target's one-hot; the target is the one logit whose
    gradient is negative."""
    p, dz = mat(t["T2/matrices"], "p").ravel(), _torch_dz(t)
    target = int(np.argmin(dz))
    onehot = np.eye(len(p))[target]
    checks = [same_float(dz[j], p[j] - onehot[j], 64, EPS64, f"torch dz[{j}] vs p[{j}]" + (" - 1" if onehot[j] else ""))
              for j in range(len(p))]
    checks += [flag(dz[target] < 0 and bool(np.all(np.delete(dz, target) > 0)),
                    "the target's gradient negative, every other positive")]
    return judged(f"torch64 dz {np.round(dz, 12).tolist()} vs hand p {np.round(p, 12).tolist()} (target {target})",
                  *checks)


def _reductions(t, padded: bool):
    d = t["T2/reductions"]
    return d[(d["ignored"] > 0) == padded]


def _ratio_edge(padded: bool) -> Flip:
    """Move the summed gradient norm of the largest padded/unpadded row off `denominator x mean`."""
    def where(t):
        r = _reductions(t, padded).sort_values("tokens").iloc[-1]
        return {"tokens": r.tokens, "ignored": r.ignored}

    def at(t, ulps):
        r = _reductions(t, padded).sort_values("tokens").iloc[-1]
        return ulps_away(r.counted * r.grad_norm_mean, ulps)
    return Flip("T2/reductions", where, "grad_norm_sum", holding=lambda t: at(t, 0), failing=lambda t: at(t, 512))


def _ratio_checks(d, denominator: str) -> list:
    # a quotient of two gradient norms, each a float64 reduction: 64 ulps of the count
    return [same_float(r.grad_norm_sum / r.grad_norm_mean, getattr(r, denominator), 64, EPS64,
                       f"{r.tokens} tokens, {r.ignored} ignored: sum / mean vs the {denominator} count")
            for r in d.itertuples()]


@relation("T2/reductions", edge=_ratio_edge(padded=False))
def summed_loss_scales_with_token_count(t):
    d = _reductions(t, padded=False)
    return judged("sum / mean gradient norm per token count: " + ", ".join(
        f"{r.tokens}: {g(r.grad_norm_sum / r.grad_norm_mean)}" for r in d.itertuples()),
        flag(d["tokens"].nunique() > 1, "several token counts"), *_ratio_checks(d, "tokens"))


@relation("T2/reductions", edge=_ratio_edge(padded=True))
def mean_divides_by_counted_tokens(t):
    d = _reductions(t, padded=True)
    return judged("with ignored targets, sum / mean: " + ", ".join(
        f"{r.tokens} tokens, {r.ignored} ignored: {g(r.grad_norm_sum / r.grad_norm_mean)}" for r in d.itertuples()),
        flag(len(d) > 0 and bool((d["counted"] != d["tokens"]).all()), "padded rows, counted below the length"),
        *_ratio_checks(d, "counted"))


# ---- T3 ---------------------------------------------------------------------------------------------------
@relation("T3/matrices", single=True,
          edge=Flip("T3/matrices", {"matrix": "dS", "row": 1, "col": 1}, "hand",
                    holding=lambda t: -mat(t["T3/matrices"], "dS")[1, 0],
                    failing=lambda t: -mat(t["T3/matrices"], "dS")[1, 0] + 1e-12))
def attention_score_rows_sum_to_zero(t):
    """torch's score gradient is not measured (only dQ, dK, dV are leaves): the hand rule's rows, against zero."""
    ds = mat(t["T3/matrices"], "dS")
    return judged("dS row sums " + ", ".join(g(r.sum()) for r in ds),
                  *(sum_is_zero(r, f"row {i} of dS vs the rounding of its sum") for i, r in enumerate(ds)))


def _torch_grad(t, name: str) -> np.ndarray:
    return mat(t["T3/matrices"], name, "torch")


def _off_torch(t, name: str) -> float:
    """How far a gradient scaled by sqrt(D) lies from torch's: (sqrt(D) - 1) x its largest entry."""
    d_head = _torch_grad(t, "dQ").shape[1]  # dQ is shaped like Q: one head's width D
    return (math.sqrt(d_head) - 1) * float(np.abs(_torch_grad(t, name)).max())


@relation("T3/control", "T3/matrices",
          edge=Flip("T3/control", {"gradient": "dK"}, "max_diff_forgot_scale", holding=lambda t: _off_torch(t, "dK"),
                    failing=lambda t: ulps_away(_off_torch(t, "dK"), 256)))
def forgotten_scale_hits_only_q_and_k(t):
    """Without 1/sqrt(D) the hand dQ and dK sit (sqrt(D) - 1) x torch's largest entry away from torch's (they are
    sqrt(D) times too large); the hand dV still equals torch's to rounding."""
    c = t["T3/control"]
    d_head = _torch_grad(t, "dQ").shape[1]
    qk = [same_float(row(c, "gradient", n).max_diff_forgot_scale, _off_torch(t, n), 64, EPS64,
                     f"{n} without the scale vs (sqrt(D) - 1) x max |torch {n}|") for n in ("dQ", "dK")]
    dv_scale = EPS64 * max(float(np.abs(_torch_grad(t, "dV")).max()), 1.0)
    dq, dk, dv = (float(row(c, "gradient", n).max_diff_forgot_scale) for n in ("dQ", "dK", "dV"))
    return judged(f"forgot 1/sqrt(D), D={d_head}: max |hand - torch64| dQ {g(dq)}, dK {g(dk)}, dV {g(dv)}",
                  *qk, at_most(dv / dv_scale, 64, "dV without the scale vs torch64, in ulps of its largest entry",
                               "ulps", 16))


# ---- T4 ---------------------------------------------------------------------------------------------------
def _t4(t, name: str, col: str) -> np.ndarray:
    return mat(t["T4/matrices"], name, col).ravel()


@relation("T4/matrices", single=True,
          edge=Flip("T4/matrices", {"matrix": "dx", "col": 2}, "torch", holding=lambda t: _t4(t, "dx", "torch")[2],
                    failing=lambda t: _t4(t, "dx", "torch")[2] + 1e-12))
def layernorm_dx_sums_to_zero(t):
    """Autograd's layer-norm input gradient (not the hand formula) sums to zero at the rounding of its sum."""
    dx = _t4(t, "dx", "torch")
    return judged(f"sum of torch64's dL/dx = {g(dx.sum())} (sum |dx| = {g(np.abs(dx).sum())})",
                  sum_is_zero(dx, "sum of torch's dL/dx vs the rounding of the sum"))


def _g_xhat(t) -> np.ndarray:
    return _t4(t, "dbeta", "hand") * _t4(t, "xhat", "hand")  # upstream g x the hand forward's xhat


@relation("T4/matrices", edge=Flip("T4/matrices", {"matrix": "dgamma", "col": 1}, "torch",
                                   holding=lambda t: _g_xhat(t)[1], failing=lambda t: ulps_away(_g_xhat(t)[1], 256)))
def layernorm_param_grads(t):
    """torch's dgamma against the upstream g times the hand forward's xhat, torch's dbeta against g."""
    up, want = _t4(t, "dbeta", "hand"), _g_xhat(t)
    dgamma, dbeta = _t4(t, "dgamma", "torch"), _t4(t, "dbeta", "torch")
    return judged(f"torch64 dgamma {np.round(dgamma, 12).tolist()} vs g*xhat {np.round(want, 12).tolist()}; "
                  f"dbeta {dbeta.tolist()} vs g {up.tolist()}",
                  *(same_float(a, b, 64, EPS64, f"torch dgamma[{i}] vs g*xhat")
                    for i, (a, b) in enumerate(zip(dgamma, want))),
                  *(same_float(a, b, 64, EPS64, f"torch dbeta[{i}] vs g") for i, (a, b) in enumerate(zip(dbeta, up))))
