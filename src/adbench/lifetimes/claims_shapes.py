"""The L family's activation-shape conclusions (L7): what eager GPT-2 attention saves, fitted without sorting the
saved tensors by shape, against the shape formulas of shapes.py. Imported by lifetimes/claims.py."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from ..claims import Edge, Flip, Move, at_least, at_most, flag, g, judged, relation, sources
from ..claims.bugs import Bug

sources("L7/sweep", {"seq_len": "input", "batch": "input", "residual_state_bytes": "shape formula B*T*D*s",
                     "all_residual_states_bytes": "shape formula B*T*D*s",
                     "scores_per_layer_bytes": "shape formula B*H*T*T*s",
                     "scores_all_layers_bytes": "shape formula B*H*T*T*s"})
sources("L7/hooks", {"kind": "input", "seq_len": "input", "batch": "input", "hidden": "input", "heads": "input",
                     "tensors": "saved-tensor hook (eager attention)", "bytes": "saved-tensor hook (eager attention)"})
HOOK = "saved-tensor hook, every non-weight tensor (eager attention)"
sources("L7/saved", {"batch": "input", "seq_len": "input", "saves": HOOK, "activation_bytes": HOOK,
                     "parameter_save_bytes": "saved-tensor hook, weight views", "parameter_bytes": "layer.parameters()"})

# "Dominates" at the longest length: the fitted T^2 term is more than half of the fitted bytes there.
DOMINATES = 0.5
# The fit a + bT + cT^2 describes the hooked bytes: every length within 1 % (a T^3 or T log T term would not be).
FIT_REL = 0.01


def _series(t, batch: int | None = None) -> pd.DataFrame:
    """L7/saved at one batch (the smallest when None), by sequence length."""
    d = t["L7/saved"]
    b = int(d.batch.min()) if batch is None else batch
    return d[d.batch == b].sort_values("seq_len")


def quadratic_fit(seq: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Least-squares (a, b, c) of bytes = a + b T + c T^2 (needs three lengths or more)."""
    if len(np.unique(seq)) < 3:
        raise ValueError(f"L7/saved holds {len(np.unique(seq))} sequence lengths; a + bT + cT^2 needs three: "
                         "give lifetimes.shapes.hooks.seq_lens three or more")
    return np.polynomial.polynomial.polyfit(seq.astype(float), nbytes.astype(float), 2)


def _score_matrix_per_t2(t, batch: int) -> float:
    """Bytes per T^2 of one (B, H, T, T) score matrix, from the shape formula's sweep (at its batch, scaled to B)."""
    s = t["L7/sweep"].iloc[-1]
    return float(s.scores_per_layer_bytes) / float(s.seq_len) ** 2 / float(s.batch) * batch


def _linear_tail(t) -> float:
    """The longest length's bytes had they grown only linearly from the length before it: the claim's contradiction."""
    d = _series(t)
    return float(d.activation_bytes.iloc[-2] * d.seq_len.iloc[-1] / d.seq_len.iloc[-2])


@relation("L7/saved", "L7/sweep",
          edge=Flip("L7/saved", lambda t: {"batch": int(_series(t).batch.iloc[0]), "seq_len": int(_series(t).seq_len.max())},
                    "activation_bytes", holding=lambda t: float(_series(t).activation_bytes.iloc[-1]),
                    failing=_linear_tail))
