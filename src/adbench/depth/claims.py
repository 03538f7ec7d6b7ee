"""The D family's conclusions, tested: scalar chains on the tape and in torch (D1), tanh stacks (D2).

Each relation reads this family's tables (results/D*/) and returns an Outcome whose checks carry their margins;
each declares its two boundary controls (`edge`). `sources` says which computation produced each cell. Chains are
chosen by their columns (activation, w), never by the `chain` label the configuration names; stacks by depth,
scale and residual.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..claims import (EPS64, FAR, Edge, Flip, Move, at_least, at_most, decades, flag, g, judged, relation, same_float,
                      sources, times_at_least, times_within, truthy, ulps_away)

# D1's and D2's ratios are seeded float64 computations: another machine's libm or BLAS moves them by ~1e-14
# relative; a band of a hundredth of a decade (2 %) only marks a ratio that sits right at its bound
BAND = 0.01

# the documents' first/last ratios at the largest scale and depth (data/documented.csv), plain and residual
PLAIN_TOP, RESIDUAL_TOP = ("D2", "plain_s2_d60_first_over_last"), ("D2", "residual_s2_d60_first_over_last")


@lru_cache(maxsize=None)
def _printed(key: tuple[str, str]) -> float:
    """A documented number as the essay printed it (data/documented.csv), thousands separators read."""
    from ..verdicts.documented import load

    d = load()
    hit = d[(d["id"] == key[0]) & (d["quantity"] == key[1])]
    if hit.empty:
        raise KeyError(f"documented.csv has no row {key[0]}/{key[1]}: add it there")
    return float(hit.documented.iloc[0].replace(",", "").strip())


sources("D1/chains", {"chain": "input", "activation": "input", "w": "input", "depth": "input",
                      "tape_dL_dx": "tape", "torch_dL_dx": "torch float64", "rel_diff": "tape, torch float64"})
sources("D1/fp16_probe", {"chain": "input", "binary64": "tape", "fp16": "torch fp16 cast",
                          "fp16_smallest_subnormal": "fp16 nextafter"})
sources("D1/residual", {"row": "input", "col": "input", "torch_jacobian": "torch autograd of x + F(x)",
                        "hand_jacobian": "hand I + J_F"})
sources("D2/grid", {"depth": "input", "scale": "input", "residual": "input", "layer": "input",
                    "rel_grad": "stack backward", "log10_rel_grad": "stack backward", "rel_grad_min": "stack backward",
                    "rel_grad_max": "stack backward"})


# ---- D1 ---------------------------------------------------------------------------------------------------
def _chains(t, activation: str):
    d = t["D1/chains"]
    return d[d.activation == activation]


def _unit_tanh(t):
    """The tanh chains whose every backward factor w(1 - tanh^2) is at most one: |w| <= 1."""
    d = _chains(t, "tanh")
    return d[d.w.abs() <= 1]


def _chain(d, w: float):
    return d[d.w == w].sort_values("depth")


def _shrink(c) -> np.ndarray:
    """log10 of each layer's shrink factor |g(d)| / |g(d+1)| (positive: the gradient shrank)."""
    v = c.tape_dL_dx.abs().to_numpy(float)
    return np.log10(v[:-1]) - np.log10(v[1:])


def _unit_deepest(t) -> dict:
    c = _chain(_unit_tanh(t), _unit_tanh(t).w.max())
    return {"w": c.w.iloc[0], "depth": c.depth.iloc[-1], "activation": "tanh"}


@relation("D1/chains", single=True,
          edge=Flip("D1/chains", _unit_deepest, "tape_dL_dx",
                    holding=lambda t: 0.5 * _chain(_unit_tanh(t), _unit_deepest(t)["w"]).tape_dL_dx.iloc[-2],
                    failing=lambda t: 2 * _chain(_unit_tanh(t), _unit_deepest(t)["w"]).tape_dL_dx.iloc[-2], log=True))
def tanh_chain_decays(t):
    """Every tanh chain with |w| <= 1 (each factor 1 - tanh^2 at most one): the gradient shrinks at every layer,
    from at most one at depth 1."""
    d = _unit_tanh(t)
    checks = [flag(len(d) > 0, "a tanh chain with |w| <= 1")]
    parts = []
    for w in sorted(d.w.unique()):
        c = _chain(d, w)
        s = _shrink(c)
        parts.append(f"w={w:g}: |dL/dx| {g(c.tape_dL_dx.iloc[0])} at depth {c.depth.iloc[0]} -> "
                     f"{g(c.tape_dL_dx.iloc[-1])} at {c.depth.iloc[-1]}")
        checks += [flag(abs(c.tape_dL_dx.iloc[0]) <= 1, f"w={w:g}: at most one at depth 1"),
                   at_least(s.min() if len(s) else np.nan, 0.0, f"w={w:g}: smallest per-layer shrink", "decades",
                            strict=True)]
    return judged("; ".join(parts), *checks)


