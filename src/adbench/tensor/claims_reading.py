"""The T family's conclusions from the issue-36 reading (docs/reading.csv): what the matmul and layer-norm nodes
save, per-token against per-sequence means, the projection weights, heads adding into dX, and layer norm's
coupled backward (independent divisions miss it, the hand formula equals it, it is orthogonal to xhat, a check
with a mismatched eps fails). Imported at the end of tensor/claims.py.
"""

from __future__ import annotations

import numpy as np

from ..claims import (EPS64, Edge, Flip, Move, Moves, at_most, flag, g, judged, mat, relation, row, same_float,
                      sources, times_at_least, truthy, ulps_away)
from .claims import HAND, MATRICES, TORCH
from .claims_kernels import COMPARABLE, MATERIAL, MATERIALLY, _eps_rows, _matrices_agree, _off_by

HOOKS, ATTRS = "saved_tensors_hooks", "grad_fn attribute"
sources("T1/saved", {HOOKS: "torch saved-tensor hooks", ATTRS: "torch grad_fn._saved_*"}, by="source")
sources("T4/saved", {HOOKS: "torch saved-tensor hooks, hand forward", ATTRS: "torch grad_fn._saved_*, hand forward"},
        by="source")
sources("T2/averaging", {"lengths": "input", "equal_lengths": "input", "sequences": "input", "tokens": "input",
                         "grad_norm_token_mean": "torch, per-token mean",
                         "grad_norm_sequence_mean": "torch, per-sequence mean",
                         "token_over_sequence": "torch, per-token mean, torch, per-sequence mean"})
sources("T3/projection_weights", MATRICES, by="matrix")
sources("T3/multihead", {"variant": "input", "heads": "input", "head_width": "input",
                         "rel_diff": f"{HAND}, {TORCH}", "torch_dX_norm": TORCH})

# what layer norm's backward could keep beyond its statistics: the named intermediates of the forward
INTERMEDIATES = ("variance", "x - mean", "xhat", "y")
# "to eps order": dx's component along xhat is at most twice the exact leftover eps / (var + eps) of the
# independent-division dx's component (exact arithmetic leaves exactly that share); eps-order means that share
# is small, at most a hundredth (the variance a hundred times eps)
EPS_ORDER, SMALL_SHARE = 2.0, 0.01
# a float64 gradient check's tolerance, relative to the row's largest |dx|: about 4.5e6 ulps, room for the
# cancellation in x - mean on a nearly constant row (|x| / std near 10^3 amplifies the rounding), and still
# eight orders of magnitude below a mismatch that counts (MATERIALLY)
CHECK_TOL = 1e-9


def _saved(t, table: str, source: str) -> list[str]:
    d = t[table]
    return [str(s) for s in d[d.source == source].saved]


def _attr(t, table: str, slot: str) -> str:
    d = t[table]
    return str(row(d[d.source == ATTRS], "slot", slot).saved)


# ---- T1 ---------------------------------------------------------------------------------------------------
@relation("T1/saved", edge=Edge(Move("T1/saved", {"source": ATTRS, "slot": "_saved_self"}, "saved", "X"),
                                Move("T1/saved", {"source": ATTRS, "slot": "_saved_self"}, "saved", "not saved")))
def matmul_saves_both_operands(t):
    """Y = X W's node keeps both operands: dL/dX = G Wᵀ needs W (mm's mat2), dL/dW = Xᵀ G needs X (its self);
    seen by the saved-tensor hooks and in the node's own attributes."""
    hooks = _saved(t, "T1/saved", HOOKS)
    attrs = {a: _attr(t, "T1/saved", a) for a in ("_saved_self", "_saved_mat2")}
    return judged(f"saved-tensor hooks packed {hooks}; grad_fn._saved_self {attrs['_saved_self']}, "
                  f"_saved_mat2 {attrs['_saved_mat2']}",
                  flag("W" in hooks, "the hooks saw W packed (dX = G W^T needs it)"),
                  flag("X" in hooks, "the hooks saw X packed (dW = X^T G needs it)"),
                  flag(attrs["_saved_self"] == "X", "grad_fn._saved_self is X"),
                  flag(attrs["_saved_mat2"] == "W", "grad_fn._saved_mat2 is W"))


