"""T3 with Q, K and V projected from one input X (doc 000, "the softmax sent the error down three roads").

Q = X Wq, K = X Wk, V = X Wv, so X reaches the loss by three routes and dX = dQ Wqᵀ + dK Wkᵀ + dV Wvᵀ.
torch's dX (autograd through the whole head) is set beside that sum, built from T3's hand rules; each
sum with one route dropped is the control that must differ.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from . import rules

F64 = torch.float64
ROUTES = ("Q", "K", "V")


def projection_routes(tokens: int, model_width: int, head_width: int, seed: int) -> pd.DataFrame:
    """torch's dX against the three-route sum and against each sum missing one route."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, model_width, dtype=F64, generator=gen)                  # (T, Dm)
    w = {r: torch.randn(model_width, head_width, dtype=F64, generator=gen) for r in ROUTES}   # (Dm, D)
    g = torch.randn(tokens, head_width, dtype=F64, generator=gen)                   # dL/dO, (T, D)
    xt = x.clone().requires_grad_()
    q, k, v = (xt @ w[r] for r in ROUTES)
    (torch.softmax(q @ k.T / math.sqrt(head_width), dim=-1) @ v).backward(g)
    hand = rules.attention_backward(x @ w["Q"], x @ w["K"], x @ w["V"], g)         # dQ, dK, dV by hand
    route = {r: hand[f"d{r}"] @ w[r].T for r in ROUTES}                              # (T, Dm) each
    variants = [("all three routes", ROUTES)] + [(f"without the {r} route", tuple(o for o in ROUTES if o != r))
                                                 for r in ROUTES]
    rows = []
    for name, used in variants:
        total = sum(route[r] for r in used)
        rows.append({"variant": name, "routes": "+".join(used),
                     "max_abs_diff": (total - xt.grad).abs().max().item(),
                     "rel_diff": ((total - xt.grad).norm() / xt.grad.norm()).item(),
                     "dropped_route_norm": sum(route[r].norm().item() for r in ROUTES if r not in used),
                     "torch_dX_norm": xt.grad.norm().item()})
    return pd.DataFrame(rows)
