"""S8, measured rather than counted: how many forward-mode seeds the full gradient needs.

One forward-mode pass with tangent seed s returns the directional derivative g·s. From k random seeds
S (k, n) and their k tangents t = S g, least squares gives the minimum-norm ĝ with S ĝ = t: it recovers
g only when the seeds span all n inputs (k = n); for k < n it misses the part of g outside their span.
Reverse mode returns all n partials from one backward pass. The seeds are random, so nothing here is a
loop that has one pass per input by design.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from .dual import Dual, count_ops


def reconstruction(x: list[float], seed: int, loss: Callable, reverse_grad: list[float],
                   reverse_closures: int) -> pd.DataFrame:
    """Per k = 1..n seeds: the least-squares gradient from k forward passes against reverse mode's
    (`reverse_grad`, from one backward pass that ran `reverse_closures` closures)."""
    n = len(x)
    g = np.array(reverse_grad)                       # (n,)
    seeds = np.random.default_rng(seed).standard_normal((n, n))   # row k: seed direction k
    tangents, ops = [], []
    for s in seeds:
        with count_ops() as counter:
            tangents.append(loss([Dual(v, float(sj)) for v, sj in zip(x, s)]).tangent)   # g·s, forward mode
        ops.append(counter.ops)
    rows = []
    for k in range(1, n + 1):
        S, t = seeds[:k], np.array(tangents[:k])     # (k, n), (k,)
        g_hat = np.linalg.lstsq(S, t, rcond=None)[0]  # minimum-norm solution of S ĝ = t
        q, _ = np.linalg.qr(S.T)                       # (n, k) basis of the seeds' span
        rows.append({"seeds": k, "inputs": n, "rank": int(np.linalg.matrix_rank(S)), "forward_passes": k,
                     "forward_ops": int(sum(ops[:k])), "reverse_backward_passes": 1,
                     "reverse_closures": reverse_closures, "max_abs_err": float(np.abs(g_hat - g).max()),
                     "err_norm": float(np.linalg.norm(g_hat - g)),
                     "outside_span_norm": float(np.linalg.norm(g - q @ (q.T @ g))),
                     "grad_norm": float(np.linalg.norm(g))})
    return pd.DataFrame(rows)