# ---- T2 ---------------------------------------------------------------------------------------------------
def _averaging(t, equal: bool):
    d = t["T2/averaging"]
    return d[d.equal_lengths.map(truthy) == equal]


@relation("T2/averaging", edge=Flip("T2/averaging", {"equal_lengths": False}, "grad_norm_sequence_mean",
                                    holding=lambda t: _averaging(t, False).grad_norm_sequence_mean.iloc[0],
                                    failing=lambda t: _averaging(t, False).grad_norm_token_mean.iloc[0]))
def token_and_sequence_means_differ(t):
    """On the same tokens cut into sequences of different lengths, the per-token and per-sequence means give
    gradient norms at least 1 % apart; cut into equal lengths they agree to rounding (the lengths are the cause)."""
    unequal, equal = _averaging(t, False), _averaging(t, True)
    if unequal.empty or equal.empty:
        raise ValueError("tensor.softmax.reduction.tokens gives no two different lengths: the per-token and "
                         "per-sequence means cannot differ")
    return judged("per-token / per-sequence gradient norm: " + ", ".join(
        f"lengths {r.lengths}: {g(r.grad_norm_token_mean / r.grad_norm_sequence_mean)}" for r in t["T2/averaging"]
        .itertuples()),
        *(times_at_least(abs(r.grad_norm_token_mean / r.grad_norm_sequence_mean - 1), MATERIAL, 1,
                         f"lengths {r.lengths}: the two norms at least {MATERIAL:.0%} apart")
          for r in unequal.itertuples()),
        *(same_float(r.grad_norm_token_mean, r.grad_norm_sequence_mean, 64, EPS64,
                     f"equal lengths {r.lengths}: the two norms agree") for r in equal.itertuples()))


# ---- T3 ---------------------------------------------------------------------------------------------------
@relation("T3/projection_weights",
          edge=Flip("T3/projection_weights", {"matrix": "dWq", "row": 1, "col": 1}, "hand",
                    holding=lambda t: mat(t["T3/projection_weights"], "dWq", "torch")[1, 1],
                    failing=lambda t: _off_by(t, "T3/projection_weights", "dWq", 1, 1, 256)))
def projection_weight_grads_match_torch(t):
    """torch's dWq, dWk, dWv equal Xᵀ dQ, Xᵀ dK, Xᵀ dV from the hand attention rules, to rounding."""
    d = t["T3/projection_weights"]
    names = ("dWq", "dWk", "dWv")
    return judged("max |X^T dQ/dK/dV - torch64|: " + ", ".join(
        f"{n} {float(np.abs(mat(d, n, 'hand') - mat(d, n, 'torch')).max()):.4g}" for n in names),
        *_matrices_agree(d, names, "torch64"))


def _heads(t, full: bool):
    d = t["T3/multihead"]
    return d[(d.variant == "all heads") == full]


@relation("T3/multihead", edge=Flip("T3/multihead", {"variant": "all heads"}, "rel_diff",
                                    holding=lambda t: _heads(t, True).rel_diff.iloc[0], failing=256 * EPS64))
def multihead_slices_add(t):
    """torch's dX through H heads equals the sum over heads of each head's hand backward on its slice of
    dC = G Woᵀ; a sum missing any one head misses at least 1 % of dX."""
    full, dropped = _heads(t, True), _heads(t, False)
    if full.empty or int(full.heads.iloc[0]) < 2:
        raise ValueError("tensor.attention.projections: model_width // head_width gives fewer than two heads")
    return judged(f"{int(full.heads.iloc[0])} heads of width {int(full.head_width.iloc[0])}; "
                  "||sum - torch dX|| / ||torch dX||: " + ", ".join(f"{r.variant} {g(r.rel_diff)}"
                                                                    for r in t["T3/multihead"].itertuples()),
                  flag(len(dropped) == int(full.heads.iloc[0]), "each head dropped once"),
                  at_most(full.rel_diff.iloc[0] / EPS64, 64, "all heads vs torch's dX, in ulps of its norm", "ulps",
                          16),
                  *(times_at_least(r.rel_diff, MATERIAL, 1, f"{r.variant}: off by at least {MATERIAL:.0%}")
                    for r in dropped.itertuples()))


