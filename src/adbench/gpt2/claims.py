"""The G family's conclusions, tested: GPT-2's prompt probes (G1-G4) here; one sequence's surprise, clipping and
block norms (G5, G7, G8) in claims_sequence.py and the saved-tensor accounting (G6) in claims_memory.py, all three
listed in gpt2/family.py.

Each relation reads this family's tables (results/G*/) and returns an Outcome whose checks carry their margins;
each declares its two boundary controls (`edge`). `sources` says which computation produced each cell. The
claims that need GPT-2's trained weights are `pretrained`; where the character model C1 trains here can stand in
for them, a `proxy` twin reads C1's tables (results/C1/surprise.csv, states.csv, qkv.csv: charlm/proxy.py).
"""

from __future__ import annotations

import math

import numpy as np

from ..claims import EPS32, Edge, Flip, Move, at_least, flag, g, judged, relation, row, same_float, sources

sources("G1/target", {"nll": "GPT-2 forward (log-softmax of the target)", "probability": "GPT-2 forward (log-softmax "
                      "of the target)", **{c: "input" for c in ("prompt", "target", "prompt_tokens", "target_tokens",
                                                                  "model_source", "unique_parameters", "tokenizer")}})
sources("G2/states", {"state": "input", "grad_norm_last_token": "GPT-2 backward (retained residual states)"})
sources("G3/qkv", {"layer": "input", "q": "GPT-2 backward (c_attn weight gradient)",
                   "k": "GPT-2 backward (c_attn weight gradient)", "v": "GPT-2 backward (c_attn weight gradient)"})
sources("G4/direction", {"against:loss": "GPT-2 forward after a step against the gradient",
                         "with:loss": "GPT-2 forward after a step with the gradient",
                         "restored:loss": "GPT-2 forward after restoring the weights",
                         "original": "GPT-2 forward before the move", "l2_moved": "weights moved",
                         "bitwise_equal_to_original": "GPT-2 forward after restoring the weights, GPT-2 forward "
                                                      "before the move"}, by="move")
# the proxies' tables: the trained character model (charlm/proxy.py), read only by the proxy twins here
sources("C1/states", {"state": "input", "after": "input",
                      "grad_norm_last_token": "character model backward (retained residual states)"})
sources("C1/qkv", {"layer": "input", "q": "character model backward (qkv weight gradient)",
                   "k": "character model backward (qkv weight gradient)",
                   "v": "character model backward (qkv weight gradient)"})

# How far a pretrained check may move on another machine: the weights are fixed, so only float32 rounding and
# kernel order differ (far below these); a proxy's model is trained here, so another machine trains another one.
BAND_FIXED, BAND_TRAINED = 0.01, 0.1  # decades (or the unit named where used)


# ---- G1 -----------------------------------------------------------------------------------------------
@relation("G1/target", definition=True,
          edge=Flip("G1/target", {}, "probability", holding=lambda t: math.exp(-t["G1/target"].nll.iloc[0]),
                    failing=lambda t: math.exp(-t["G1/target"].nll.iloc[0]) * (1 + 1e-4)))
def nll_is_minus_log_probability(t):
    """The job writes p = exp(-nll) (gpt2/prompt.py): the identity is how p is made, shown, not evidence."""
    r = t["G1/target"].iloc[0]
    return judged(f"nll {g(r.nll)} vs -ln p {g(-math.log(r.probability))}",
                  same_float(r.nll, -math.log(r.probability), 16, EPS32, "nll vs -ln p, float32 ulps"))


# ---- G2 -----------------------------------------------------------------------------------------------
def _state_norms(d) -> np.ndarray:
    return d.sort_values("state")["grad_norm_last_token"].to_numpy(float)


def _reaches_every_state(d, what: str):
    v = _state_norms(d)
    return judged(f"{int((v > 0).sum())}/{len(v)} {what} states have a nonzero last-token gradient; smallest "
                  f"{g(v.min()) if len(v) else '-'}",
                  flag(len(v) > 0 and bool(np.all(np.isfinite(v)) and np.all(v > 0)), "every state's norm > 0"))