def _pair(t):
    """(unsaturated, saturated) tanh chains, indexed by depth: the largest |w| <= 1 and the largest w > 1."""
    tanh = _chains(t, "tanh")
    a = _chain(tanh, _unit_tanh(t).w.max()).set_index("depth")
    b = _chain(tanh, tanh.w.max()).set_index("depth")
    return a, b


@relation("D1/chains", single=True,
          edge=Flip("D1/chains", lambda t: {"activation": "tanh", "w": _chains(t, "tanh").w.max(), "depth": 1},
                    "tape_dL_dx", holding=lambda t: 0.5 * _pair(t)[0].tape_dL_dx.iloc[0],
                    failing=lambda t: 2 * _pair(t)[0].tape_dL_dx.iloc[0], log=True))
def saturated_tanh_collapses_faster(t):
    """The saturated chain (the largest w, > 1) is below the unit chain at every depth, and at the deepest common
    depth it has collapsed: at least a hundred times below."""
    a, b = _pair(t)
    common = a.index.intersection(b.index)
    gap = np.log10(a.loc[common, "tape_dL_dx"].abs()) - np.log10(b.loc[common, "tape_dL_dx"].abs())
    last = common.max() if len(common) else None
    wa, wb = a.w.iloc[0], b.w.iloc[0]
    return judged(f"w={wb:g} vs w={wa:g}: at depth 1 {g(b.tape_dL_dx.iloc[0])} vs {g(a.tape_dL_dx.iloc[0])}; at depth "
                  f"{last}: {g(b.loc[last, 'tape_dL_dx'])} vs {g(a.loc[last, 'tape_dL_dx'])}",
                  flag(wb > 1 and len(common) > 1, "a saturated chain (w > 1) beside a unit one"),
                  at_least(gap.min(), 0.0, "smallest gap, every depth", "decades", BAND, strict=True),
                  times_at_least(abs(a.loc[last, "tape_dL_dx"]), abs(b.loc[last, "tape_dL_dx"]), FAR,
                                 f"at the deepest depth, at least x{FAR:g} below", BAND))


def _relu_deepest(t) -> dict:
    r = _chains(t, "relu")
    r = r[r.w == r.w.max()]
    return {"activation": "relu", "w": r.w.iloc[0], "depth": r.depth.max()}


def _power(t) -> float:
    p = _relu_deepest(t)
    return p["w"] ** p["depth"]


@relation("D1/chains", edge=Flip("D1/chains", _relu_deepest, "tape_dL_dx", holding=_power,
                                 failing=lambda t: ulps_away(_power(t), 4 * _relu_deepest(t)["depth"])))
def relu_chain_is_power_of_w(t):
    """On the active ReLU path the tape and torch both give w^depth, up to one rounding per product (depth ulps)."""
    r = _chains(t, "relu")
    checks = [flag(len(r) > 0, "a relu chain")]
    for col in ("tape_dL_dx", "torch_dL_dx"):
        checks += [same_float(getattr(x, col), x.w ** x.depth, max(int(x.depth), 1), EPS64,
                              f"{col.split('_')[0]}, w={x.w:g}, depth {x.depth} vs w^depth") for x in r.itertuples()]
    top = r.loc[r.depth.idxmax()] if len(r) else None
    return judged(f"{len(r)} relu rows against w^depth (e.g. w={top.w:g}, depth {top.depth}: tape "
                  f"{g(top.tape_dL_dx)}, w^depth {g(top.w ** top.depth)})" if top is not None else "no relu rows",
                  *checks)


@relation("D1/fp16_probe", "P1/landmarks",
          edge=Edge(Move("D1/fp16_probe", {}, "fp16", 0.0),
                    Move("D1/fp16_probe", {}, "fp16", lambda t: float(t["D1/fp16_probe"].fp16_smallest_subnormal[0]))))
def deep_gradient_rounds_to_zero_in_fp16(t):
    """A nonzero binary64 gradient, below half fp16's smallest subnormal (P1), is exactly zero once cast."""
    r = t["D1/fp16_probe"].iloc[0]
    sub = float(r.fp16_smallest_subnormal)
    p1 = t["P1/landmarks"]
    landmark = float(p1.loc[p1.format == "fp16", "smallest_subnormal"].iloc[0])
    return judged(f"binary64 {g(r.binary64)} (half the smallest subnormal {g(sub / 2)}) -> fp16 {r.fp16}",
                  flag(r.binary64 > 0, "the binary64 gradient is nonzero"),
                  flag(sub == landmark, "the probe's subnormal is P1's"),
                  times_at_least(sub / 2, r.binary64, 1, "below half the smallest subnormal", band=0.0),
                  flag(r.fp16 == 0, "zero in fp16"))


