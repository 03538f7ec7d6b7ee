"""L3's language-model case: ranks holding as many sequences but different numbers of valid (non-padding) tokens.

Each simulated rank holds `sequences` rows of `length` token positions of L3's float64 linear layer; its first
`valid[r]` positions (row-major) are real tokens, the rest padding. A token's loss is its squared error averaged over
the outputs. The objective is the mean over every valid token of every rank; averaging the ranks' mean token losses
weights ranks, not tokens.
"""

from __future__ import annotations

import pandas as pd
import torch

from .problem import F64, _grads, _problem

TOKEN_BUGS = ("padding counted in the global token count",)  # a measurement-level control (claims/bugs.py)


def _masked_grad(model, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor, divisor: float) -> torch.Tensor:
    """Gradient of sum over valid tokens of their loss / divisor, on a cleared model."""
    model.zero_grad(set_to_none=True)
    per_token = (model(x) - y).pow(2).mean(dim=-1)  # (tokens,)
    ((per_token * mask).sum() / divisor).backward()
    return _grads(model)


def token_table(sequences: int, length: int, valid: list[int], in_features: int, out_features: int, seed: int,
                bug: str | None = None) -> pd.DataFrame:
    """`tokens`: the average of rank token means and the all-reduced numerator over the all-reduced valid-token
    count, each against one process's mean over every valid token. `bug`: a measurement-level control (TOKEN_BUGS)."""
    per_rank = sequences * length
    if any(not 0 < v <= per_rank for v in valid) or len(valid) < 2:
        raise ValueError(f"config key 'lifetimes.tokens.valid' = {valid}: two or more ranks, each with 1 to "
                         f"sequences x length = {per_rank} valid tokens")
    model, x, y = _problem(per_rank * len(valid), in_features, out_features, seed)  # (ranks*S*T, in), (.., out)
    mask = torch.cat([(torch.arange(per_rank) < v).to(F64) for v in valid])  # 1 on valid tokens, 0 on padding
    full = _masked_grad(model, x, y, mask, float(mask.sum()))
    sl = [slice(r * per_rank, (r + 1) * per_rank) for r in range(len(valid))]
    rank_means = [_masked_grad(model, x[s], y[s], mask[s], float(v)) for s, v in zip(sl, valid)]
    numerators = [_masked_grad(model, x[s], y[s], mask[s], 1.0) for s in sl]
    count = float(per_rank * len(valid) if bug == TOKEN_BUGS[0] else sum(valid))
    reductions = (("average of rank token means", len(valid), sum(rank_means) / len(valid)),
                  ("summed token-loss numerators / summed valid tokens", count, sum(numerators) / count))
    return pd.DataFrame([{"valid_tokens": "+".join(map(str, valid)), "tokens_per_rank": per_rank, "reduction": name,
                          "divisor": div, "max_abs_diff_vs_single_process": (g - full).abs().max().item(),
                          "grad_norm": g.norm().item(), "single_process_grad_norm": full.norm().item()}
                         for name, div, g in reductions])
