"""The tensor checking tables (T2 output layer and fused cross-entropy, T3 causal mask, projections and fused
attention, T4 epsilon) against independent oracles (numpy / analytic, torch float64), with negative controls."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from adbench.tensor import epsilon, masking, qkv, rules, sdpa, vocab

torch.set_num_threads(1)
F64 = torch.float64
TENSOR = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())["tensor"]
SOFTMAX, ATT, LN = TENSOR["softmax"], TENSOR["attention"], TENSOR["layernorm"]


def _np_softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


# ---- T2: the output matrix ----

def test_every_vocabulary_row_gets_dz_times_h_and_dh_has_the_hidden_width():
    cfg = SOFTMAX["output_layer"]
    t = vocab.output_layer(**cfg)
    gen = torch.Generator().manual_seed(cfg["seed"])                # the same draws, by hand in numpy
    w = torch.randn(cfg["vocab"], cfg["width"], dtype=F64, generator=gen).numpy()
    h = torch.randn(cfg["width"], dtype=F64, generator=gen).numpy()
    dz = _np_softmax(w @ h) - np.eye(cfg["vocab"])[cfg["target"]]   # analytic p - onehot
    g = t["output_grads"]
    dW = g[g.matrix == "dW"].pivot(index="row", columns="col", values="torch").to_numpy()
    dh = g[g.matrix == "dh"].sort_values("col").torch.to_numpy()
    assert np.abs(dW - np.outer(dz, h)).max() < 1e-15 and np.abs(dh - w.T @ dz).max() < 1e-15
    assert dh.shape == (cfg["width"],) != (cfg["vocab"],)
    rows = t["output_rows"]
    assert (rows.dW_row_nonzero_entries_torch == cfg["width"]).all() and (rows.dW_row_norm_torch > 0).all()
    only_target = np.outer(dz, h) * np.eye(cfg["vocab"])[cfg["target"]][:, None]   # control: the target row only
    assert np.abs(dW - only_target).max() > 1e-3


def test_fused_cross_entropy_is_finite_where_the_naive_formula_is_not():
    z, target = SOFTMAX["overflow_logits"], SOFTMAX["target"]
    f = vocab.fused_cross_entropy(z, target).set_index(["method", "dtype"])
    za = np.array(z)
    shifted = za - za.max()                                 # analytic logsumexp(z) - z[target], on z - max(z)
    hand = math.log(np.exp(shifted).sum()) - shifted[target]
    fused64, fused32 = f.loc[("F.cross_entropy", "float64")], f.loc[("F.cross_entropy", "float32")]
    assert fused64.loss == pytest.approx(hand, abs=1e-15) and fused64.loss_finite and fused64.grad_finite
    assert fused32.loss == pytest.approx(hand, abs=1e-6) and fused32.loss_finite and fused32.grad_finite
    assert fused64.max_grad_diff < 1e-15
    naive = f.loc["naive log(exp(z) / sum exp(z))"]
    assert not naive.loss_finite.any() and not naive.grad_finite.any()   # control: exp(1000) overflows


# ---- T3: mask, projections, fused kernel ----

def test_causal_mask_gives_exact_zeros_and_no_nan_with_either_fill():
    t = masking.causal_mask(ATT["q"], ATT["k"], ATT["v"], ATT["upstream"], ATT["mask_fill"])
    s = t["mask_summary"].set_index(["fill", "mask"])
    for fill in ("-inf", "large negative finite"):
        r = s.loc[(fill, "causal")]
        assert r.masked_prob_max == 0.0 and r.masked_dS_max_abs == 0.0 and r.masked_dM_max_abs == 0.0
        assert r.nan_count == 0 and r.all_finite
    m = t["mask"]
    causal = m[(m["mask"] == "causal") & (m.fill == "-inf")].set_index(["row", "col"])
    assert causal.loc[(0, 0), "A"] == 1.0                   # analytic: query 0 sees key 0 only
    Q, K, V = (torch.tensor(ATT[n], dtype=F64) for n in "qkv")
    unmasked = torch.softmax(Q @ K.T / math.sqrt(Q.shape[1]), dim=-1)   # row 1 has no future key
    assert causal.loc[(1, 1), "A"] == pytest.approx(unmasked[1, 1].item(), abs=1e-16)
    control = s.loc[("-inf", "causal, row 0 fully masked")]
    assert control.nan_count > 0 and not control.all_finite  # the no-NaN check can fail


def test_dx_is_the_sum_of_the_three_projection_routes():
    cfg = ATT["projections"]
    p = qkv.projection_routes(**cfg).set_index("variant")
    assert p.loc["all three routes", "max_abs_diff"] < 1e-14
    gen = torch.Generator().manual_seed(cfg["seed"])       # oracle: torch autograd.grad, built here
    x = torch.randn(cfg["tokens"], cfg["model_width"], dtype=F64, generator=gen).requires_grad_()
    w = [torch.randn(cfg["model_width"], cfg["head_width"], dtype=F64, generator=gen) for _ in range(3)]
    g = torch.randn(cfg["tokens"], cfg["head_width"], dtype=F64, generator=gen)
    q, k, v = (x @ wi for wi in w)
    o = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]
    (dx,) = torch.autograd.grad(o, x, g)
    assert p.loc["all three routes", "torch_dX_norm"] == pytest.approx(dx.norm().item(), rel=1e-14)
    for r in qkv.ROUTES:                                    # controls: each dropped route is missed by its size
        row = p.loc[f"without the {r} route"]
        assert row.rel_diff > 0.1
        assert row.rel_diff * row.torch_dX_norm == pytest.approx(row.dropped_route_norm, rel=1e-12)


def test_fused_attention_backward_matches_the_explicit_formulas():
    f = sdpa.fused_attention(ATT["q"], ATT["k"], ATT["v"], ATT["upstream"])
    Q, K, V, G = (torch.tensor(ATT[n], dtype=F64) for n in ("q", "k", "v", "upstream"))
    leaves = [t.clone().requires_grad_() for t in (Q, K, V)]
    (torch.softmax(leaves[0] @ leaves[1].T / math.sqrt(2), -1) @ leaves[2]).backward(G)   # explicit autograd
    for name, ref in zip(("dQ", "dK", "dV"), leaves):
        fused = f[f.matrix == name].torch.to_numpy().reshape(ref.shape)
        assert np.abs(fused - ref.grad.numpy()).max() < 1e-15
    assert f.kernel.nunique() == 1 and f.kernel.iloc[0]
    bug = rules.attention_backward(Q, K, V, G, forget_scale=True)   # control: a wrong hand rule is caught
    assert np.abs(f[f.matrix == "dQ"].torch.to_numpy() - bug["dQ"].flatten().numpy()).max() > 0.1


# ---- T4: epsilon ----

def _np_dx(x, gamma, g, e):
    x, gamma, g = map(np.array, (x, gamma, g))
    d, r = len(x), 1 / math.sqrt(x.var() + e)
    xhat, u = (x - x.mean()) * r, g * gamma
    return r / d * (d * u - u.sum() - xhat * (u * xhat).sum())


def test_layernorm_dx_moves_with_eps_only_when_the_variance_is_near_eps():
    t = epsilon.eps_sensitivity(LN["x"], LN["gamma"], LN["beta"], LN["upstream"], LN["near_constant_x"],
                                LN["eps_compare"])
    for (row, e), grp in t["eps"].groupby(["row", "eps"]):
        x = LN["x"] if row == "documented row" else LN["near_constant_x"]
        assert np.abs(grp.dx_torch.to_numpy() - _np_dx(x, LN["gamma"], LN["upstream"], e)).max() < 1e-9 * max(
            1.0, np.abs(grp.dx_torch).max())
    s = t["eps_effect"].set_index("row")
    assert s.loc["nearly constant row", "dx_rel_change"] > 0.1
    assert s.loc["documented row", "dx_rel_change"] < 1e-4
    same = epsilon.eps_sensitivity(LN["x"], LN["gamma"], LN["beta"], LN["upstream"], LN["near_constant_x"],
                                   [LN["eps_compare"][0]] * 2)["eps_effect"]
    assert (same.dx_rel_change == 0).all()                 # control: one eps twice moves nothing
