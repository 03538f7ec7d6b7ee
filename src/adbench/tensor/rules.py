"""Hand-written backward rules (no autograd): matmul, softmax cross-entropy, one attention head, layer norm."""

from __future__ import annotations

import math

import torch

Tensor = torch.Tensor


def matmul_backward(x: Tensor, w: Tensor, g: Tensor) -> tuple[Tensor, Tensor]:
    """(dX, dW) of Y = X W for upstream G: dX = G Wᵀ (n, k), dW = Xᵀ G (k, m)."""
    return g @ w.T, x.T @ g


def softmax_naive(z: list[float]) -> list[float]:
    """exp(z_i) / sum exp(z_k) in Python floats; math.exp raises OverflowError past ~709."""
    e = [math.exp(v) for v in z]
    s = sum(e)
    return [v / s for v in e]


def softmax_shifted(z: list[float]) -> list[float]:
    """Softmax after subtracting max(z): every exponential is at most one."""
    m = max(z)
    return softmax_naive([v - m for v in z])


def softmax_xent_backward(z: list[float], target: int) -> tuple[list[float], float, list[float]]:
    """(p, L, dL/dz) for L = -log p[target]: dL/dz_j = p_j - [j == target]."""
    p = softmax_shifted(z)
    loss = -math.log(p[target])
    return p, loss, [pj - (1.0 if j == target else 0.0) for j, pj in enumerate(p)]


def softmax_rows(s: Tensor) -> Tensor:
    """Row-wise softmax with the max shift; (T, T) -> (T, T)."""
    e = torch.exp(s - s.max(dim=1, keepdim=True).values)
    # times the reciprocal of the row sum, as torch's CPU kernel does (e / sum differs by an ulp)
    return e * (1.0 / e.sum(dim=1, keepdim=True))


def softmax_jvp(a: Tensor, g: Tensor) -> Tensor:
    """dL/ds_k = a_k (g_k - sum_j g_j a_j) per row, without forming the (T, T, T) Jacobian."""
    dot = (g * a).sum(dim=1, keepdim=True)  # (T, 1)
    return a * (g - dot)


def attention_forward(q: Tensor, k: Tensor, v: Tensor) -> dict[str, Tensor]:
    """S = Q Kᵀ/√D, A = softmax rows of S, O = A V for one head; Q, K, V are (T, D)."""
    scale = math.sqrt(q.shape[1])
    s = q @ k.T / scale
    a = softmax_rows(s)
    return {"S": s, "A": a, "O": a @ v}


def attention_backward(q: Tensor, k: Tensor, v: Tensor, g: Tensor, *,
                       forget_scale: bool = False) -> dict[str, Tensor]:
    """dV, dA, dS, dQ, dK for upstream G = dL/dO; `forget_scale` drops 1/√D (the negative control)."""
    fwd = attention_forward(q, k, v)
    a = fwd["A"]
    dv, da = a.T @ g, g @ v.T           # O = A V: the matrix rule
    ds = softmax_jvp(a, da)             # couples every score in a row
    scale = 1.0 if forget_scale else math.sqrt(q.shape[1])
    return {**fwd, "dV": dv, "dA": da, "dS": ds, "dQ": ds @ k / scale, "dK": ds.T @ q / scale}


def layernorm_forward(x: Tensor, gamma: Tensor, beta: Tensor, eps: float) -> dict[str, Tensor]:
    """Mean, biased variance, rstd, xhat and y for one row of D features."""
    d = x.shape[-1]
    mean = x.sum() / d
    var = ((x - mean) ** 2).sum() / d
    rstd = 1.0 / torch.sqrt(var + eps)
    xhat = x * rstd - mean * rstd  # torch's CPU kernel form; (x - mean) * rstd differs by an ulp
    return {"mean": mean, "variance": var, "rstd": rstd, "xhat": xhat, "y": gamma * xhat + beta}


def layernorm_backward(x: Tensor, gamma: Tensor, beta: Tensor, g: Tensor, eps: float) -> dict[str, Tensor]:
    """dx = r/D (D u - sum u - xhat sum(u xhat)) with u = g gamma; dgamma = g xhat; dbeta = g."""
    fwd = layernorm_forward(x, gamma, beta, eps)
    d, xhat, r = x.shape[-1], fwd["xhat"], fwd["rstd"]
    u = g * gamma
    dx = r / d * (d * u - u.sum() - xhat * (u * xhat).sum())  # two row reductions
    return {**fwd, "dx": dx, "dgamma": g * xhat, "dbeta": g.clone()}
