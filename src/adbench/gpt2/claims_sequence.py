"""G5, G7 and G8's conclusions, tested: one corpus sequence's per-token surprise (with its proxy twins on the
character model C1 trains), clipping, and per-block gradient norms. Listed in
family.py's `claims`, which the registry reads."""

from __future__ import annotations

import math
import numpy as np

from ..claims import (EPS32, EPS64, NEARLY_ALL, Edge, Flip, Move, Moves, at_least, at_most, flag, g, judged, near,
                      relation, same_float, sources, times_at_least, ulps_away)

_SURPRISE = "GPT-2 forward (per-token surprise)"
sources("G5/summary", {**{c: _SURPRISE for c in ("mean_nats", "perplexity", "median_nats", "worst_tokens",
                                                 "worst_share_pct", "max_nats", "min_nats")},
                       "uniform_nats_gpt2_small": "ln V of GPT-2 small's vocabulary", "tokenizer_vocab": "input"})
_NORM64 = "float64 norm of the unclipped gradients"
sources("G7/clipping", {"tokens": "input", "predictions": "input", "loss": "GPT-2 forward", "total_norm": _NORM64,
                        "total_norm_fp32": "torch.nn.utils.get_total_norm (fp32)",
                        "token_table_norm": "token table gradient",
                        "token_table_input_side": "embedding lookup's output gradient (hook)",
                        "token_table_output_side": "token table gradient, embedding lookup's output gradient (hook)",
                        "rest_norm": f"{_NORM64}, token table gradient", "clip_return": "clip_grad_norm_'s return",
                        "max_norm": "input", "clipped_norm": "norm of the clipped gradients",
                        "cosine_clipped_unclipped": f"norm of the clipped gradients, {_NORM64}"})
sources("G8/blocks", {"block": "input", **{c: "GPT-2 backward (per-block gradient norms)"
                                           for c in ("grad_norm", "over_median", "starved", "runaway")}})
# the proxy twins' table: the trained character model's surprise (charlm/proxy.py)
_CHAR = "character model on held-out text (per-character surprise)"
sources("C1/surprise", {**{c: _CHAR for c in ("mean_nats", "median_nats", "perplexity", "worst_tenth_share")},
                        "characters": "input", "vocab_size": "input", "uniform_nats": "ln V of the model's vocabulary"})


# ---- G5 -----------------------------------------------------------------------------------------------
@relation("G5/summary", definition=True,
          edge=Flip("G5/summary", {}, "perplexity", holding=lambda t: math.exp(t["G5/summary"].mean_nats.iloc[0]),
                    failing=lambda t: ulps_away(math.exp(t["G5/summary"].mean_nats.iloc[0]), 256)))
def perplexity_is_exp_mean(t):
    """The job writes perplexity = exp(mean) (gpt2/sequence.py): shown, not evidence."""
    s = t["G5/summary"].iloc[0]
    return judged(f"perplexity {g(s.perplexity)} vs e^{g(s.mean_nats)}",
                  same_float(s.perplexity, math.exp(s.mean_nats), 64, EPS64, "perplexity vs exp(mean surprise)"))


FAR_BELOW = 0.5  # "far below" the uniform guess: at most half of ln V (the documents' G5 mean_nats is about a third)


def _beats_uniform(mean: float, uniform: float, band: float, what: str):
    return judged(f"{what}: mean surprise {g(mean)} vs the uniform guess {g(uniform)} nats ({g(mean / uniform)} of it)",
                  at_most(mean / uniform, FAR_BELOW, f"mean surprise over ln V, at most {FAR_BELOW:g}", "of ln V", band))


def _uniform_flip(table: str, col: str) -> Flip:
    return Flip(table, {}, "mean_nats", holding=lambda t: 0.3 * t[table][col].iloc[0],
                failing=lambda t: 0.7 * t[table][col].iloc[0])


@relation("G5/summary", edge=_uniform_flip("G5/summary", "uniform_nats_gpt2_small"))
def model_beats_uniform_guess(t):
    s = t["G5/summary"].iloc[0]
    return _beats_uniform(s.mean_nats, s.uniform_nats_gpt2_small, 0.02, "GPT-2")


@relation("C1/surprise", edge=_uniform_flip("C1/surprise", "uniform_nats"))
def model_beats_uniform_guess_proxy(t):
    s = t["C1/surprise"].iloc[0]
    return _beats_uniform(s.mean_nats, s.uniform_nats, 0.05, "character model")


