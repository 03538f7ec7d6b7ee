"""The T family's conclusions beside other implementations (issue 28): the naive and shifted softmax, the output
matrix, the fused cross-entropy and attention kernels, the causal mask, the three projections of one input and
layer norm's epsilon. Listed in family.py's `claims`, which the registry reads.
"""

from __future__ import annotations

import numpy as np

from ..claims import (EPS32, EPS64, Edge, Flip, Move, Moves, at_least, at_most, flag, g, judged, mat, qv, relation,
                      same_float, sources, times_at_least, truthy, ulps_away)
from .claims import HAND, MATRICES, TORCH

sources("T2/values", {"naive_overflow": "naive Python softmax", **{f"p_{i}": HAND for i in range(3)},
                      **{f"stable_p_{i}": HAND for i in range(3)}}, by="quantity")
sources("T2/output_grads", MATRICES, by="matrix")
sources("T2/output_rows", {"vocab_row": "input: index", "is_target": "input", "p": HAND, "dz_hand": HAND,
                           "dW_row_norm_torch": TORCH, "dW_row_norm_hand": HAND, "dW_row_nonzero_entries_torch": TORCH})
FUSED_XENT = "torch cross-entropy"
sources("T2/fused", {"method": "input", "dtype": "input", "loss": FUSED_XENT, "hand_shifted_loss": HAND,
                     "abs_diff": f"{FUSED_XENT}, {HAND}", "loss_finite": FUSED_XENT, "grad_finite": FUSED_XENT,
                     "max_grad_diff": f"{FUSED_XENT}, {HAND}"})
sources("T3/mask", {**{c: "input" for c in ("fill", "fill_value", "mask", "row", "col", "masked")},
                    **{c: TORCH for c in ("S", "A", "dS", "dM")}, "hand_dM": "hand rule on torch's A"})
sources("T3/mask_summary", {**{c: "input" for c in ("fill", "fill_value", "mask", "masked_entries")},
                            **{c: TORCH for c in ("masked_prob_max", "masked_dS_max_abs", "masked_dM_max_abs",
                                                  "nan_count", "all_finite")}})
sources("T3/projections", {"variant": "input", "routes": "input", "max_abs_diff": f"{HAND}, {TORCH}",
                           "rel_diff": f"{HAND}, {TORCH}", "dropped_route_norm": HAND, "torch_dX_norm": TORCH})
FUSED_SDPA = "torch scaled_dot_product_attention"
sources("T3/fused", {**MATRICES, "torch": FUSED_SDPA, "abs_diff": f"{HAND}, {FUSED_SDPA}", "kernel": FUSED_SDPA},
        by="matrix")
sources("T4/eps", {"row": "input", "eps": "input", "feature": "input", "variance": HAND, "rstd": HAND,
                   "dx_torch": TORCH, "dx_hand": HAND})

EPS = {"float32": EPS32, "float64": EPS64}
# dropping a route must cost a material share of dX, not a rounding-size part: at least 1 % of its norm
MATERIAL = 0.01


def _worst_ulps(hand: np.ndarray, torch: np.ndarray) -> float:
    """max |hand - torch| in float64 ulps of the matrix's largest torch entry (at least 1)."""
    return float(np.abs(hand - torch).max()) / (EPS64 * max(float(np.abs(torch).max()), 1.0))


def _off_by(t, table: str, name: str, r: int, c: int, ulps: float) -> float:
    """Entry (r, c) of torch's `name` moved by `ulps` ulps of the matrix's largest torch entry."""
    torch = mat(t[table], name, "torch")
    return float(torch[r, c]) + ulps * EPS64 * max(float(np.abs(torch).max()), 1.0)


def _matrices_agree(d, names, what: str) -> list:
    return [at_most(_worst_ulps(mat(d, n, "hand"), mat(d, n, "torch")), 64,
                    f"{n}: max |hand - {what}| in ulps of its largest entry", "ulps", 16) for n in names]


