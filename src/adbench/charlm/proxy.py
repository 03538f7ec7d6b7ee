"""The trained correct character model as a stand-in for the GPT-2 probes that need trained weights.

GPT-2's pretrained weights are often not on the machine (the G jobs then run a random-init GPT-2, on which
G2's, G3's and G5's conclusions say nothing). The character model C1 trains here is a small pre-norm GPT of
the same build, trained on this run's corpus, so the same probes run on it: per-character surprise over
the held-out text (G5), the residual-state gradient norms (G2) and the q/k/v split of each attention
projection's gradient (G3) for one controlled target. The claims judged on these tables are `proxy` claims,
counted apart from the documents' own model.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import torch

from .evaluate import charset, load_model, per_char_surprise
from .model import CharGPT

log = logging.getLogger(__name__)


def surprise_stats(s: np.ndarray, text: str, vocab_size: int, context: int,
                   n_extremes: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean/median/worst-tenth share of per-character surprise beside the uniform guess ln V, and the
    extreme characters in context (s[i] scores text[i + 1])."""
    worst = np.sort(s)[::-1][: max(1, len(s) // 10)]
    stats = pd.DataFrame([{"characters": len(s), "mean_nats": s.mean(), "median_nats": float(np.median(s)),
                           "perplexity": float(np.exp(s.mean())), "worst_tenth_share": worst.sum() / s.sum(),
                           "vocab_size": vocab_size, "uniform_nats": math.log(vocab_size)}])
    order = np.argsort(s, kind="stable")
    rows = []
    for kind, picks in (("most", order[::-1][:n_extremes]), ("least", order[:n_extremes])):
        for rank, i in enumerate(picks, 1):
            pos = int(i) + 1
            rows.append({"kind": kind, "rank": rank, "position": pos, "character": repr(text[pos]),
                         "surprise_nats": float(s[i]), "context": repr(text[max(0, pos - context):pos])})
    return stats, pd.DataFrame(rows)


def residual_states(model: CharGPT) -> tuple[list[torch.Tensor], list[str], list]:
    """Hooks that keep the residual states as GPT-2's hidden_states lists them: the block input (token plus
    position vectors), each block's output but the last, and the last one after the final norm."""
    states, names, hooks = [], [], []

    def keep(name):
        def hook(module, inputs, output=None):
            t = inputs[0] if output is None else output
            t.retain_grad()
            states.append(t)
            names.append(name)
        return hook

    blocks = model.blocks
    hooks.append(blocks[0].register_forward_pre_hook(keep("token + position")))
    hooks += [b.register_forward_hook(keep(f"block {i}")) for i, b in enumerate(blocks) if i < len(blocks) - 1]
    hooks.append(model.ln_f.register_forward_hook(keep(f"block {len(blocks) - 1}, final norm")))
    return states, names, hooks


def one_target_grads(model: CharGPT, ids: torch.Tensor) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Backward from -ln p(ids[-1] | ids[:-1]) at the last position (G1's controlled target, here a held-out
    character): the last-position gradient norm at every residual state (G2) and the Frobenius norms of the
    q | k | v row blocks of every attention projection's weight gradient (G3)."""
    x, target = ids[None, :-1], int(ids[-1])
    model.zero_grad(set_to_none=True)
    states, names, hooks = residual_states(model)
    try:
        logits = model(x)  # (1, T, V)
    finally:
        for h in hooks:
            h.remove()
    nll = -torch.log_softmax(logits[0, -1].double(), dim=-1)[target]
    nll.backward()
    g2 = pd.DataFrame({"state": range(len(states)), "after": names,
                       "grad_norm_last_token": [float(h.grad[0, -1].double().norm()) for h in states]})
    rows = []
    for i, block in enumerate(model.blocks):
        g = block.attn.qkv.weight.grad.double()  # nn.Linear layout (3C, C): output rows are q | k | v
        q, k, v = g.split(g.shape[0] // 3, dim=0)
        rows.append({"layer": i, "q": float(q.norm()), "k": float(k.norm()), "v": float(v.norm())})
    return g2, pd.DataFrame(rows), float(nll.detach())


def measure_proxy(weights: bytes, corpus_text: str, heldout_text: str, surprise_context: int = 24,
                  surprise_extremes: int = 8) -> dict:
    """rule charlm_proxy: the correct run's per-character surprise on the held-out text, and G2/G3's probes
    for its first held-out window (block_size characters) predicting the character that follows."""
    vocab = charset(corpus_text)
    model = load_model(weights, corpus_text)
    s = per_char_surprise(model, heldout_text, vocab)
    surprise, extremes = surprise_stats(s, heldout_text, len(vocab), surprise_context, surprise_extremes)
    n = model.cfg.block_size
    ids = torch.tensor([vocab.index(c) for c in heldout_text[: n + 1]], dtype=torch.long)
    states, qkv, nll = one_target_grads(model, ids)
    log.info("held-out surprise %.4f nats over %d characters; one-target nll %.4f", s.mean(), len(s), nll)
    return {"surprise": surprise, "surprise_extremes": extremes, "states": states, "qkv": qkv,
            "_meta": {"target_window": n, "target_character": repr(heldout_text[n]), "target_nll": nll}}
