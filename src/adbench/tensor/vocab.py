"""T2, continued: the logit gradient meets the output matrix, and torch's fused cross-entropy on huge logits.

Doc 000 ("the target logit moved every other logit"): with z = W h, W (V, D), dL/dW = dz ⊗ h gives every
vocabulary row a gradient (p_j > 0 for every j), and dL/dh = Wᵀ dz has the hidden width D, the vocabulary
summed out. A fused cross-entropy evaluates logsumexp, so [1000, 999, 998] stays finite where exp(1000)
overflows; the naive torch formula log(exp(z) / sum exp(z)) beside it is the control.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
import torch.nn.functional as F

from . import rules
from .entries import entries

F64 = torch.float64
TARGET_ONLY = "target logit only"   # the loss -z[target]: the log-sum-exp normalizer dropped


def loss_of(z: torch.Tensor, target: int, bug: str | None = None) -> torch.Tensor:
    """Cross-entropy of one row of logits (TARGET_ONLY: -z[target], the normalizer dropped)."""
    return -z[target] if bug == TARGET_ONLY else F.cross_entropy(z[None], torch.tensor([target]))


def output_layer(vocab: int, width: int, target: int, seed: int, bug: str | None = None) -> dict[str, pd.DataFrame]:
    """torch's dW and dh of cross_entropy(W h) against dz ⊗ h and Wᵀ dz from the hand logit rule."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(vocab, width, dtype=F64, generator=gen)    # (V, D)
    h = torch.randn(width, dtype=F64, generator=gen)           # (D,)
    wt, ht = w.clone().requires_grad_(), h.clone().requires_grad_()
    z = wt @ ht                                                 # (V,)
    loss_of(z, target, bug).backward()
    p, _, dz = rules.softmax_xent_backward(z.tolist(), target)  # hand: p - onehot, Python floats
    dz = torch.tensor(dz, dtype=F64)
    dw_hand, dh_hand = torch.outer(dz, h), w.T @ dz            # (V, D), (D,)
    grads = pd.DataFrame(entries("dW", dw_hand, wt.grad) + entries("dh", dh_hand, ht.grad))
    rows = pd.DataFrame({"vocab_row": range(vocab), "is_target": [j == target for j in range(vocab)], "p": p,
                         "dz_hand": dz.tolist(), "dW_row_norm_torch": wt.grad.norm(dim=1).tolist(),
                         "dW_row_norm_hand": dw_hand.norm(dim=1).tolist(),
                         "dW_row_nonzero_entries_torch": (wt.grad != 0).sum(dim=1).tolist()})
    return {"output_grads": grads, "output_rows": rows}


def fused_cross_entropy(logits: list[float], target: int, bug: str | None = None) -> pd.DataFrame:
    """F.cross_entropy (float32, float64) and the naive torch formula against the shifted hand value (a hand
    rule that overflows, under rules.MISSING_SHIFT, gives NaN)."""
    try:
        _, loss_hand, dz_hand = rules.softmax_xent_backward(logits, target, bug)   # max-shifted, Python floats
    except OverflowError:
        loss_hand, dz_hand = math.nan, [math.nan] * len(logits)
    naive = lambda z: -torch.log(torch.exp(z) / torch.exp(z).sum())[target]   # noqa: E731
    fused = lambda z: F.cross_entropy(z[None], torch.tensor([target]))      # noqa: E731
    rows = []
    for method, fn in (("F.cross_entropy", fused), ("naive log(exp(z) / sum exp(z))", naive)):
        for dtype in (torch.float32, F64):
            z = torch.tensor(logits, dtype=dtype, requires_grad=True)
            loss = fn(z)
            loss.backward()
            g = z.grad.to(F64)
            rows.append({"method": method, "dtype": str(dtype).removeprefix("torch."), "loss": loss.item(),
                         "hand_shifted_loss": loss_hand, "abs_diff": abs(loss.item() - loss_hand),
                         "loss_finite": bool(torch.isfinite(loss).item()),
                         "grad_finite": bool(torch.isfinite(g).all().item()),
                         "max_grad_diff": (g - torch.tensor(dz_hand, dtype=F64)).abs().max().item()})
    return pd.DataFrame(rows)