# ---- T2 ---------------------------------------------------------------------------------------------------
def _stable(t, col: str) -> np.ndarray:
    return mat(t["T2/matrices"], "stable_p", col).ravel()


@relation("T2/values", "T2/matrices",
          edge=Flip("T2/matrices", {"matrix": "stable_p", "col": 1}, "hand", holding=lambda t: _stable(t, "torch")[1],
                    failing=lambda t: ulps_away(_stable(t, "torch")[1], 256)))
def naive_overflows_shifted_finite(t):
    """exp of the raw logits overflows in Python floats; the max-shifted softmax gives ordinary probabilities,
    torch.softmax's (float64) to rounding."""
    naive = str(qv(t["T2/values"], "naive_overflow"))
    hand, torch = _stable(t, "hand"), _stable(t, "torch")
    return judged(f"naive softmax: {naive}; shifted {np.round(hand, 12).tolist()} vs torch.softmax "
                  f"{np.round(torch, 12).tolist()}",
                  flag(naive.startswith("OverflowError"), "the naive softmax raises OverflowError"),
                  flag(bool(np.all(np.isfinite(hand)) and np.all((hand > 0) & (hand < 1))),
                       "the shifted probabilities are finite, between 0 and 1"),
                  *(same_float(a, b, 64, EPS64, f"shifted p[{j}] vs torch.softmax")
                    for j, (a, b) in enumerate(zip(hand, torch))))


def _weakest_row(t) -> dict:
    """The non-target vocabulary row with the smallest torch gradient norm."""
    rows = t["T2/output_rows"]
    r = rows[~rows.is_target.map(truthy)].sort_values("dW_row_norm_torch").iloc[0]
    return {"vocab_row": int(r.vocab_row)}


def _row_norms_to(x: float) -> Moves:
    """The weakest non-target row's torch and hand gradient norms both set to x (they stay equal)."""
    return Moves(tuple(Move("T2/output_rows", _weakest_row, c, x) for c in ("dW_row_norm_torch", "dW_row_norm_hand")))


@relation("T2/output_rows", "T2/output_grads", edge=Edge(_row_norms_to(np.nextafter(0.0, 1.0)), _row_norms_to(0.0)))
def every_vocab_row_gets_gradient(t):
    """Every vocabulary row of torch's dW has a gradient norm above zero (the target's and every other), each
    row's norm |dz_j| ||h|| and each entry dz_j h_k as the hand logit rule gives them; dh has the hidden width D
    (not V) and equals W^T dz."""
    rows, d = t["T2/output_rows"], t["T2/output_grads"]
    dw, dh = mat(d, "dW", "torch"), mat(d, "dh", "torch").ravel()
    V, D = dw.shape
    if V == D:
        raise ValueError("tensor.softmax.output_layer.vocab equals its width: dh's shape cannot tell them apart")
    non_target = rows[~rows.is_target.map(truthy)]
    live = int((rows.dW_row_norm_torch > 0).sum())
    return judged(f"dW {V}x{D}: {live} of {len(rows)} rows with a gradient, row norms "
                  f"{[float(f'{x:.4g}') for x in rows.dW_row_norm_torch]}; dh has {len(dh)} entries",
                  flag(len(rows) == V and len(non_target) == V - 1 and V >= 2,
                       "one target row among V >= 2 vocabulary rows"),
                  # fragile only if the smallest norm were subnormal: within the smallest normal float64 of zero
                  at_least(rows.dW_row_norm_torch.min(), 0.0, "every vocabulary row's gradient norm above zero",
                           "norm", float(np.finfo(np.float64).tiny), strict=True),
                  *(same_float(r.dW_row_norm_torch, r.dW_row_norm_hand, 64, EPS64,
                               f"row {r.vocab_row}: torch's norm vs |dz| ||h||") for r in rows.itertuples()),
                  flag(len(dh) == D, "dh has the hidden width"),
                  *(same_float(a, b, 64, EPS64, f"dW[{j}, {k}] vs dz[{j}] h[{k}]")
                    for (j, k), a, b in zip(np.ndindex(dw.shape), dw.ravel(), mat(d, "dW").ravel())),
                  *(same_float(a, b, 64, EPS64, f"dh[{k}] vs (W^T dz)[{k}]")
                    for k, (a, b) in enumerate(zip(dh, mat(d, "dh").ravel()))))


