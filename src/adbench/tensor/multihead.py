"""T3 across heads (doc 000: "Backward splits the concatenated gradient into head slices, runs each head's paths,
then adds their input contributions").

X (T, Dm) is projected to H = Dm // D heads of width D, each head attends on its slice, the heads' outputs are
concatenated and projected back by Wo. torch's dX (autograd through all of it) is set beside the hand backward:
dC = G Woᵀ split into head slices, T3's hand rules per head, and each head's three routes added into dX. The sums
missing one head are the controls that must differ.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from . import rules

F64 = torch.float64
OVERWRITE_HEADS = "overwrite across heads"   # dX = a head's contribution, `=` for `+=` across heads


def _torch_dx(x, wq, wk, wv, wo, g, heads: int, d: int) -> torch.Tensor:
    """torch's dL/dX through the multi-head block for upstream G = dL/d(output)."""
    xt = x.clone().requires_grad_()
    q, k, v = xt @ wq, xt @ wk, xt @ wv                              # (T, H D) each
    outs = [torch.softmax(q[:, s] @ k[:, s].T / math.sqrt(d), dim=-1) @ v[:, s]
            for s in (slice(h * d, (h + 1) * d) for h in range(heads))]
    (torch.cat(outs, dim=1) @ wo).backward(g)                        # (T, Dm)
    return xt.grad


def multihead_routes(tokens: int, model_width: int, head_width: int, seed: int,
                     bug: str | None = None) -> pd.DataFrame:
    """torch's dX against the sum of every head's hand contribution and against each sum missing one head."""
    heads, d = model_width // head_width, head_width
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, model_width, dtype=F64, generator=gen)                       # (T, Dm)
    wq, wk, wv = (torch.randn(model_width, heads * d, dtype=F64, generator=gen) for _ in range(3))
    wo = torch.randn(heads * d, model_width, dtype=F64, generator=gen)                   # (H D, Dm)
    g = torch.randn(tokens, model_width, dtype=F64, generator=gen)                       # (T, Dm)
    ref = _torch_dx(x, wq, wk, wv, wo, g, heads, d)
    dc = g @ wo.T                                                                         # (T, H D)
    part = []
    for h in range(heads):
        s = slice(h * d, (h + 1) * d)
        b = rules.attention_backward(x @ wq[:, s], x @ wk[:, s], x @ wv[:, s], dc[:, s], bug=bug)
        part.append(b["dQ"] @ wq[:, s].T + b["dK"] @ wk[:, s].T + b["dV"] @ wv[:, s].T)   # (T, Dm)
    variants = [("all heads", range(heads))] + [(f"without head {h}", [o for o in range(heads) if o != h])
                                                for h in range(heads)]
    rows = []
    for name, used in variants:
        total = torch.zeros_like(ref)
        for h in used:
            total = part[h] if bug == OVERWRITE_HEADS else total + part[h]
        rows.append({"variant": name, "heads": heads, "head_width": d,
                     "rel_diff": ((total - ref).norm() / ref.norm()).item(), "torch_dX_norm": ref.norm().item()})
    return pd.DataFrame(rows)