WORST_SHARE = 0.2  # the worst tenth carries at least twice its proportional share (the documents: 28 %)


def _skewed(share: float, mean: float, median: float, share_band: float, what: str):
    return judged(f"{what}: median {g(median)} vs mean {g(mean)} nats; the worst tenth carries {g(100 * share)} % "
                  "of the loss",
                  at_least(share, WORST_SHARE, f"worst tenth's share of the loss, at least {WORST_SHARE:g}",
                           "of the loss", share_band),
                  at_least(mean - median, 0, "mean above the median", "nats", 0.05, strict=True))


def _skew_edge(table: str, col: str, scale: float) -> Edge:
    """The share just above / below its bound, the median moved well below the mean (on random-init weights
    both checks fail, so the inside control moves both cells)."""
    median = Move(table, {}, "median_nats", lambda t: 0.8 * float(t[table].mean_nats.iloc[0]))
    return Edge(Moves((median, Move(table, {}, col, scale * (WORST_SHARE + 0.005)))),
                Moves((median, Move(table, {}, col, scale * (WORST_SHARE - 0.005)))))


@relation("G5/summary", single=True, edge=_skew_edge("G5/summary", "worst_share_pct", 100.0))
def surprise_is_skewed(t):
    s = t["G5/summary"].iloc[0]
    return _skewed(s.worst_share_pct / 100, s.mean_nats, s.median_nats, 0.01, "GPT-2")


@relation("C1/surprise", single=True, edge=_skew_edge("C1/surprise", "worst_tenth_share", 1.0))
def surprise_is_skewed_proxy(t):
    s = t["C1/surprise"].iloc[0]
    return _skewed(s.worst_tenth_share, s.mean_nats, s.median_nats, 0.01, "character model")


# ---- G7, G8 ---------------------------------------------------------------------------------------------
def _clip(t):
    return t["G7/clipping"].iloc[0]


@relation("G7/clipping", edge=Edge(Move("G7/clipping", {}, "clip_return", lambda t: _clip(t).total_norm_fp32),
                                   Move("G7/clipping", {}, "clip_return",
                                        lambda t: np.nextafter(np.float32(_clip(t).total_norm_fp32), np.float32(0)))))
def clip_returns_unclipped_total(t):
    r = _clip(t)
    return judged(f"clip_grad_norm_ returned {float(r.clip_return)!r}; fp32 total of the unclipped gradients "
                  f"{float(r.total_norm_fp32)!r}", flag(r.clip_return == r.total_norm_fp32, "the same float32 total"))


CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s clip_coef = max_norm / (total_norm + 1e-6)


@relation("G7/clipping", edge=Flip("G7/clipping", {}, "cosine_clipped_unclipped", holding=1.0,
                                   failing=1 - 4 * EPS32))
def clipping_shortens_never_turns(t):
    r = _clip(t)
    # fp32 sums over the whole model: twice the measured fp32-vs-fp64 gap of the total, plus one ulp, plus the
    # shortfall clip_grad_norm_'s own eps makes (it scales by max_norm / (total + eps)): small totals show it
    slack = (2 * abs(r.total_norm - r.total_norm_fp32) / r.total_norm + EPS32 + CLIP_EPS / r.total_norm) * r.max_norm
    turned = 1 - r.cosine_clipped_unclipped
    return judged(f"total {g(r.total_norm)} -> clipped {r.clipped_norm:.7g} (limit {r.max_norm:g}, slack {g(slack)}); "
                  f"1 - cosine = {g(turned)}",
                  at_least(r.total_norm / r.max_norm, 1, "unclipped total over the limit (clipping acts)", "x limit",
                           0.1, strict=True),
                  near(r.clipped_norm, r.max_norm, slack, "clipped length vs the limit", "gradient norm", slack / 4),
                  at_most(turned, EPS32, "1 - cosine(clipped, unclipped), at most float32 eps", "1 - cosine",
                          EPS32 / 4))


SMALL = 0.1  # a "small" input side: a tenth of the table's ("nearly all" of the squared norm: NEARLY_ALL)


def _table(t):
    r = _clip(t)
    return r, (r.token_table_norm / r.total_norm) ** 2, r.token_table_input_side / r.token_table_norm