# ---- T4 ---------------------------------------------------------------------------------------------------
def _t4(t, name: str, col: str) -> np.ndarray:
    return mat(t["T4/matrices"], name, col).ravel()


def _toward_torch(rel: float) -> Moves:
    """The independent-division dx moved to torch's dx times (1 + rel), every entry: relative distance rel."""
    return Moves(tuple(Move("T4/matrices", {"matrix": "dx_independent", "col": i}, "hand",
                            lambda t, i=i: _t4(t, "dx", "torch")[i] * (1 + rel)) for i in range(3)))


@relation("T4/matrices", edge=Edge(_toward_torch(MATERIAL * 1.01), _toward_torch(MATERIAL * 0.99)))
def independent_divisions_miss_torch(t):
    """A backward that treats layer norm as D independent divisions (dx = r u, the mean and variance held fixed)
    misses torch's dx by at least 1 % of its norm."""
    naive, torch = _t4(t, "dx_independent", "hand"), _t4(t, "dx", "torch")
    rel = float(np.linalg.norm(naive - torch) / np.linalg.norm(torch))
    return judged(f"||r u - torch dx|| / ||torch dx|| = {g(rel)} (r u = {np.round(naive, 6).tolist()}, torch "
                  f"{np.round(torch, 6).tolist()})",
                  times_at_least(rel, MATERIAL, 1, f"independent divisions off by at least {MATERIAL:.0%}"))


@relation("T4/matrices", edge=Flip("T4/matrices", {"matrix": "dx", "col": 1}, "hand",
                                   holding=lambda t: mat(t["T4/matrices"], "dx", "torch")[0, 1],
                                   failing=lambda t: _off_by(t, "T4/matrices", "dx", 0, 1, 256)))
def hand_layernorm_dx_matches_torch64(t):
    """The hand dx = r/D (D u - sum u - xhat sum(u xhat)) equals torch float64's layer-norm dx to rounding."""
    d = t["T4/matrices"]
    return judged(f"max |hand dx - torch64| = {float(np.abs(mat(d, 'dx', 'hand') - mat(d, 'dx', 'torch')).max()):.4g}",
                  *_matrices_agree(d, ("dx",), "torch64"))


def _along(t) -> tuple[float, float, float, float]:
    """(torch dx . xhat, (r u) . xhat, eps / (var + eps) = 1 - sum xhat^2 / D, the rounding of the dot)."""
    dx, xhat, naive = _t4(t, "dx", "torch"), _t4(t, "xhat", "hand"), _t4(t, "dx_independent", "hand")
    share = 1.0 - float(xhat @ xhat) / len(xhat)   # sum xhat^2 = D var / (var + eps)
    return float(dx @ xhat), float(naive @ xhat), share, len(dx) * 4 * EPS64 * float(np.abs(dx * xhat).sum())


@relation("T4/matrices", edge=Flip("T4/matrices", {"matrix": "dx", "col": 2}, "torch",
                                   holding=lambda t: _t4(t, "dx", "torch")[2],
                                   failing=lambda t: _t4(t, "dx", "torch")[2] + 1.0))
def layernorm_dx_orthogonal_to_xhat(t):
    """torch's dx has no component along xhat to eps order: |dx . xhat| at most twice eps / (var + eps) times the
    independent-division dx's component (r u) . xhat (exact arithmetic leaves exactly that share), plus the
    dot's rounding."""
    along, direct, share, rounding = _along(t)
    if share > SMALL_SHARE or abs(direct) <= 1e3 * rounding:
        raise ValueError(f"tensor.layernorm: eps / (var + eps) = {g(share)} is not small, or (r u) . xhat = "
                         f"{g(direct)} is at rounding: orthogonality to xhat cannot be seen on this row")
    ratio = abs(along) / abs(direct) / share
    return judged(f"torch dx . xhat = {g(along)}, (r u) . xhat = {g(direct)}, eps / (var + eps) = {g(share)}: "
                  f"|dx . xhat| = {g(ratio)} x eps / (var + eps) of it",
                  at_most(ratio, EPS_ORDER + rounding / abs(direct) / share,
                          "|dx . xhat| / |(r u) . xhat| in units of eps / (var + eps)", "eps / (var + eps)", 0.5))