def _smallest_state(table: str):
    return lambda t: {"state": int(t[table].loc[t[table].grad_norm_last_token.idxmin(), "state"])}


def _reach_edge(table: str) -> Edge:
    return Edge(Move(table, _smallest_state(table), "grad_norm_last_token", 5e-324),  # the smallest nonzero
                Move(table, _smallest_state(table), "grad_norm_last_token", 0.0))


@relation("G2/states", single=True, edge=_reach_edge("G2/states"))
def gradient_reaches_every_state(t):
    return _reaches_every_state(t["G2/states"], "residual")


@relation("C1/states", single=True, edge=_reach_edge("C1/states"))
def gradient_reaches_every_state_proxy(t):
    return _reaches_every_state(t["C1/states"], "character-model residual")


def _not_monotonic(d, band: float, what: str):
    """Not monotonic: some step with depth rises and some falls; each check's margin is the largest such step,
    in decades (log10 of the ratio of neighbouring norms)."""
    v = _state_norms(d)
    ok = len(v) > 2 and bool(np.all(v > 0))
    steps = np.diff(np.log10(v)) if ok else np.array([0.0])
    return judged(f"{what} norms by depth: " + ", ".join(g(x) for x in v) + f" ({int((steps > 0).sum())} rises, "
                  f"{int((steps < 0).sum())} falls)",
                  flag(ok, "three or more states, every norm > 0"),
                  at_least(steps.max(), 0, "largest rise with depth", "decades", band, strict=True),
                  at_least(-steps.min(), 0, "largest fall with depth", "decades", band, strict=True))


def _falling(table: str, last_rise: float):
    """The table's own norms sorted to fall with depth (the documents' contradiction), the last state then
    raised `last_rise` decades above the one before it (0: flat, still no rise)."""
    def values(t):
        d = t[table]
        v = np.sort(d.grad_norm_last_token.to_numpy(float))[::-1]
        v[-1] = v[-2] * 10 ** last_rise
        return v[d.state.rank(method="first").to_numpy(int) - 1]  # aligned with the table's rows
    return values


def _monotonic_edge(table: str, band: float) -> Edge:
    return Edge(Move(table, {}, "grad_norm_last_token", _falling(table, band / 2)),
                Move(table, {}, "grad_norm_last_token", _falling(table, 0.0)))


@relation("G2/states", single=True, edge=_monotonic_edge("G2/states", BAND_FIXED))
def residual_norms_not_monotonic(t):
    return _not_monotonic(t["G2/states"], BAND_FIXED, "residual-state")


@relation("C1/states", single=True, edge=_monotonic_edge("C1/states", BAND_TRAINED))
def residual_norms_not_monotonic_proxy(t):
    return _not_monotonic(t["C1/states"], BAND_TRAINED, "character-model residual-state")


# ---- G3 -----------------------------------------------------------------------------------------------
DOC_LAYERS, DOC_SAMPLED = 12, (0, 5, 11)  # GPT-2 small's layers; the three the documents printed


def _sampled(d) -> list[int]:
    """The documents' layers, at the same relative depth when the table's model has fewer (gpt2/common.py)."""
    n = len(d)
    return sorted({i if n == DOC_LAYERS else min(n - 1, round(i * (n - 1) / (DOC_LAYERS - 1))) for i in DOC_SAMPLED})


def _value_largest(d, layers: list[int], band: float, what: str):
    rows = d.set_index("layer").loc[layers]
    checks = [_times_over(r.v, max(r.q, r.k), f"layer {i}: value slice over the larger of query and key", band)
              for i, r in rows.iterrows()]
    return judged(f"{what}: " + "; ".join(f"layer {i}: q {g(r.q)}, k {g(r.k)}, v {g(r.v)}" for i, r in rows.iterrows()),
                  flag(len(rows) > 0, "layers to compare"), *checks)