def _fused(t, method: str):
    d = t["T2/fused"]
    return d[d.method == method]


@relation("T2/fused", edge=Flip("T2/fused", {"method": "F.cross_entropy", "dtype": "float32"}, "loss",
                                holding=lambda t: _fused(t, "F.cross_entropy").hand_shifted_loss.iloc[0],
                                failing=lambda t: ulps_away(_fused(t, "F.cross_entropy").hand_shifted_loss.iloc[0],
                                                            256, EPS32)))
def fused_xent_finite(t):
    """On logits whose naive exp overflows (the naive formula's rows are not finite), torch's cross-entropy is
    finite in float32 and float64 and equals the max-shifted hand loss and gradient to that dtype's rounding."""
    naive, fused = t["T2/fused"][t["T2/fused"].method != "F.cross_entropy"], _fused(t, "F.cross_entropy")
    if naive.empty or naive.loss_finite.map(truthy).any():
        raise ValueError("the naive formula did not overflow: tensor.softmax.overflow_logits are not large enough")
    checks = [flag(set(fused.dtype) >= set(EPS), "float32 and float64 measured")]
    for r in fused.itertuples():
        eps = EPS[r.dtype]
        checks += [flag(truthy(r.loss_finite) and truthy(r.grad_finite), f"{r.dtype}: loss and gradient finite"),
                   same_float(r.loss, r.hand_shifted_loss, 64, eps, f"{r.dtype}: loss vs the shifted hand loss"),
                   # p - onehot lies in [-1, 1]: the gradient's rounding scale is eps itself
                   at_most(r.max_grad_diff / eps, 64, f"{r.dtype}: gradient vs p - onehot, in ulps", "ulps", 16)]
    return judged("; ".join(f"{r.method} {r.dtype}: loss {g(r.loss)} (hand {g(r.hand_shifted_loss)}), finite "
                            f"{r.loss_finite}" for r in t["T2/fused"].itertuples()), *checks)


# ---- T3 ---------------------------------------------------------------------------------------------------
@relation("T3/matrices", edge=Flip("T3/matrices", {"matrix": "dQ", "row": 1, "col": 1}, "hand",
                                   holding=lambda t: mat(t["T3/matrices"], "dQ", "torch")[1, 1],
                                   failing=lambda t: _off_by(t, "T3/matrices", "dQ", 1, 1, 256)))
def hand_attention_grads_match_torch64(t):
    d = t["T3/matrices"]
    diffs = {n: float(np.abs(mat(d, n, "hand") - mat(d, n, "torch")).max()) for n in ("dQ", "dK", "dV")}
    return judged("max |hand - torch64|: " + ", ".join(f"{n} {v:.4g}" for n, v in diffs.items()),
                  *_matrices_agree(d, ("dQ", "dK", "dV"), "torch64"))


def _masked(t):
    m = t["T3/mask"]
    return m[m["mask"] == "causal"]


def _unmasked_cell(t) -> dict:
    m = _masked(t)
    r = m[~m.masked.map(truthy)].iloc[-1]
    return {"fill": r.fill, "mask": "causal", "row": int(r.row), "col": int(r.col)}


def _cell_of(t, where: dict, col: str) -> float:
    m = t["T3/mask"]
    hit = m[np.logical_and.reduce([m[k] == v for k, v in where.items()])]
    return float(hit[col].iloc[0])


@relation("T3/mask", "T3/mask_summary",
          edge=Flip("T3/mask", _unmasked_cell, "dM", holding=lambda t: _cell_of(t, _unmasked_cell(t), "hand_dM"),
                    failing=lambda t: ulps_away(_cell_of(t, _unmasked_cell(t), "hand_dM"), 256)))