def _worst_row(t) -> dict:
    d = t["D1/chains"]
    per = _per_layer(d)
    r = d.loc[per.idxmax()]
    return {"activation": r.activation, "w": r.w, "depth": r.depth}


def _per_layer(d):
    """|tape - torch| / |torch| in float64 ulps per layer."""
    rel = (d.tape_dL_dx - d.torch_dL_dx).abs() / d.torch_dL_dx.abs().where(d.torch_dL_dx != 0, 1.0)
    return rel / (d.depth * EPS64)


def _at_worst(t):
    d = t["D1/chains"]
    w = _worst_row(t)
    return d[(d.activation == w["activation"]) & (d.w == w["w"]) & (d.depth == w["depth"])].iloc[0]


@relation("D1/chains", edge=Flip("D1/chains", _worst_row, "tape_dL_dx", holding=lambda t: _at_worst(t).torch_dL_dx,
                                 failing=lambda t: _at_worst(t).torch_dL_dx * (1 + 64 * _at_worst(t).depth * EPS64)))
def chains_tape_equals_torch(t):
    """Tape and torch agree within 16 float64 ulps per layer: each layer adds a tanh from a different libm and, in
    saturated units, the cancellation in 1 - tanh^2."""
    d = t["D1/chains"]
    per = _per_layer(d)
    worst = d.loc[per.idxmax()]
    return judged(f"largest relative tape/torch difference at depth {worst.depth} ({worst.activation}, w={worst.w:g}): "
                  f"{g(per.max())} ulps per layer",
                  at_most(per.max(), 16, "largest tape/torch difference, ulps per layer", "ulps per layer", 4))


def _jac(t, col: str) -> np.ndarray:
    d = t["D1/residual"].sort_values(["row", "col"])
    n = int(d.row.max()) + 1
    return d[col].to_numpy(float).reshape(n, n)


def _jac_worst(t) -> dict:
    d = t["D1/residual"]
    r = d.loc[(d.torch_jacobian - d.hand_jacobian).abs().idxmax()]
    return {"row": r.row, "col": r.col}


def _hand_at(t) -> float:
    d, w = t["D1/residual"], _jac_worst(t)
    return float(d[(d.row == w["row"]) & (d.col == w["col"])].hand_jacobian.iloc[0])


@relation("D1/residual", edge=Flip("D1/residual", _jac_worst, "torch_jacobian", holding=_hand_at,
                                   failing=lambda t: ulps_away(_hand_at(t), 256)))
def residual_identity_plus_jacobian(t):
    """torch's Jacobian of y = x + tanh(W x) equals I + J_F with J_F = diag(1 - tanh^2) W by hand, entry by entry
    (64 float64 ulps); and the two routes reinforce along one direction and cancel along another: the block's
    largest singular value is above 1 and its smallest below 1."""
    J, H = _jac(t, "torch_jacobian"), _jac(t, "hand_jacobian")
    sv = np.linalg.svd(J, compute_uv=False) if np.isfinite(J).all() else np.array([np.nan])
    checks = [same_float(a, b, 64, EPS64, "torch vs I + J_F") for a, b in zip(J.ravel(), H.ravel())]
    worst = min(checks, key=lambda c: c.margin) if checks else flag(False, "a Jacobian")
    return judged(f"{J.shape[0]}x{J.shape[1]} block: largest |torch - (I + J_F)| {g(np.abs(J - H).max())}; "
                  f"singular values of torch's Jacobian {', '.join(g(v) for v in sv)}",
                  worst,
                  at_least(decades(sv.max()), 0.0, "largest factor above 1 (the routes reinforce)", "decades", BAND,
                           strict=True),
                  at_most(decades(sv.min()), 0.0, "smallest factor below 1 (the routes cancel)", "decades", BAND,
                          strict=True))


# ---- D2 ---------------------------------------------------------------------------------------------------
def _first(t, residual: bool):
    """First layer over last, every depth >= 2 and scale of the stacks with or without residuals."""
    d = t["D2/grid"]
    return d[(d.layer == 1) & (d.depth > 1) & (d.residual.map(truthy) == residual)]


def _at(d, depth, scale):
    return d[(d.depth == depth) & (d.scale == scale)].iloc[0]


def _plain_small(t):
    """The plain stacks at the smallest scale, by depth."""
    p = _first(t, False)
    return p[p.scale == p.scale.min()].set_index("depth").sort_index()


