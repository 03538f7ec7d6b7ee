"""T4 across two epsilons (doc 000: epsilon changes the derivative when the variance is comparable to it).

rstd = 1/sqrt(var + eps) scales every entry of dx, so on a row whose variance is near eps, dx moves with
eps; on a row whose variance is far above eps it barely moves. torch's layer_norm backward at each eps,
with the hand rule beside it.
"""

from __future__ import annotations

import pandas as pd
import torch
import torch.nn.functional as F

from . import rules

F64 = torch.float64


def _dx(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, g: torch.Tensor, eps: float) -> torch.Tensor:
    """torch's dL/dx of layer_norm(x) for upstream g."""
    xt = x.clone().requires_grad_()
    F.layer_norm(xt, (x.shape[-1],), gamma, beta, eps).backward(g)
    return xt.grad


def eps_sensitivity(x: list, gamma: list, beta: list, upstream: list, near_constant_x: list,
                    eps_compare: list[float], bug: str | None = None) -> dict[str, pd.DataFrame]:
    """dx per row, eps and feature (torch and hand), and per row how far dx moves between the two eps."""
    Ga, Be, G = (torch.tensor(t, dtype=F64) for t in (gamma, beta, upstream))
    rows, summary = [], []
    for name, row in (("documented row", x), ("nearly constant row", near_constant_x)):
        X = torch.tensor(row, dtype=F64)
        dx = []                                   # torch's dx (D,) at each eps
        for eps in eps_compare:
            hand = rules.layernorm_backward(X, Ga, Be, G, eps, bug)
            dx.append(_dx(X, Ga, Be, G, eps))
            rows += [{"row": name, "eps": eps, "variance": hand["variance"].item(), "rstd": hand["rstd"].item(),
                      "feature": i, "dx_torch": dx[-1][i].item(), "dx_hand": hand["dx"][i].item()}
                     for i in range(len(row))]
        (ea, eb), var = eps_compare, hand["variance"].item()   # the variance does not depend on eps
        summary.append({"row": name, "variance": var, "eps_a": ea, "eps_b": eb, "variance_over_eps_a": var / ea,
                        "variance_over_eps_b": var / eb,
                        "dx_rel_change": ((dx[1] - dx[0]).norm() / dx[0].norm()).item(),
                        "dx_norm_a": dx[0].norm().item(), "dx_norm_b": dx[1].norm().item()})
    return {"eps": pd.DataFrame(rows), "eps_effect": pd.DataFrame(summary)}