def causal_mask_zero_no_nan(t):
    """Under a causal mask, with -inf and with a large negative finite fill: every masked probability, score
    gradient and softmax-input gradient exactly zero, the unmasked ones the hand rule's, no NaN anywhere; the
    fully masked control row shows the NaN count can see one."""
    m, s = _masked(t), t["T3/mask_summary"]
    causal, control = s[s["mask"] == "causal"], s[s["mask"] != "causal"]
    if control.empty or not (control.nan_count > 0).all():
        raise ValueError("the fully masked control row shows no NaN: the NaN count cannot be trusted")
    fills = m.groupby("fill").fill_value.first()
    checks = [flag(bool(np.isinf(fills).any() and np.isfinite(fills).any()), "a -inf and a finite fill measured")]
    for fill, e in m.groupby("fill"):
        hidden, seen = e[e.masked.map(truthy)], e[~e.masked.map(truthy)]
        checks += [flag(len(hidden) > 0 and bool((hidden[["A", "dS", "dM"]] == 0).all().all()),
                        f"{fill}: masked A, dS and dM exactly zero"),
                   *(same_float(r.dM, r.hand_dM, 64, EPS64, f"{fill}: dM[{r.row}, {r.col}] vs the hand rule")
                     for r in seen.itertuples())]
    checks += [flag(int(r.nan_count) == 0, f"{r.fill}: no NaN in backward") for r in causal.itertuples()]
    return judged("; ".join(f"{r.fill}: {r.masked_entries} masked, largest masked probability {r.masked_prob_max}, "
                            f"dS {r.masked_dS_max_abs}, NaNs {r.nan_count}" for r in s.itertuples()), *checks)


def _projection(t, variant: str):
    d = t["T3/projections"]
    return d[d.variant == variant]


@relation("T3/projections", edge=Flip("T3/projections", {"variant": "all three routes"}, "rel_diff",
                                      holding=lambda t: _projection(t, "all three routes").rel_diff.iloc[0],
                                      failing=256 * EPS64))
def input_grad_sums_three_routes(t):
    """torch's dX through the projected head equals dQ Wq^T + dK Wk^T + dV Wv^T (hand rules) to rounding; a sum
    missing any one route misses at least 1 % of dX."""
    d = t["T3/projections"]
    full, dropped = _projection(t, "all three routes"), d[d.variant != "all three routes"]
    return judged("||sum - torch dX|| / ||torch dX||: " + ", ".join(f"{r.variant} {g(r.rel_diff)}"
                                                                   for r in d.itertuples()),
                  flag(len(full) == 1 and len(dropped) == 3, "the full sum and each route dropped measured"),
                  *(at_most(r.rel_diff / EPS64, 64, "all three routes vs torch's dX, in ulps of its norm", "ulps", 16)
                    for r in full.itertuples()),
                  *(times_at_least(r.rel_diff, MATERIAL, 1, f"{r.variant}: off by at least {MATERIAL:.0%}")
                    for r in dropped.itertuples()))


@relation("T3/fused", edge=Flip("T3/fused", {"matrix": "dK", "row": 1, "col": 0}, "torch",
                                holding=lambda t: mat(t["T3/fused"], "dK", "hand")[1, 0],
                                failing=lambda t: _off_by(t, "T3/fused", "dK", 1, 0, 256)))
def fused_attention_matches_formulas(t):
    """scaled_dot_product_attention's O, dQ, dK, dV (CPU float64) equal the explicit formulas' to rounding."""
    d = t["T3/fused"]
    kernel = str(d.kernel.iloc[0])
    if "Flash" not in kernel and "Efficient" not in kernel:
        raise ValueError(f"torch ran no fused attention kernel here ({kernel})")
    return judged(f"kernel {kernel}; max |hand - fused|: " + ", ".join(
        f"{n} {float(np.abs(mat(d, n, 'hand') - mat(d, n, 'torch')).max()):.4g}" for n in ("O", "dQ", "dK", "dV")),
        *_matrices_agree(d, ("O", "dQ", "dK", "dV"), "fused"))