@relation("D2/grid", single=True,
          edge=Flip("D2/grid", lambda t: {"layer": 1, "residual": False, "scale": _first(t, False).scale.min(),
                                          "depth": _first(t, False).depth.max()}, "rel_grad",
                    holding=lambda t: _plain_small(t).rel_grad.iloc[-1],
                    failing=lambda t: _plain_small(t).rel_grad.loc[_first(t, False).depth.max() // 2], log=True))
def plain_stack_vanishes_below_unit_scale(t):
    """Without residuals, every scale below 1 gives the first layer less than the last at every depth; at the
    smallest scale the stack of half the largest depth already starves it (at least x100 below) and the deepest
    stack x100 further (the documents: 7e-9 at 30 layers, about 1e-17 at 60)."""
    p = _first(t, False)
    below = p[p.scale < 1]
    s = _plain_small(t)
    deep, half = s.index.max(), s.index.max() // 2
    worst = below.loc[below.rel_grad_max.idxmax()] if len(below) else None
    return judged(f"plain, scale {s.scale.iloc[0]:g}: first/last at depth {half}: {g(s.rel_grad[half])}, at {deep}: "
                  f"{g(s.rel_grad[deep])}; largest over every scale below 1 and every seed: "
                  f"{g(worst.rel_grad_max) if worst is not None else 'none'}",
                  flag(s.scale.iloc[0] < 1, "a scale below 1"),
                  at_least(-decades(below.rel_grad_max.max()), 0.0, "every depth, scale < 1 and seed: below the last",
                           "decades", BAND, strict=True),
                  times_at_least(1.0, s.rel_grad[half], FAR, f"depth {half}: at least x{FAR:g} below", BAND),
                  times_at_least(s.rel_grad[half], s.rel_grad[deep], FAR, f"depth {deep}: x{FAR:g} below depth {half}",
                                 BAND))


def _top(t, residual: bool):
    d = _first(t, residual)
    return _at(d, d.depth.max(), d.scale.max())


def _top_where(t, residual: bool) -> dict:
    d = _first(t, residual)
    return {"layer": 1, "residual": residual, "depth": d.depth.max(), "scale": d.scale.max()}


@relation("D2/grid", single=True,
          edge=Flip("D2/grid", lambda t: _top_where(t, False), "rel_grad", holding=lambda t: _printed(PLAIN_TOP),
                    failing=lambda t: _printed(PLAIN_TOP) * 10 ** 0.6, log=True))
def plain_stack_explodes_above_unit_scale(t):
    """Without residuals, at the largest scale (above 1) and depth the first layer gets about the documents' 7,700
    times the last layer's gradient: within half a decade."""
    r, doc = _top(t, False), _printed(PLAIN_TOP)
    return judged(f"plain, scale {r.scale:g}, depth {r.depth}: first/last {g(r.rel_grad)} (the documents: {doc:,g})",
                  flag(r.scale > 1, "a scale above 1"),
                  times_within(r.rel_grad, doc, 0.5, f"first/last within half a decade of {doc:,g}", BAND))


@relation("D2/grid", single=True,
          edge=Flip("D2/grid", lambda t: {"layer": 1, "residual": True, **_residual_worst(t)}, "rel_grad_min",
                    holding=1.0, failing=0.99))
def residual_never_starves_first_layer(t):
    """With residuals, at every depth, every scale and every seed of the grid, the first layer gets at least the
    last layer's gradient."""
    r = _first(t, True)
    w = r.loc[r.rel_grad_min.idxmin()]
    return judged(f"smallest first/last with residuals over {len(r)} stacks x seeds: {g(w.rel_grad_min)} "
                  f"(depth {w.depth}, scale {w.scale:g})",
                  flag(len(r) > 0 and r.scale.nunique() > 1 and r.depth.nunique() > 1, "every depth and scale read"),
                  at_least(decades(r.rel_grad_min.min()), 0.0, "smallest first/last, every stack and seed", "decades",
                           BAND))


def _residual_worst(t) -> dict:
    r = _first(t, True)
    w = r.loc[r.rel_grad_min.idxmin()]
    return {"depth": w.depth, "scale": w.scale}


@relation("D2/grid", single=True,
          edge=Flip("D2/grid", lambda t: _top_where(t, True), "rel_grad", holding=lambda t: _printed(RESIDUAL_TOP),
                    failing=lambda t: _printed(RESIDUAL_TOP) * 10 ** 0.6, log=True))
def residual_still_grows_at_large_scale(t):
    """With residuals, at the largest scale and depth the first layer still gets about a thousand times the last
    (the documents' 992, within half a decade), less than the plain stack gives it."""
    r, p, doc = _top(t, True), _top(t, False), _printed(RESIDUAL_TOP)
    return judged(f"depth {r.depth}, scale {r.scale:g}: residual first/last {g(r.rel_grad)}, plain {g(p.rel_grad)} "
                  f"(the documents: {doc:,g})",
                  times_within(r.rel_grad, doc, 0.5, f"residual first/last within half a decade of {doc:,g}", BAND),
                  times_at_least(p.rel_grad, r.rel_grad, 1, "less than without residuals", BAND))