def saved_bytes_quadratic_in_length(t):
    """Every non-weight tensor eager attention saves, summed without sorting by shape, fitted a + bT + cT^2 over
    the hooked lengths: the T^2 coefficient is at least one (B, H, T, T) score matrix of the shape formula, and the
    T^2 term is most of the bytes at the longest length."""
    d = _series(t)
    seq, nbytes = d.seq_len.to_numpy(float), d.activation_bytes.to_numpy(float)
    a, b, c = quadratic_fit(seq, nbytes)
    batch, longest = int(d.batch.iloc[0]), seq[-1]
    unit = _score_matrix_per_t2(t, batch)
    fitted = a + b * seq + c * seq ** 2
    worst = float(np.max(np.abs(fitted - nbytes) / nbytes))
    share = c * longest ** 2 / fitted[-1]
    return judged(f"hooked non-weight bytes at T = {', '.join(f'{int(x)}' for x in seq)} (batch {batch}): "
                  f"{', '.join(f'{int(x)}' for x in nbytes)}; fit a = {g(a)}, b = {g(b)} per token, c = {g(c)} per "
                  f"token^2 ({g(c / unit)} score matrices of {g(unit)} bytes per T^2 each); at T = {int(longest)} the "
                  f"T^2 term is {g(100 * share)} % of the fitted bytes; largest misfit {g(100 * worst)} %",
                  at_least(c / unit, 1.0, "T^2 coefficient, in (B, H, T, T) score matrices: at least one",
                           "matrices", 0.1),
                  at_least(share, DOMINATES, f"T^2 term's share of the bytes at T = {int(longest)}: over a half",
                           "fraction", 0.05, strict=True),
                  at_most(worst, FIT_REL, "a + bT + cT^2 describes every length, within 1 %", "fraction", FIT_REL / 4))


def _grown(t) -> tuple[int, int]:
    """(the larger batch, the shortest length): the cell the batch half of the claim turns on."""
    d = t["L7/saved"]
    return int(d.batch.max()), int(d.seq_len.min())


def _small_batch_bytes(t) -> float:
    return float(_series(t).activation_bytes.iloc[0])


@relation("L7/saved", single=True, edge=Edge(
    Move("L7/saved", lambda t: dict(zip(("batch", "seq_len"), _grown(t))), "activation_bytes",
         lambda t: _small_batch_bytes(t) + 1),
    Move("L7/saved", lambda t: dict(zip(("batch", "seq_len"), _grown(t))), "activation_bytes", _small_batch_bytes)))
def params_fixed_activations_grow(t):
    """At every batch and length the layer's parameter bytes, and the weight views it saves, are the same; the
    saved activation bytes rise with the length at each batch and with the batch at each length."""
    d = t["L7/saved"]
    by_batch = {b: s.sort_values("seq_len") for b, s in d.groupby("batch")}
    if len(by_batch) < 2:
        raise ValueError("L7/saved holds one batch size: set lifetimes.shapes.hooks.grown_batch to a batch other than "
                         "lifetimes.shapes.hooks.batch")
    by_len = {n: s.sort_values("batch") for n, s in d.groupby("seq_len")}
    rising = lambda s: len(s) > 1 and bool(np.all(np.diff(s.activation_bytes.to_numpy(float)) > 0))  # noqa: E731
    return judged(f"parameter bytes {sorted(set(d.parameter_bytes))}, weight views saved {sorted(set(d.parameter_save_bytes))}; "
                  + "; ".join(f"batch {b}: activations {s.activation_bytes.tolist()} over T = {s.seq_len.tolist()}"
                              for b, s in by_batch.items()),
                  flag(d.parameter_bytes.nunique() == 1, "the parameter bytes do not change"),
                  flag(d.parameter_save_bytes.nunique() == 1, "the saved weight views do not change"),
                  *(flag(rising(s), f"batch {b}: activation bytes rise with every longer sequence")
                    for b, s in by_batch.items()),
                  *(flag(rising(s), f"T = {n}: activation bytes rise with the batch") for n, s in by_len.items()))


@lru_cache(maxsize=None)  # both bugs compare with the same correct run
def _measure_saved(bug: str | None) -> dict[str, pd.DataFrame]:
    """The real L7 hook measurement at three short lengths (the T^2 term already dominates at 512)."""
    from .attention_saved import attention_saved

    return {"L7/saved": attention_saved([5, 64, 512], 1, 0, grown_batch=2, bug=bug)["saved"]}


BUGS = [Bug("fused attention kernel", "transformers' SDPA attention measured in place of the eager one",
            ("saved_bytes_quadratic_in_length",), _measure_saved),
        Bug("batch ignored", "the hooked input built with batch 1 whatever the batch asked",
            ("params_fixed_activations_grow",), _measure_saved)]
