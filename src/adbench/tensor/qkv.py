"""T3 with Q, K and V projected from one input X (doc 000, "the softmax sent the error down three roads").

Q = X Wq, K = X Wk, V = X Wv, so X reaches the loss by three routes and dX = dQ Wqᵀ + dK Wkᵀ + dV Wvᵀ.
torch's dX (autograd through the whole head) is set beside that sum, built from T3's hand rules; each
sum with one route dropped is the control that must differ. The weights reuse X the same way:
dWq = Xᵀ dQ, dWk = Xᵀ dK, dWv = Xᵀ dV, set beside torch's weight gradients.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from . import rules
from .entries import entries

F64 = torch.float64
ROUTES = ("Q", "K", "V")
OVERWRITE_ROUTES = "overwrite routes"   # dX written route by route with `=`: only the last route survives


def _draws(tokens: int, model_width: int, head_width: int, seed: int):
    """X (T, Dm), {route: W (Dm, D)} and dL/dO (T, D) from one seeded generator."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, model_width, dtype=F64, generator=gen)                  # (T, Dm)
    w = {r: torch.randn(model_width, head_width, dtype=F64, generator=gen) for r in ROUTES}   # (Dm, D)
    g = torch.randn(tokens, head_width, dtype=F64, generator=gen)                   # dL/dO, (T, D)
    return x, w, g


def projection_routes(tokens: int, model_width: int, head_width: int, seed: int,
                      bug: str | None = None) -> pd.DataFrame:
    """torch's dX against the three-route sum and against each sum missing one route (bug: OVERWRITE_ROUTES
    keeps only the last route of a sum; any other goes to the hand attention rules)."""
    x, w, g = _draws(tokens, model_width, head_width, seed)
    xt = x.clone().requires_grad_()
    q, k, v = (xt @ w[r] for r in ROUTES)
    (torch.softmax(q @ k.T / math.sqrt(head_width), dim=-1) @ v).backward(g)
    hand = rules.attention_backward(x @ w["Q"], x @ w["K"], x @ w["V"], g, bug=bug)  # dQ, dK, dV by hand
    route = {r: hand[f"d{r}"] @ w[r].T for r in ROUTES}                              # (T, Dm) each
    variants = [("all three routes", ROUTES)] + [(f"without the {r} route", tuple(o for o in ROUTES if o != r))
                                                 for r in ROUTES]
    rows = []
    for name, used in variants:
        total = route[used[-1]] if bug == OVERWRITE_ROUTES else sum(route[r] for r in used)
        rows.append({"variant": name, "routes": "+".join(used),
                     "max_abs_diff": (total - xt.grad).abs().max().item(),
                     "rel_diff": ((total - xt.grad).norm() / xt.grad.norm()).item(),
                     "dropped_route_norm": sum(route[r].norm().item() for r in ROUTES if r not in used),
                     "torch_dX_norm": xt.grad.norm().item()})
    return pd.DataFrame(rows)


def projection_weights(tokens: int, model_width: int, head_width: int, seed: int,
                       bug: str | None = None) -> pd.DataFrame:
    """torch's dWq, dWk, dWv (the weights as leaves) against Xᵀ dQ, Xᵀ dK, Xᵀ dV from the hand rules."""
    x, w, g = _draws(tokens, model_width, head_width, seed)
    wt = {r: w[r].clone().requires_grad_() for r in ROUTES}
    q, k, v = (x @ wt[r] for r in ROUTES)
    (torch.softmax(q @ k.T / math.sqrt(head_width), dim=-1) @ v).backward(g)
    hand = rules.attention_backward(x @ w["Q"], x @ w["K"], x @ w["V"], g, bug=bug)
    return pd.DataFrame([e for r in ROUTES for e in entries(f"dW{r.lower()}", x.T @ hand[f"d{r}"], wt[r].grad)])
