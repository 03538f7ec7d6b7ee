"""T3 under a causal mask (doc 000, "the softmax sent the error down three roads").

A future key gets a score that acts like -inf, so its probability is exactly 0 and, since the softmax
backward is a·(g - ⟨g, a⟩), so is its score gradient. Two representations: a -inf fill and a large
negative finite fill. A row whose every key is masked with -inf is the control: softmax then computes
-inf - (-inf) and the NaN reaches the gradients, which the "no NaN" check must catch.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from . import rules

F64 = torch.float64


def _masks(tq: int, tk: int) -> dict[str, torch.Tensor]:
    """True where query i must not see key j: the future keys, and the control's fully masked row 0."""
    causal = torch.ones(tq, tk, dtype=torch.bool).triu(1)
    full = causal.clone()
    full[0] = True
    return {"causal": causal, "causal, row 0 fully masked": full}


def _run(q, k, v, g, mask: torch.Tensor, fill: float, bug: str | None) -> dict[str, torch.Tensor]:
    """Forward with masked_fill, torch's backward, and the hand softmax rule on the same A."""
    qt, kt, vt = (t.clone().requires_grad_() for t in (q, k, v))
    s = qt @ kt.T / math.sqrt(q.shape[1])       # (Tq, Tk) raw scores
    s.retain_grad()
    m = s.masked_fill(mask, fill)               # the softmax's input
    m.retain_grad()
    a = torch.softmax(m, dim=-1)
    (a @ vt).backward(g)
    hand = rules.softmax_jvp(a.detach(), g @ v.T, bug)   # a (g - <g, a>) with dA = G Vᵀ
    return {"S": s.detach(), "A": a.detach(), "dS": s.grad, "dM": m.grad, "hand_dM": hand,
            "dQ": qt.grad, "dK": kt.grad, "dV": vt.grad}


def causal_mask(q: list, k: list, v: list, upstream: list, mask_fill: float,
                bug: str | None = None) -> dict[str, pd.DataFrame]:
    """Per fill and mask: every score's probability and gradients, and a summary of the masked entries."""
    Q, K, V, G = (torch.tensor(t, dtype=F64) for t in (q, k, v, upstream))
    cases = [("-inf", -math.inf, "causal"), ("large negative finite", mask_fill, "causal"),
             ("-inf", -math.inf, "causal, row 0 fully masked")]
    entries, summary = [], []
    for fill_name, fill, mask_name in cases:
        mask = _masks(Q.shape[0], K.shape[0])[mask_name]
        r = _run(Q, K, V, G, mask, fill, bug)
        for i, j in ((i, j) for i in range(mask.shape[0]) for j in range(mask.shape[1])):
            entries.append({"fill": fill_name, "fill_value": fill, "mask": mask_name, "row": i, "col": j,
                            "masked": bool(mask[i, j]),
                            **{n: r[n][i, j].item() for n in ("S", "A", "dS", "dM", "hand_dM")}})
        grads = torch.cat([r[n].flatten() for n in ("A", "dS", "dM", "dQ", "dK", "dV")])
        summary.append({"fill": fill_name, "fill_value": fill, "mask": mask_name, "masked_entries": int(mask.sum()),
                        "masked_prob_max": r["A"][mask].abs().max().item() if mask.any() else math.nan,
                        "masked_dS_max_abs": r["dS"][mask].abs().max().item() if mask.any() else math.nan,
                        "masked_dM_max_abs": r["dM"][mask].abs().max().item() if mask.any() else math.nan,
                        "nan_count": int(torch.isnan(grads).sum()), "all_finite": bool(torch.isfinite(grads).all())})
    return {"mask": pd.DataFrame(entries), "mask_summary": pd.DataFrame(summary)}