@relation("G7/clipping", edge=Edge(
    Moves((Move("G7/clipping", {}, "token_table_input_side", lambda t: 0.05 * _clip(t).token_table_norm),
           Move("G7/clipping", {}, "total_norm", lambda t: _clip(t).token_table_norm / math.sqrt(NEARLY_ALL + 0.005)))),
    Moves((Move("G7/clipping", {}, "token_table_input_side", lambda t: 0.05 * _clip(t).token_table_norm),
           Move("G7/clipping", {}, "total_norm", lambda t: _clip(t).token_table_norm / math.sqrt(NEARLY_ALL - 0.005))))))
def token_table_dominates_gradient(t):
    """Squared norms add over disjoint parameters: total^2 = table^2 + rest^2, so the table's share of the
    gradient is table^2 / total^2."""
    r, share, inside = _table(t)
    return judged(f"token table {g(r.token_table_norm)} of the total {g(r.total_norm)} ({g(100 * share)} % of the squared "
                  f"norm); input side {g(r.token_table_input_side)}, output side {g(r.token_table_output_side)}",
                  at_least(share, NEARLY_ALL, "token table's share of the squared gradient norm", "of the total", 0.01),
                  at_most(inside, SMALL, "input side over the token table's norm", "of the table", 0.01))


STARVED_DECADES = 3.0  # starved / runaway: a block norm three decades below / above the median block's


def _block_spread(d) -> np.ndarray:
    """|log10(block norm / median block norm)|, from the norms themselves."""
    v = d.grad_norm.to_numpy(float)
    return np.abs(np.log10(v / np.median(v)))


def _widest_block(t):
    d = t["G8/blocks"]
    return {"block": int(d.block.iloc[int(np.argmax(_block_spread(d)))])}


@relation("G8/blocks", single=True, edge=Flip(
    "G8/blocks", _widest_block, "grad_norm", holding=lambda t: float(np.median(t["G8/blocks"].grad_norm)),
    failing=lambda t: 1e4 * float(np.median(t["G8/blocks"].grad_norm)), log=True))
def no_block_starved_or_runaway(t):
    d = t["G8/blocks"]
    spread = _block_spread(d)
    ratio = d.grad_norm / np.median(d.grad_norm)
    return judged(f"block norm / median over {len(d)} blocks: {g(ratio.min())}..{g(ratio.max())}",
                  flag(len(d) > 0, "blocks measured"),
                  at_most(spread.max(), STARVED_DECADES, "widest block from the median", "decades", 0.1))


# ---- G5: which tokens surprise most and least ----------------------------------------------------------------
sources("G5/extremes", {"kind": "input", "position": "input", "token": "input", "context": "input",
                        "surprise_nats": _SURPRISE})
sources("C1/surprise_extremes", {"kind": "input", "rank": "input", "position": "input", "character": "input",
                                 "context": "input", "surprise_nats": _CHAR})
SPREAD = 1e3  # "the most surprising" against "a ten-thousandth of a nat": at least three orders of magnitude


def _extremes(d):
    return float(d[d.kind == "most"].surprise_nats.max()), float(d[d.kind == "least"].surprise_nats.min())


def _extreme_edge(key: str) -> Flip:
    """The least surprising tokens moved together towards the most surprising one's thousandth."""
    return Flip(key, {"kind": "least"}, "surprise_nats",
                holding=lambda t: _extremes(t[key])[0] / SPREAD / 10, failing=lambda t: _extremes(t[key])[0] / 10,
                log=True)


def _spread(t, key: str, model: str):
    most, least = _extremes(t[key])
    return judged(f"{model}: the most surprising token costs {g(most)} nats, the least {g(least)} (x{g(most / least)})",
                  times_at_least(most, least, SPREAD, "most over least surprising, at least x1000", 0.1))


@relation("G5/extremes", single=True, edge=_extreme_edge("G5/extremes"))
def surprise_spans_orders(t):
    """A trained model is nearly certain of some tokens and blindsided by others: the most surprising token costs at
    least a thousand times the least surprising one (the documents: 16 nats against a ten-thousandth)."""
    return _spread(t, "G5/extremes", "GPT-2")


@relation("C1/surprise_extremes", single=True, edge=_extreme_edge("C1/surprise_extremes"))
def surprise_spans_orders_proxy(t):
    return _spread(t, "C1/surprise_extremes", "character model")