def _matched_cell(t) -> dict:
    """The comparable row's largest torch entry at the larger eps."""
    name, (ea, _, _, _, dx) = next((n, v) for n, v in _eps_rows(t).items() if v[2] <= COMPARABLE)
    return {"row": name, "eps": ea, "feature": int(np.argmax(np.abs(dx["dx_torch"][0])))}


def _eps_cell(t, where: dict, col: str) -> float:
    d = t["T4/eps"]
    hit = d[(d.row == where["row"]) & (d.eps == where["eps"]) & (d.feature == where["feature"])]
    return float(hit[col].iloc[0])


@relation("T4/eps", edge=Flip("T4/eps", _matched_cell, "dx_hand",
                              holding=lambda t: _eps_cell(t, _matched_cell(t), "dx_torch"),
                              failing=lambda t: ulps_away(_eps_cell(t, _matched_cell(t), "dx_torch"), 1e8)))
def eps_mismatch_fails_check(t):
    """A check of the hand dx against torch's passes with the same eps on both paths (within CHECK_TOL of the row's
    largest |dx|, every row and eps) and, on the row whose variance is comparable to eps, fails with the two eps
    swapped: off by at least a tenth of the row's largest |dx|."""
    rows = _eps_rows(t)
    near = {n: v for n, v in rows.items() if v[2] <= COMPARABLE}
    if not near:
        raise ValueError("tensor.layernorm.near_constant_x / eps_compare leave no row whose variance is comparable "
                         "to eps")
    checks, said = [], []
    for name, (ea, eb, ratio, _, dx) in rows.items():
        (ta, tb), (ha, hb) = dx["dx_torch"], dx["dx_hand"]
        checks += [times_at_least(CHECK_TOL, float(np.abs(h - tt).max()) / float(np.abs(tt).max()), 1,
                                  f"{name}, eps {g(e)}: hand vs torch with the same eps within {CHECK_TOL:g}")
                   for e, h, tt in ((ea, ha, ta), (eb, hb, tb))]
        if name in near:
            off = max(float(np.abs(ha - tb).max()) / float(np.abs(tb).max()),
                      float(np.abs(hb - ta).max()) / float(np.abs(ta).max()))
            said.append(f"{name}: hand at one eps vs torch at the other off by {g(off)} of the largest |dx|")
            checks.append(times_at_least(off, MATERIALLY, 1, f"{name}: mismatched eps off by at least {MATERIALLY:g}"))
    return judged("; ".join(said), *checks)


@relation("T4/saved", edge=Edge(Move("T4/saved", {"source": HOOKS, "saved": "mean"}, "saved", "mean"),
                                Move("T4/saved", {"source": HOOKS, "saved": "mean"}, "saved", "xhat")))
def layernorm_saves_row_statistics(t):
    """torch's layer-norm node keeps the row's mean and inverse standard deviation (the hand forward's, to 64
    ulps) and none of the named intermediates (variance, x - mean, xhat, y)."""
    hooks = _saved(t, "T4/saved", HOOKS)
    kept = [s for s in hooks if s in INTERMEDIATES]
    stats = {a: _attr(t, "T4/saved", a) for a in ("_saved_result1", "_saved_result2")}
    return judged(f"saved-tensor hooks packed {hooks}; grad_fn._saved_result1 {stats['_saved_result1']}, "
                  f"_saved_result2 {stats['_saved_result2']}",
                  flag("mean" in hooks and "rstd" in hooks, "the hooks saw the mean and the inverse std packed"),
                  flag(not kept, f"no intermediate ({', '.join(INTERMEDIATES)}) packed"
                       + (f": {kept}" if kept else "")),
                  flag(stats == {"_saved_result1": "mean", "_saved_result2": "rstd"},
                       "grad_fn._saved_result1 / _saved_result2 are the mean / inverse std"))
