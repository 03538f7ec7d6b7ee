"""T3 through torch's fused attention kernel (doc 000: a fused kernel must still return the gradients the
explicit formulas define). scaled_dot_product_attention on CPU float64 with (batch, heads, T, D) inputs,
against T3's hand rules on the same Q, K, V and upstream G; the kernel torch chose is recorded."""

from __future__ import annotations

import pandas as pd
import torch
import torch.nn.functional as F

from . import rules
from .entries import entries

F64 = torch.float64


def fused_attention(q: list, k: list, v: list, upstream: list, bug: str | None = None) -> pd.DataFrame:
    """O, dQ, dK, dV: hand rules beside scaled_dot_product_attention's backward, entry by entry."""
    Q, K, V, G = (torch.tensor(t, dtype=F64) for t in (q, k, v, upstream))
    hand = rules.attention_backward(Q, K, V, G, bug=bug)
    qt, kt, vt = (t[None, None].clone().requires_grad_() for t in (Q, K, V))   # (1, 1, T, D): the fused layout
    out = F.scaled_dot_product_attention(qt, kt, vt)                            # default scale 1/sqrt(D)
    out.backward(G[None, None])
    ref = {"O": out[0, 0], "dQ": qt.grad[0, 0], "dK": kt.grad[0, 0], "dV": vt.grad[0, 0]}
    table = pd.DataFrame([r for n in ("O", "dQ", "dK", "dV") for r in entries(n, hand[n], ref[n])])
    table["kernel"] = type(out.grad_fn).__name__
    return table
