"""What a backward node keeps from forward (doc 000: "Computing dL/dX needs W. Computing dL/dW needs X"; "A fused
implementation may save the mean and inverse standard deviation rather than every named intermediate").

Two readings of one node: the saved-tensor hooks (every tensor autograd packs while the forward runs) and the
node's own `grad_fn._saved_*` attributes. Each saved tensor is named by the hand forward's quantity it equals
(64 float64 ulps of the larger magnitude: torch's fused kernel and the hand forward round differently), or
"other"; an attribute the node left empty reads "not saved".
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import torch
import torch.nn.functional as F

from . import rules

F64 = torch.float64
ULPS = 64
DETACHED_WEIGHT = "detached weight"       # W.detach() in the forward: dW is never asked for, X never kept
ELEMENTWISE = "elementwise layer norm"    # layer norm written from elementwise ops: autograd keeps each step
NOT_SAVED, OTHER = "not saved", "other"


def _name(t: torch.Tensor | None, candidates: dict[str, torch.Tensor]) -> str:
    """The first candidate `t` equals to 64 ulps (same number of elements), else OTHER."""
    if t is None:
        return NOT_SAVED
    flat = t.detach().reshape(-1).to(F64)
    for name, c in candidates.items():
        c = c.reshape(-1).to(F64)
        if c.numel() != flat.numel():
            continue
        scale = torch.finfo(F64).eps * torch.maximum(flat.abs(), c.abs()).clamp(min=1.0)
        if bool(((flat - c).abs() <= ULPS * scale).all()):
            return name
    return OTHER


def _table(forward: Callable[[], torch.Tensor], attrs: tuple[str, ...],
           candidates: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Run `forward` under saved-tensor hooks; one row per packed tensor and per node attribute in `attrs`."""
    packed: list[torch.Tensor] = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        node = forward().grad_fn
    rows = [{"source": "saved_tensors_hooks", "slot": str(i), "shape": "x".join(map(str, t.shape)) or "scalar",
             "saved": _name(t, candidates)} for i, t in enumerate(packed)]
    for a in attrs:
        t = getattr(node, a, None)
        rows.append({"source": "grad_fn attribute", "slot": a,
                     "shape": NOT_SAVED if t is None else "x".join(map(str, t.shape)) or "scalar",
                     "saved": _name(t, candidates)})
    return pd.DataFrame(rows)


def matmul_saved(x: list, w: list, bug: str | None = None) -> pd.DataFrame:
    """What Y = X W's node keeps, X and W both leaves that need a gradient (DETACHED_WEIGHT: W detached)."""
    X, W = torch.tensor(x, dtype=F64), torch.tensor(w, dtype=F64)
    xt, wt = X.clone().requires_grad_(), W.clone().requires_grad_()
    return _table(lambda: xt @ (wt.detach() if bug == DETACHED_WEIGHT else wt), ("_saved_self", "_saved_mat2"),
                  {"X": X, "W": W})


def _elementwise(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float) -> torch.Tensor:
    """Layer norm spelled out in elementwise torch ops (the ELEMENTWISE variant)."""
    centered = x - x.mean()
    rstd = torch.rsqrt((centered * centered).mean() + eps)
    return gamma * (centered * rstd) + beta


def layernorm_saved(x: list, gamma: list, beta: list, eps: float, bug: str | None = None) -> pd.DataFrame:
    """What torch's layer_norm node keeps, against the hand forward's statistics and intermediates."""
    X, Ga, Be = (torch.tensor(t, dtype=F64) for t in (x, gamma, beta))
    h = rules.layernorm_forward(X, Ga, Be, eps)
    # statistics first: a saved row equal to the mean is named "mean" before any coincidence further down
    candidates = {"mean": h["mean"], "rstd": h["rstd"], "variance": h["variance"], "x": X, "gamma": Ga, "beta": Be,
                  "x - mean": X - h["mean"], "xhat": h["xhat"], "y": h["y"]}
    xt, gt, bt = (t.clone().requires_grad_() for t in (X, Ga, Be))
    fwd = (lambda: _elementwise(xt, gt, bt, eps)) if bug == ELEMENTWISE else \
        (lambda: F.layer_norm(xt, (X.shape[-1],), gt, bt, eps))
    return _table(fwd, ("_saved_input", "_saved_weight", "_saved_bias", "_saved_result1", "_saved_result2"),
                  candidates)
