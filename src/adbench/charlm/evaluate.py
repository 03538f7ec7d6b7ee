"""Held-out scoring on its own code path: own encoding, own windows, own target shift, own loss.

Nothing here imports the training loop, so a data or loss bug there cannot hide in both.
"""

from __future__ import annotations

import io
import logging
import math
from collections import Counter

import numpy as np
import pandas as pd
import torch

from .model import CharGPT, GPTConfig

log = logging.getLogger(__name__)


def charset(corpus_text: str) -> str:
    """The corpus's sorted character set (the model's vocabulary, rebuilt independently)."""
    return "".join(sorted(set(corpus_text)))


def load_model(weights: bytes, corpus_text: str) -> CharGPT:
    """Rebuild the saved model; refuse weights whose vocabulary is not this corpus's."""
    ckpt = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
    if ckpt["vocab"] != charset(corpus_text):
        raise ValueError("checkpoint vocabulary differs from the corpus character set")
    model = CharGPT(GPTConfig(**ckpt["config"]))
    model.load_state_dict(ckpt["state_dict"])
    return model.eval()


# Measurement-level control (claims/bugs.py), never on in a real run: the evaluator's own target shift dropped,
# so it shares the unshifted run's bug.
EVAL_BUGS = ("evaluator shift dropped",)


def next_char_windows(ids: torch.Tensor, block_size: int, shift: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Non-overlapping windows (inputs ids[s:e], targets ids[s+1:e+1]): every character after
    the first is a target exactly once; the last window may be shorter. `shift` 0 only for EVAL_BUGS."""
    n = len(ids) - 1  # characters that have a predecessor
    return [(ids[s:min(s + block_size, n)], ids[s + shift:min(s + block_size, n) + shift])
            for s in range(0, n, block_size)]


@torch.no_grad()
def per_char_surprise(model: CharGPT, text: str, vocab: str, batch: int = 64, bug: str | None = None) -> np.ndarray:
    """-ln p(next character | its window so far) for text[1:], in nats, float64. `bug`: EVAL_BUGS (controls only)."""
    ids = torch.tensor([vocab.index(c) for c in text], dtype=torch.long)
    windows = next_char_windows(ids, model.cfg.block_size, 0 if bug == EVAL_BUGS[0] else 1)
    full = [w for w in windows if len(w[0]) == model.cfg.block_size]
    groups = [full[i:i + batch] for i in range(0, len(full), batch)] + [[w] for w in windows[len(full):]]
    out = []
    for k, group in enumerate(groups):
        x = torch.stack([w[0] for w in group])  # (B, T)
        y = torch.stack([w[1] for w in group])  # (B, T)
        logits = model(x).double()  # (B, T, vocab)
        logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
        out.append(-logp.gather(-1, y[..., None])[..., 0].reshape(-1))
        log.info("scored window group %d/%d", k + 1, len(groups))
    return torch.cat(out).numpy()


def uniform_loss(corpus_text: str) -> float:
    """ln of the corpus's character-set size: the loss of guessing every character equally."""
    return math.log(len(set(corpus_text)))


def unigram_loss(train_text: str, heldout_text: str, vocab: str) -> float:
    """Held-out cross-entropy of training-split character frequencies (add-one over `vocab`)."""
    counts = Counter(train_text)
    total = len(train_text) + len(vocab)
    return -sum(math.log((counts[c] + 1) / total) for c in heldout_text[1:]) / (len(heldout_text) - 1)


def measure_eval(weights: list[bytes], variants: list[str], corpus_text: str, train_text: str,
                 heldout_text: str, bug: str | None = None) -> dict:
    """Held-out loss of every variant and both baselines. `weights[i]` is the trained state of `variants[i]`
    (the rule lists both in the same order). The correct run's per-character surprise is charlm.proxy's.
    `bug`: a measurement-level control (EVAL_BUGS); None in every real run."""
    if len(weights) != len(variants):
        raise ValueError(f"{len(weights)} weight files for {len(variants)} variants {variants}")
    vocab = charset(corpus_text)
    rows = []
    for variant, blob in zip(variants, weights):
        s = per_char_surprise(load_model(blob, corpus_text), heldout_text, vocab, bug=bug)
        rows.append({"variant": variant, "heldout_loss": s.mean(), "characters": len(s)})
        log.info("%s held-out loss %.4f over %d characters", variant, s.mean(), len(s))
    baselines = pd.DataFrame([
        {"baseline": "uniform", "heldout_loss": uniform_loss(corpus_text), "characters": len(vocab)},
        {"baseline": "unigram", "heldout_loss": unigram_loss(train_text, heldout_text, vocab),
         "characters": len(heldout_text) - 1}])
    return {"heldout": pd.DataFrame(rows), "baselines": baselines}