def _times_over(big: float, small: float, what: str, band: float):
    """big > small, the margin in decades (log10 of their ratio)."""
    return at_least(math.log10(big / small) if big > 0 and small > 0 else -math.inf, 0, what, "decades", band,
                    strict=True)


def _tightest_layer(table: str, layers):
    def where(t):
        d = t[table].set_index("layer").loc[layers(t[table])]
        return {"layer": int((np.log10(d.v) - np.log10(np.maximum(d.q, d.k))).idxmin())}
    return where


def _qk_max(table: str, layers, factor: float):
    return lambda t: factor * float(t[table].set_index("layer").loc[_tightest_layer(table, layers)(t)["layer"],
                                                                      ["q", "k"]].max())


def _value_edge(table: str, layers) -> Flip:
    return Flip(table, _tightest_layer(table, layers), "v", holding=_qk_max(table, layers, 10.0),
                failing=_qk_max(table, layers, 0.5), log=True)


@relation("G3/qkv", single=True, edge=_value_edge("G3/qkv", _sampled))
def value_slice_largest(t):
    return _value_largest(t["G3/qkv"], _sampled(t["G3/qkv"]), BAND_FIXED, "the documents' sampled layers")


@relation("C1/qkv", single=True, edge=_value_edge("C1/qkv", lambda d: list(d.layer)))
def value_slice_largest_proxy(t):
    d = t["C1/qkv"]
    return _value_largest(d, list(d.layer), BAND_TRAINED, "every layer of the character model")


def _smallest_query(t) -> dict:
    """The sampled layer whose query slice has the smallest norm: where the edge moves a cell."""
    d = t["G3/qkv"].set_index("layer").loc[_sampled(t["G3/qkv"])]
    return {"layer": int(d.q.idxmin())}


@relation("G3/qkv", single=True, edge=Edge(Move("G3/qkv", _smallest_query, "q", 5e-324),  # the smallest nonzero
                                          Move("G3/qkv", _smallest_query, "q", 0.0)))
def qkv_slices_nonzero(t):
    """The next-token loss sends a nonzero gradient through the query, key and value slices of each sampled layer.
    Nonzero follows from the graph (every slice lies on a path to the loss), not from the trained values, so it is
    judged on any weights; a detached or frozen slice, or gradients read after zero_grad, reads zero."""
    d = t["G3/qkv"]
    rows = d.set_index("layer").loc[_sampled(d), ["q", "k", "v"]]
    v = rows.to_numpy(float)
    return judged(f"{int((v > 0).sum())} of {v.size} q/k/v slice norms nonzero in layers "
                  f"{', '.join(map(str, rows.index))}; smallest {g(v.min()) if v.size else '-'}",
                  flag(len(rows) > 0, "sampled layers measured"),
                  flag(v.size > 0 and bool(np.all(np.isfinite(v)) and np.all(v > 0)), "every slice's norm > 0"))


# ---- G4 -----------------------------------------------------------------------------------------------
def _moves(t):
    d = t["G4/direction"]
    return (row(d, "move", m) for m in ("against", "with", "restored"))


def _loss_ulps(t) -> float:
    """16 float32 ulps of the original loss: the band of a comparison of two float32 losses."""
    return 16 * EPS32 * abs(float(t["G4/direction"].original.iloc[0]))


@relation("G4/direction", edge=Flip("G4/direction", {"move": "against"}, "loss",
                                    holding=lambda t: next(_moves(t)).loss,
                                    failing=lambda t: float(t["G4/direction"].original.iloc[0])))
def negative_gradient_descends(t):
    a, w, r = _moves(t)
    band = _loss_ulps(t)
    return judged(f"against {float(a.loss)!r} < original {float(a.original)!r} < with {float(w.loss)!r}; restored "
                  f"{float(r.loss)!r}",
                  at_least(a.original - a.loss, 0, "loss fall stepping against the gradient", "nats", band, strict=True),
                  at_least(w.loss - a.original, 0, "loss rise stepping with the gradient", "nats", band, strict=True),
                  flag(r.loss == r.original, "restoring the weights restores the loss bit for bit"))