# ---- T4 ---------------------------------------------------------------------------------------------------
# "comparable" to eps: variance at most ten times the larger eps; "much larger": four orders above it
COMPARABLE, MUCH_LARGER = 10.0, 1e4
MATERIALLY, SMALL = 0.1, 1e-3  # every entry moves by a tenth of the row's largest |dx| / by at most 1e-3 of it


def _eps_rows(t) -> dict:
    """{row: (eps_a, eps_b, variance / larger eps, rstd (a, b), {column: dx (a, b)})}."""
    d = t["T4/eps"]
    out = {}
    for name, r in d.groupby("row", sort=False):
        ea, eb = sorted(r.eps.unique(), reverse=True)[:2]
        at = {e: r[r.eps == e].sort_values("feature") for e in (ea, eb)}
        out[name] = (ea, eb, float(r.variance.iloc[0]) / max(ea, eb),
                     tuple(float(at[e].rstd.iloc[0]) for e in (ea, eb)),
                     {c: tuple(at[e][c].to_numpy(float) for e in (ea, eb)) for c in ("dx_torch", "dx_hand")})
    return out


def _moves(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each entry's change between the two eps, as a share of the row's largest |dx| at the first."""
    return np.abs(b - a) / np.abs(a).max()


def _near_cell(t) -> dict:
    """The entry of the comparable row that moves least (torch), at the second eps."""
    name, (ea, eb, _, _, dx) = next((n, v) for n, v in _eps_rows(t).items() if v[2] <= COMPARABLE)
    return {"row": name, "eps": eb, "feature": int(np.argmin(_moves(*dx["dx_torch"])))}


@relation("T4/eps", edge=Flip("T4/eps", _near_cell, "dx_torch",
                              holding=lambda t: _eps_value(t, _near_cell(t), "dx_torch"),
                              failing=lambda t: _eps_value(t, {**_near_cell(t), "eps": _eps_rows(t)[
                                  _near_cell(t)["row"]][0]}, "dx_torch")))
def eps_matters_near_variance(t):
    """Between two eps, torch's and the hand rule's dx (and rstd) move materially in every entry on a row whose
    variance is comparable to eps, and by at most 1e-3 on a row whose variance is four orders above it."""
    rows = _eps_rows(t)
    near = {n: v for n, v in rows.items() if v[2] <= COMPARABLE}
    far = {n: v for n, v in rows.items() if v[2] >= MUCH_LARGER}
    if not near or not far:
        raise ValueError("tensor.layernorm.near_constant_x / eps_compare leave no row comparable to eps and one far "
                         "above it")
    checks, said = [], []
    for name, (ea, eb, ratio, rstd, dx) in rows.items():
        if name not in near and name not in far:
            continue
        moves = {"rstd": np.array([abs(rstd[1] - rstd[0]) / rstd[0]]),
                 **{c: _moves(*dx[c]) for c in ("dx_torch", "dx_hand")}}
        said.append(f"{name} (variance {g(ratio)} x eps {g(max(ea, eb))}): eps {g(ea)} -> {g(eb)} moves dx by "
                    f"{np.round(moves['dx_torch'], 6).tolist()} of its largest entry, rstd by {g(moves['rstd'][0])}")
        for c, m in moves.items():
            checks += ([times_at_least(x, MATERIALLY, 1, f"{name}: {c}[{i}] moves by at least {MATERIALLY:g}")
                        for i, x in enumerate(m)] if name in near else
                       [times_at_least(SMALL, x, 1, f"{name}: {c}[{i}] moves by at most {SMALL:g}")
                        for i, x in enumerate(m)])
    return judged("; ".join(said), *checks)


def _eps_value(t, where: dict, col: str) -> float:
    d = t["T4/eps"]
    hit = d[(d.row == where["row"]) & (d.eps == where["eps"]) & (d.feature == where["feature"])]
    return float(hit[col].iloc[0])
