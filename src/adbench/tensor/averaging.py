"""T2: per-token against per-sequence averaging of the same examples (doc 000: "two runs can use the same
examples and still have different gradient magnitudes if one averages per token and another averages per sequence").

One seeded stream of tokens through a shared float64 weight W (logits = x W), cut into sequences: once at the
configured token counts (unequal lengths), once into as many sequences of one equal length (the control, where
the two averages are the same number). The per-token mean divides the summed loss by every token; the
per-sequence mean averages each sequence's own token mean.
"""

from __future__ import annotations

import pandas as pd
import torch
import torch.nn.functional as F

F64 = torch.float64
FLATTENED = "flattened sequence mean"   # the per-sequence mean computed over the flattened batch: a token mean


def _grad_norm(x: torch.Tensor, y: torch.Tensor, w0: torch.Tensor, lengths: list[int], per: str,
               bug: str | None) -> float:
    """||dL/dW|| of the batch's loss averaged per token or per sequence."""
    w = w0.clone().requires_grad_()
    logits = x @ w                                                   # (N, vocab)
    if per == "token" or bug == FLATTENED:
        loss = F.cross_entropy(logits, y)
    else:
        cuts = torch.split(torch.arange(len(y)), lengths)
        loss = torch.stack([F.cross_entropy(logits[c], y[c]) for c in cuts]).mean()
    loss.backward()
    return w.grad.norm().item()


def token_vs_sequence(vocab: int, tokens: list[int], padded: int, width: int, seed: int,
                      bug: str | None = None) -> pd.DataFrame:
    """One row per batch (unequal lengths: `tokens`; equal: as many sequences of max(tokens)): the gradient
    norms of the per-token and per-sequence means. `padded` is tensor.softmax.reduction's, unused here."""
    del padded
    equal = [max(tokens)] * len(tokens)
    gen = torch.Generator().manual_seed(seed)
    n = max(sum(tokens), sum(equal))
    x = torch.randn(n, width, dtype=F64, generator=gen)              # (N, width)
    w0 = torch.randn(width, vocab, dtype=F64, generator=gen)         # (width, vocab)
    y = torch.randint(vocab, (n,), generator=gen)                    # (N,)
    rows = []
    for lengths in (list(tokens), equal):
        m = sum(lengths)
        norms = {per: _grad_norm(x[:m], y[:m], w0, lengths, per, bug) for per in ("token", "sequence")}
        rows.append({"lengths": "+".join(map(str, lengths)), "equal_lengths": len(set(lengths)) == 1,
                     "sequences": len(lengths), "tokens": m, "grad_norm_token_mean": norms["token"],
                     "grad_norm_sequence_mean": norms["sequence"],
                     "token_over_sequence": norms["token"] / norms["sequence"]})
    return pd.DataFrame(rows)
