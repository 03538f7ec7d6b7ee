"""Hand-written backward rules (no autograd): matmul, softmax cross-entropy, one attention head, layer norm.

Each rule takes `bug` (default None: the correct rule), a realistic mistake switched on in the same code, so the
measurement-level controls (claims_bugs.py) run the very rule a default run uses with one thing wrong.
"""

from __future__ import annotations

import inspect
import math

import torch

Tensor = torch.Tensor

OVERWRITE = "overwrite dW rows"              # `=` for `+=` where X's rows' contributions to dW must add
MISSING_SHIFT = "missing shift"              # the stable softmax without subtracting max(z)
NO_SHARED_DOT = "no shared dot"              # softmax backward a * g, the shared <g, a> dropped
DROPPED_TRANSPOSE = "dropped transpose"      # dV = A G instead of Aᵀ G
FORGOT_SCALE = "forgot 1/sqrt(D)"            # the score scale dropped from dQ and dK
EPS_OUTSIDE_SQRT = "eps outside the sqrt"    # rstd = 1 / (sqrt(var) + eps)
HARD_CODED_EPS = "hard-coded eps"            # nn.LayerNorm's default eps whatever the argument
INDEPENDENT_DIVISIONS = "independent divisions"  # dx = r u: the mean and variance paths dropped


def matmul_backward(x: Tensor, w: Tensor, g: Tensor, bug: str | None = None) -> tuple[Tensor, Tensor]:
    """(dX, dW) of Y = X W for upstream G: dX = G Wᵀ (n, k), dW = Xᵀ G (k, m); OVERWRITE keeps only the last
    row's outer product in dW (a per-row loop with `=`)."""
    if bug == OVERWRITE:
        dw = torch.zeros(x.shape[1], g.shape[1], dtype=x.dtype)
        for i in range(x.shape[0]):
            dw = torch.outer(x[i], g[i])     # the bug: every row of X reuses W, its parts must add
        return g @ w.T, dw
    return g @ w.T, x.T @ g


def softmax_naive(z: list[float]) -> list[float]:
    """exp(z_i) / sum exp(z_k) in Python floats; math.exp raises OverflowError past ~709."""
    e = [math.exp(v) for v in z]
    s = sum(e)
    return [v / s for v in e]


def softmax_shifted(z: list[float], bug: str | None = None) -> list[float]:
    """Softmax after subtracting max(z): every exponential is at most one (MISSING_SHIFT: no subtraction)."""
    m = 0.0 if bug == MISSING_SHIFT else max(z)
    return softmax_naive([v - m for v in z])


def softmax_xent_backward(z: list[float], target: int, bug: str | None = None) -> tuple[list[float], float,
                                                                                        list[float]]:
    """(p, L, dL/dz) for L = -log p[target]: dL/dz_j = p_j - [j == target]."""
    p = softmax_shifted(z, bug)
    loss = -math.log(p[target])
    return p, loss, [pj - (1.0 if j == target else 0.0) for j, pj in enumerate(p)]


def softmax_rows(s: Tensor) -> Tensor:
    """Row-wise softmax with the max shift; (T, T) -> (T, T)."""
    e = torch.exp(s - s.max(dim=1, keepdim=True).values)
    # times the reciprocal of the row sum, as torch's CPU kernel does (e / sum differs by an ulp)
    return e * (1.0 / e.sum(dim=1, keepdim=True))


def softmax_jvp(a: Tensor, g: Tensor, bug: str | None = None) -> Tensor:
    """dL/ds_k = a_k (g_k - sum_j g_j a_j) per row, without forming the (T, T, T) Jacobian."""
    if bug == NO_SHARED_DOT:
        return a * g
    dot = (g * a).sum(dim=1, keepdim=True)  # (T, 1)
    return a * (g - dot)


def attention_forward(q: Tensor, k: Tensor, v: Tensor) -> dict[str, Tensor]:
    """S = Q Kᵀ/√D, A = softmax rows of S, O = A V for one head; Q, K, V are (T, D)."""
    scale = math.sqrt(q.shape[1])
    s = q @ k.T / scale
    a = softmax_rows(s)
    return {"S": s, "A": a, "O": a @ v}


def attention_backward(q: Tensor, k: Tensor, v: Tensor, g: Tensor, *,
                       forget_scale: bool = False, bug: str | None = None) -> dict[str, Tensor]:
    """dV, dA, dS, dQ, dK for upstream G = dL/dO; `forget_scale` (or bug FORGOT_SCALE) drops 1/√D (the negative
    control); DROPPED_TRANSPOSE computes dV = A G; NO_SHARED_DOT drops the softmax backward's shared dot."""
    fwd = attention_forward(q, k, v)
    a = fwd["A"]
    dv, da = (a if bug == DROPPED_TRANSPOSE else a.T) @ g, g @ v.T   # O = A V: the matrix rule
    ds = softmax_jvp(a, da, bug)        # couples every score in a row
    scale = 1.0 if forget_scale or bug == FORGOT_SCALE else math.sqrt(q.shape[1])
    return {**fwd, "dV": dv, "dA": da, "dS": ds, "dQ": ds @ k / scale, "dK": ds.T @ q / scale}


def layernorm_forward(x: Tensor, gamma: Tensor, beta: Tensor, eps: float,
                      bug: str | None = None) -> dict[str, Tensor]:
    """Mean, biased variance, rstd, xhat and y for one row of D features."""
    d = x.shape[-1]
    if bug == HARD_CODED_EPS:   # the library default, read as a hand-written module would have copied it
        eps = inspect.signature(torch.nn.LayerNorm).parameters["eps"].default
    mean = x.sum() / d
    var = ((x - mean) ** 2).sum() / d
    rstd = 1.0 / (torch.sqrt(var) + eps) if bug == EPS_OUTSIDE_SQRT else 1.0 / torch.sqrt(var + eps)
    xhat = x * rstd - mean * rstd  # torch's CPU kernel form; (x - mean) * rstd differs by an ulp
    return {"mean": mean, "variance": var, "rstd": rstd, "xhat": xhat, "y": gamma * xhat + beta}


def layernorm_backward(x: Tensor, gamma: Tensor, beta: Tensor, g: Tensor, eps: float,
                       bug: str | None = None) -> dict[str, Tensor]:
    """dx = r/D (D u - sum u - xhat sum(u xhat)) with u = g gamma; dgamma = g xhat; dbeta = g.
    INDEPENDENT_DIVISIONS treats the row as D scalar divisions (dx = r u, the mean and variance held fixed)."""
    fwd = layernorm_forward(x, gamma, beta, eps, bug)
    d, xhat, r = x.shape[-1], fwd["xhat"], fwd["rstd"]
    u = g * gamma
    if bug == INDEPENDENT_DIVISIONS:
        return {**fwd, "dx": r * u, "dgamma": g * xhat, "dbeta": g.clone()}
    dx = r / d * (d * u - u.sum() - xhat * (u * xhat).sum())  # two row reductions
    return {**fwd, "dx": dx, "dgamma": g * xhat, "dbeta": g.clone()}
