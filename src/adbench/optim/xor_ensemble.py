"""O1 control: the same 2-4-1 XOR network in vectorized numpy float64, many copies at once.

Used to show how fragile the stuck/solved outcome of gradient descent at lr 0.5 is: copies
that differ from a seed's initial state by a few ulps of one weight end in different basins.
"""

from __future__ import annotations

import random

import numpy as np


def init_arrays(seeds: list[int], hidden: int, n_in: int, init_range: float) -> dict[str, np.ndarray]:
    """Stacked initial parameters, drawn exactly as adbench.optim.xor.init_params draws them."""
    out: dict[str, list] = {"W1": [], "b1": [], "W2": [], "b2": []}
    for seed in seeds:
        rng = random.Random(seed)
        draw = [rng.uniform(-init_range, init_range) for _ in range(hidden * n_in + 2 * hidden + 1)]
        out["W1"].append(np.reshape(draw[:hidden * n_in], (hidden, n_in)))
        out["b1"].append(draw[hidden * n_in:hidden * (n_in + 1)])
        out["W2"].append(draw[hidden * (n_in + 1):hidden * (n_in + 2)])
        out["b2"].append(draw[-1])
    return {k: np.array(v, dtype=np.float64) for k, v in out.items()}


def loss_grads(p: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, dict]:
    """Per-copy sum of squared errors (E,) and its gradients, by hand-written backward."""
    h = np.tanh(np.einsum("ehj,rj->erh", p["W1"], X) + p["b1"][:, None, :])   # (E, rows, hidden)
    o = np.tanh(np.einsum("eh,erh->er", p["W2"], h) + p["b2"][:, None])        # (E, rows)
    d_o = 2 * (o - y) * (1 - o * o)                                          # dL/d(pre-activation)
    d_h = d_o[:, :, None] * p["W2"][:, None, :] * (1 - h * h)                # (E, rows, hidden)
    grads = {"W1": np.einsum("erh,rj->ehj", d_h, X), "b1": d_h.sum(1),
             "W2": np.einsum("er,erh->eh", d_o, h), "b2": d_o.sum(1)}
    return ((o - y) ** 2).sum(1), grads


def gd_final_losses(p: dict[str, np.ndarray], X, y, lr: float, steps: int) -> np.ndarray:
    """Final loss (E,) after `steps` full-batch gradient-descent updates of every copy."""
    p = {k: v.copy() for k, v in p.items()}
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    for _ in range(steps):
        _, g = loss_grads(p, X, y)
        for k in p:
            p[k] -= lr * g[k]
    return loss_grads(p, X, y)[0]


def ulp_nudged(p: dict[str, np.ndarray], offsets: list[int]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each copy repeated once per offset k, with W1[0][0] moved k ulps; returns (params, k per copy)."""
    reps = {key: np.repeat(v, len(offsets), axis=0) for key, v in p.items()}
    k = np.tile(np.asarray(offsets, dtype=np.float64), len(p["b2"]))
    w = reps["W1"][:, 0, 0]
    reps["W1"][:, 0, 0] = w + k * np.spacing(np.abs(w))   # spacing = 1 ulp at |w|
    return reps, k
