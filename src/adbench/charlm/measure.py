"""Job-level C1 functions: train one variant, score all on held-out text, summarize against the documents."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ..tables import values_table
from . import evaluate
from .train import train_variant

log = logging.getLogger(__name__)


def measure_train(variant: str, corpus_text: str, train_text: str, **cfg) -> dict:
    """Train `variant` on the training split; vocabulary is the corpus's sorted character set."""
    return train_variant(variant, train_text, "".join(sorted(set(corpus_text))), **cfg)


def surprise_stats(s: np.ndarray, text: str, context: int, n_extremes: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean/median/worst-tenth share of per-character surprise, and the extreme characters in context."""
    worst = np.sort(s)[::-1][: max(1, len(s) // 10)]
    stats = pd.DataFrame([{"characters": len(s), "mean_nats": s.mean(), "median_nats": float(np.median(s)),
                           "perplexity": float(np.exp(s.mean())),
                           "worst_tenth_share": worst.sum() / s.sum()}])
    order = np.argsort(s, kind="stable")  # s[i] scores text[i + 1]
    rows = []
    for kind, picks in (("most", order[::-1][:n_extremes]), ("least", order[:n_extremes])):
        for rank, i in enumerate(picks, 1):
            pos = int(i) + 1
            rows.append({"kind": kind, "rank": rank, "position": pos, "character": repr(text[pos]),
                         "surprise_nats": float(s[i]), "context": repr(text[max(0, pos - context):pos])})
    return stats, pd.DataFrame(rows)


def measure_eval(weights: dict[str, bytes], corpus_text: str, train_text: str, heldout_text: str,
                 surprise_context: int = 24, surprise_extremes: int = 8) -> dict:
    """Held-out loss of every variant, both baselines, and the correct model's per-character surprise."""
    vocab = evaluate.charset(corpus_text)
    rows, surprise = [], None
    for variant, blob in weights.items():
        s = evaluate.per_char_surprise(evaluate.load_model(blob, corpus_text), heldout_text, vocab)
        rows.append({"variant": variant, "heldout_loss": s.mean(), "characters": len(s)})
        log.info("%s held-out loss %.4f over %d characters", variant, s.mean(), len(s))
        if variant == "correct":
            surprise = s
    baselines = pd.DataFrame([
        {"baseline": "uniform", "heldout_loss": evaluate.uniform_loss(corpus_text), "characters": len(vocab)},
        {"baseline": "unigram", "heldout_loss": evaluate.unigram_loss(train_text, heldout_text, vocab),
         "characters": len(heldout_text) - 1}])
    out = {"heldout": pd.DataFrame(rows), "baselines": baselines}
    if surprise is not None:
        out["surprise"], out["surprise_extremes"] = surprise_stats(
            surprise, heldout_text, surprise_context, surprise_extremes)
    return out


def dashboard(final: float, correct: float, uniform: float) -> str:
    """What someone watching only the training loss would conclude from the final value."""
    if final > uniform:
        return "visible: training loss ends above a uniform guess"
    if final < 0.25 * correct:
        return "visible, but looks like success: training loss far below the correct run"
    if abs(final - correct) <= 0.15 * correct:
        return "invisible: a normal-looking falling curve"
    return "ambiguous: a falling curve, somewhat off the correct run"


def measure_summary(heldout: pd.DataFrame, baselines: pd.DataFrame, curves: pd.DataFrame,
                    grad_norms: pd.DataFrame, final_window: int, early_step: int) -> dict:
    """The C1 values rows and the variant table (final training loss, held-out loss, dashboard view)."""
    held = heldout.set_index("variant")["heldout_loss"]
    base = baselines.set_index("baseline")["heldout_loss"]
    final = curves.groupby("variant")["train_loss"].apply(lambda s: s.tail(final_window).mean())
    pos = grad_norms[grad_norms.group == "position_table"].groupby("variant")["grad_norm"]
    table = pd.DataFrame([{"variant": v, "final_train_loss": final[v], "heldout_loss": held[v],
                           "heldout_vs_correct_pct": 100 * (held[v] / held["correct"] - 1),
                           "position_grad_min": pos.min()[v], "position_grad_max": pos.max()[v],
                           "loss_only_dashboard": "reference run" if v == "correct"
                           else dashboard(final[v], final["correct"], base["uniform"])}
                          for v in held.index])
    nzg = curves[curves.variant == "no_zero_grad"].set_index("step")["train_loss"]
    items = [("unigram_heldout_loss", base["unigram"]), ("correct_heldout_loss", held["correct"]),
             ("no_zero_grad_train_loss_early", nzg[early_step]),
             ("no_zero_grad_final_train_loss", final["no_zero_grad"]),
             ("charset_size", int(baselines.set_index("baseline").loc["uniform", "characters"])), ("uniform_loss", base["uniform"]),
             ("unshifted_final_train_loss", final["unshifted_targets"]),
             ("unshifted_heldout_loss", held["unshifted_targets"]),
             ("loss_x40_heldout_loss", held["loss_x40"]),
             ("detached_positions_heldout_loss", held["detached_positions"]),
             ("detached_vs_correct_pct", 100 * (held["detached_positions"] / held["correct"] - 1))]
    notes = {q: "different corpus (CPython docs, not the blog), model size and seed" for q, _ in items}
    notes["no_zero_grad_train_loss_early"] = f"training loss of the single batch at step {early_step}"
    notes["charset_size"] = "this corpus's character set, not the blog's"
    return {"values": values_table("C1", items, notes), "summary": table, "curves": curves,
            "grad_norms": grad_norms}
