"""G5, G7, G8 and P9: one sequence of corpus text, one forward, one backward."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import torch
from transformers import GPT2Config

from ..tables import values_table
from .common import load_model, norm, token_nll
from .fp16 import autocast_table, precision_table, p9_values

log = logging.getLogger(__name__)

# Measurement-level controls (claims/bugs.py), never on in a real run: clip_grad_norm_ applied to each parameter
# tensor on its own instead of to the whole model; the logged clip norm read after clipping, not returned by it.
SEQUENCE_BUGS = ("clip per tensor", "norm read after clipping")


def measure_sequence(model: dict, text: str, seq_len: int, text_offset: int, worst_fraction: float,
                     extremes: int, context_tokens: int, clip_max_norm: float, starved_ratio: float,
                     runaway_ratio: float, loss_scale: float, device: str = "cpu", bug: str | None = None) -> dict:
    """Per-token surprise (G5), clipping (G7), per-block gradient norms (G8), 16-bit gradients (P9).
    `bug`: a measurement-level control (SEQUENCE_BUGS); None in every real run."""
    loaded = load_model(model, device)  # model: gpt2_model's record (model.json); text: the corpus
    net, tok, info = loaded.model, loaded.tokenizer, loaded.info
    ids = tok.encode(text[text_offset:])[:seq_len]
    if len(ids) < seq_len:
        raise ValueError(f"the corpus gives only {len(ids)} tokens after offset {text_offset}; need {seq_len}")
    x = torch.tensor([ids], device=next(net.parameters()).device)  # (1, T)
    embed = {}

    def keep(module, inputs, out):  # token-table lookup output (1, T, C): its gradient is the input side
        out.retain_grad()
        embed["out"] = out

    hook = net.transformer.wte.register_forward_hook(keep)
    log.info("forward on %d tokens (%s model)", seq_len, info["model_source"])
    logits = net(x, use_cache=False).logits  # (1, T, V)
    hook.remove()
    nll = token_nll(logits, x)[0]  # (T-1,) surprise in nats
    loss = nll.mean()
    net.zero_grad(set_to_none=True)
    log.info("backward")
    loss.backward()
    src = info["model_source"]
    tokens, g5 = _surprise(nll.detach().double().cpu().numpy(), ids, tok, worst_fraction, extremes, context_tokens)
    g7 = _clipping(net, embed["out"], x, clip_max_norm, bug)  # leaves the gradients clipped
    grads = g7.pop("_grads")  # unclipped gradients, flattened fp32
    blocks = _block_norms(net, g7["_unclipped"], starved_ratio, runaway_ratio)
    p9 = precision_table(grads, loss_scale)
    autocast = autocast_table(net, x, token_nll)  # CUDA only; after the fp32 gradients were used
    summary = {"tokens": seq_len, "predictions": len(nll), "loss": loss.item(),
               **{k: v for k, v in g7.items() if not k.startswith("_")}}
    return {
        "G5": {"values": _g5_values(g5, src), "surprise": tokens, "extremes": g5["extremes"],
               "summary": pd.DataFrame([g5["summary"]])},
        "G7": {"values": _g7_values(g7, src), "clipping": pd.DataFrame([summary])},
        "G8": {"values": _g8_values(blocks, starved_ratio, runaway_ratio, src), "blocks": blocks},
        "P9": {"values": p9_values(p9, src), "summary": p9, "autocast": autocast},
        "_meta": info,
    }


def _surprise(s: np.ndarray, ids: list[int], tok, worst_fraction: float, extremes: int, context: int):
    """Token table, summary statistics and the most/least surprising tokens with their context."""
    pieces = [tok.decode([i]) for i in ids]
    tokens = pd.DataFrame({"position": np.arange(1, len(ids)), "token": pieces[1:], "surprise_nats": s})
    k = max(1, math.ceil(worst_fraction * len(s)))
    worst = np.sort(s)[::-1][:k]  # the k largest surprises
    summary = {"mean_nats": s.mean(), "perplexity": math.exp(s.mean()), "median_nats": float(np.median(s)),
               "worst_tokens": k, "worst_share_pct": 100 * worst.sum() / s.sum(), "max_nats": s.max(), "min_nats": s.min(),
               "uniform_nats_gpt2_small": math.log(GPT2Config().vocab_size), "tokenizer_vocab": len(tok)}
    order = np.argsort(s, kind="stable")
    rows = []
    for kind, pos in ([("most", p) for p in order[::-1][:extremes]] + [("least", p) for p in order[:extremes]]):
        t = pos + 1  # index of the predicted token in ids
        rows.append({"kind": kind, "position": t, "token": pieces[t], "surprise_nats": s[pos],
                     "context": "".join(pieces[max(0, t - context):t])})
    return tokens, {"summary": summary, "extremes": pd.DataFrame(rows)}


def _clipping(net, embed_out: torch.Tensor, x: torch.Tensor, max_norm: float, bug: str | None = None) -> dict:
    """Total norm, its split (tied token table: input side / output side; rest), clip_grad_norm_'s effect.
    `bug`: SEQUENCE_BUGS (controls only)."""
    params = [p for p in net.parameters() if p.grad is not None]
    wte = net.transformer.wte.weight
    # input side of the tied table: the embedding lookup's gradient scattered back to rows, (V, C)
    input_side = torch.zeros_like(wte).index_add_(0, x[0], embed_out.grad[0])
    grads = torch.cat([p.grad.detach().flatten() for p in params])  # unclipped copy, fp32
    unclipped = {n: p.grad.detach().clone() for n, p in net.named_parameters() if p.grad is not None}
    total = norm(grads)
    # the same total in the library's own fp32 arithmetic, from the unclipped gradients
    total_fp32 = float(torch.nn.utils.get_total_norm([p.grad for p in params]))
    rest = math.sqrt(max(0.0, total ** 2 - norm(wte.grad) ** 2))
    if bug == SEQUENCE_BUGS[0]:  # each tensor shortened to the limit on its own: the whole gradient turns
        returned = math.sqrt(sum(float(torch.nn.utils.clip_grad_norm_(p, max_norm)) ** 2 for p in params))
    else:
        returned = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    if bug == SEQUENCE_BUGS[1]:
        returned = float(torch.nn.utils.get_total_norm([p.grad for p in params]))
    clipped = torch.cat([p.grad.detach().flatten() for p in params])
    cosine = float(torch.dot(clipped.double(), grads.double()) / (norm(clipped) * total))
    table = unclipped["transformer.wte.weight"]  # tied: input lookup + output layer, (V, C)
    return {"total_norm": total, "total_norm_fp32": total_fp32, "token_table_norm": norm(table),
            "token_table_input_side": norm(input_side), "token_table_output_side": norm(table - input_side),
            "rest_norm": rest, "clip_return": returned, "max_norm": max_norm, "clipped_norm": norm(clipped),
            "cosine_clipped_unclipped": cosine, "_grads": grads, "_unclipped": unclipped}


def _block_norms(net, grads: dict, starved: float, runaway: float) -> pd.DataFrame:
    """Gradient norm of every transformer block (all its parameters) and its ratio to the median."""
    n = len(net.transformer.h)
    sq = [sum(float(g.double().pow(2).sum()) for name, g in grads.items() if name.startswith(f"transformer.h.{i}."))
          for i in range(n)]
    df = pd.DataFrame({"block": range(n), "grad_norm": np.sqrt(sq)})
    df["over_median"] = df.grad_norm / df.grad_norm.median()
    df["starved"] = df.over_median < starved
    df["runaway"] = df.over_median > runaway
    return df


def _g5_values(g5: dict, src: str) -> pd.DataFrame:
    s = g5["summary"]
    v = values_table("G5", [("mean_nats", s["mean_nats"]), ("perplexity", s["perplexity"]), ("median_nats", s["median_nats"]),
                            ("worst_tenth_share_pct", s["worst_share_pct"]), ("max_nats", s["max_nats"]),
                            ("min_nats", s["min_nats"])], model_source=src)
    u = values_table("G5", [("uniform_nats", s["uniform_nats_gpt2_small"])],
                     {"uniform_nats": f"ln of GPT-2 small's vocabulary; the tokenizer in use has {s['tokenizer_vocab']} tokens"})
    return pd.concat([v, u], ignore_index=True)


CLIP_RTOL = 1e-5  # 1 - cosine allowed for "direction unchanged" (float64 of fp32-scaled gradients)
# fp32 sums of ~1e8 squares vs a float64 sum: a loose sanity bound, not the property itself
FP32_SUM_RTOL = 1e-3


def _g7_values(g7: dict, src: str) -> pd.DataFrame:
    v = values_table("G7", [(q, g7[q]) for q in ("total_norm", "token_table_input_side", "clip_return", "clipped_norm")],
                     model_source=src)
    # clip_grad_norm_ must return the unclipped total: bit for bit the total norm of the unclipped gradients in
    # torch's own fp32 arithmetic, and near the float64 total (fp32 rounding of the sum only)
    gap = abs(g7["clip_return"] - g7["total_norm"]) / g7["total_norm"]
    same = g7["clip_return"] == g7["total_norm_fp32"] and gap <= FP32_SUM_RTOL
    turned = 1 - g7["cosine_clipped_unclipped"]  # "Clipping shortens the gradient, never turns it"
    prop = values_table("G7", [("clip_return_equals_unclipped_total", "true" if same else "false"),
                               ("clip_direction_unchanged", "true" if turned <= CLIP_RTOL else "false")],
                        {"clip_return_equals_unclipped_total":
                         f"return {'==' if g7['clip_return'] == g7['total_norm_fp32'] else '!='} fp32 total of the "
                         f"unclipped gradients; relative gap to the float64 total {gap:.1e} (allowed {FP32_SUM_RTOL:g})",
                         "clip_direction_unchanged": f"1 - cosine(clipped, unclipped) = {turned:.1e} (allowed {CLIP_RTOL:g})"})
    return pd.concat([v, prop], ignore_index=True)


def _g8_values(blocks: pd.DataFrame, starved: float, runaway: float, src: str) -> pd.DataFrame:
    bad = blocks[blocks.starved | blocks.runaway]
    verdict = ("no block\u2019s gradient was starved or runaway" if bad.empty else
               "blocks " + ", ".join(map(str, bad.block)) + " starved or runaway")
    text = (f"{verdict} (block norm / median from {blocks.over_median.min():.3g} to {blocks.over_median.max():.3g}; "
            f"thresholds {starved:g} and {runaway:g})")
    return values_table("G8", [("verdict", text)], model_source=src)
