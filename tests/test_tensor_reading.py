"""The issue-36 T tables (saved operands and statistics, per-token vs per-sequence means, projection weights, heads,
layer norm's independent-division and orthogonality readings) against numpy / finite-difference oracles, each with
the bug switch that must move it as the negative control."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from adbench.tensor import averaging, multihead, probes, qkv, rules, saved

torch.set_num_threads(1)
F64 = torch.float64
TENSOR = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())["tensor"]
MM, SOFTMAX, ATT, LN = TENSOR["matmul"], TENSOR["softmax"], TENSOR["attention"], TENSOR["layernorm"]


def _names(table, source):
    return list(table[table.source == source].saved)


# ---- T1: what the matmul node saves ----

def test_the_matmul_node_keeps_both_operands_and_a_detached_weight_loses_x():
    t = saved.matmul_saved(MM["x"], MM["w"])
    assert sorted(_names(t, "saved_tensors_hooks")) == ["W", "X"]
    attrs = dict(zip(t[t.source == "grad_fn attribute"].slot, t[t.source == "grad_fn attribute"].saved))
    assert attrs == {"_saved_self": "X", "_saved_mat2": "W"}
    bug = saved.matmul_saved(MM["x"], MM["w"], saved.DETACHED_WEIGHT)   # control: only dX is asked for
    assert _names(bug, "saved_tensors_hooks") == ["W"] and "X" not in set(bug.saved)


def test_the_overwrite_bug_keeps_only_the_last_rows_outer_product():
    x, w, g = (torch.tensor(MM[k], dtype=F64) for k in ("x", "w", "upstream"))
    _, dw = rules.matmul_backward(x, w, g)
    _, bad = rules.matmul_backward(x, w, g, rules.OVERWRITE)
    assert np.allclose(dw.numpy(), x.numpy().T @ g.numpy(), atol=0)
    assert np.allclose(bad.numpy(), np.outer(x.numpy()[-1], g.numpy()[-1]), atol=0)


# ---- T2: per-token against per-sequence means ----

def _np_grad(x, y, w, cuts) -> np.ndarray:
    """dL/dW of the mean over `cuts` of each cut's mean cross-entropy: x_s^T (P_s - Y_s) / L_s, averaged."""
    out = np.zeros_like(w)
    for c in cuts:
        z = x[c] @ w
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        out += x[c].T @ (p - np.eye(w.shape[1])[y[c]]) / len(c) / len(cuts)
    return out


def test_token_and_sequence_means_match_numpy_and_differ_only_with_unequal_lengths():
    r = SOFTMAX["reduction"]
    vocab = len(SOFTMAX["logits"])
    t = averaging.token_vs_sequence(vocab, **r)
    gen = torch.Generator().manual_seed(r["seed"])                     # the same draws, by hand in numpy
    n = max(sum(r["tokens"]), max(r["tokens"]) * len(r["tokens"]))
    x = torch.randn(n, r["width"], dtype=F64, generator=gen).numpy()
    w = torch.randn(r["width"], vocab, dtype=F64, generator=gen).numpy()
    y = torch.randint(vocab, (n,), generator=gen).numpy()
    for row, lengths in zip(t.itertuples(), (r["tokens"], [max(r["tokens"])] * len(r["tokens"]))):
        ends = np.cumsum(lengths)
        cuts = [np.arange(e - ln, e) for e, ln in zip(ends, lengths)]
        token = np.linalg.norm(_np_grad(x, y, w, [np.arange(ends[-1])]))
        sequence = np.linalg.norm(_np_grad(x, y, w, cuts))
        assert row.grad_norm_token_mean == pytest.approx(token, rel=1e-12)
        assert row.grad_norm_sequence_mean == pytest.approx(sequence, rel=1e-12)
    unequal, equal = t.iloc[0], t.iloc[1]
    assert abs(unequal.token_over_sequence - 1) > 0.01 and abs(equal.token_over_sequence - 1) < 1e-13
    flat = averaging.token_vs_sequence(vocab, **r, bug=averaging.FLATTENED)   # control: the reduction ignored
    assert abs(flat.iloc[0].token_over_sequence - 1) < 1e-13


# ---- T3: projection weights and heads ----

def _fd(f, a: torch.Tensor, h: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar f at every entry of a."""
    out = np.zeros(a.shape)
    for idx in np.ndindex(*a.shape):
        up, down = a.clone(), a.clone()
        up[idx] += h
        down[idx] -= h
        out[idx] = (f(up) - f(down)) / (2 * h)
    return out


def test_projection_weight_grads_match_finite_differences():
    p = ATT["projections"]
    t = qkv.projection_weights(**p)
    x, w, g = qkv._draws(**p)

    def loss(route, wr):
        ws = {**w, route: wr}
        q, k, v = (x @ ws[r] for r in qkv.ROUTES)
        return float((torch.softmax(q @ k.T / math.sqrt(p["head_width"]), dim=-1) @ v * g).sum())
    for r in qkv.ROUTES:
        m = t[t.matrix == f"dW{r.lower()}"].sort_values(["row", "col"])
        fd = _fd(lambda wr: loss(r, wr), w[r])
        assert np.abs(m.torch.to_numpy().reshape(fd.shape) - fd).max() < 1e-7
        assert np.abs(m.hand.to_numpy() - m.torch.to_numpy()).max() < 1e-13
    bad = qkv.projection_weights(**p, bug=rules.FORGOT_SCALE)       # control: dWq, dWk off, dWv right
    diff = {n: (e.hand - e.torch).abs().max() for n, e in bad.groupby("matrix")}
    assert diff["dWq"] > 1e-3 and diff["dWk"] > 1e-3 and diff["dWv"] < 1e-13


def test_heads_add_into_dx_and_torchs_norm_matches_finite_differences():
    p = ATT["projections"]
    t = multihead.multihead_routes(**p).set_index("variant")
    heads, d = p["model_width"] // p["head_width"], p["head_width"]
    gen = torch.Generator().manual_seed(p["seed"])
    x = torch.randn(p["tokens"], p["model_width"], dtype=F64, generator=gen)
    wq, wk, wv = (torch.randn(p["model_width"], heads * d, dtype=F64, generator=gen) for _ in range(3))
    wo = torch.randn(heads * d, p["model_width"], dtype=F64, generator=gen)
    g = torch.randn(p["tokens"], p["model_width"], dtype=F64, generator=gen)

    def loss(xx):
        q, k, v = xx @ wq, xx @ wk, xx @ wv
        outs = [torch.softmax(q[:, s] @ k[:, s].T / math.sqrt(d), dim=-1) @ v[:, s]
                for s in (slice(h * d, (h + 1) * d) for h in range(heads))]
        return float((torch.cat(outs, dim=1) @ wo * g).sum())
    assert t.loc["all heads", "torch_dX_norm"] == pytest.approx(np.linalg.norm(_fd(loss, x)), rel=1e-8)
    assert t.loc["all heads", "rel_diff"] < 1e-14
    assert all(t.loc[f"without head {h}", "rel_diff"] > 0.01 for h in range(heads))
    bad = multihead.multihead_routes(**p, bug=multihead.OVERWRITE_HEADS).set_index("variant")   # control
    assert bad.loc["all heads", "rel_diff"] > 0.01


# ---- T4: layer norm ----

def _np_layernorm(x, gamma, g, eps):
    x, gamma, g = (np.array(a, dtype=float) for a in (x, gamma, g))
    mean, var = x.mean(), x.var()
    r = 1 / np.sqrt(var + eps)
    xhat, u = (x - mean) * r, g * gamma
    dx = r / len(x) * (len(x) * u - u.sum() - xhat * (u * xhat).sum())
    return xhat, u, r, var, dx


def test_independent_divisions_and_the_eps_order_component_along_xhat():
    out = probes.measure_t4(**LN)
    m = out["matrices"]
    xhat, u, r, var, dx = _np_layernorm(LN["x"], LN["gamma"], LN["upstream"], LN["eps"])
    naive = m[m.matrix == "dx_independent"].sort_values("col")
    torch_dx = m[m.matrix == "dx"].sort_values("col").torch.to_numpy()
    assert np.allclose(naive.hand, r * u, rtol=1e-14) and np.allclose(naive.torch, dx, rtol=1e-12)
    assert np.linalg.norm(r * u - dx) / np.linalg.norm(dx) > 0.01
    # exact arithmetic: dx . xhat = r sum(u xhat) eps / (var + eps), the bound the claim states
    predicted = r * (u * xhat).sum() * LN["eps"] / (var + LN["eps"])
    assert torch_dx @ xhat == pytest.approx(predicted, rel=1e-8)
    bad = probes.measure_t4(**LN, bug=probes.DETACHED_STATS)["matrices"]     # control: torch's dx becomes r u
    bad_dx = bad[bad.matrix == "dx"].sort_values("col").torch.to_numpy()
    assert np.allclose(bad_dx, r * u, rtol=1e-14)


def test_layer_norm_saves_its_statistics_and_the_elementwise_version_saves_xhat():
    t = saved.layernorm_saved(LN["x"], LN["gamma"], LN["beta"], LN["eps"])
    hooks = set(_names(t, "saved_tensors_hooks"))
    assert {"mean", "rstd"} <= hooks and not hooks & {"xhat", "x - mean", "variance", "y"}
    x = np.array(LN["x"])
    attrs = t[t.source == "grad_fn attribute"].set_index("slot").saved
    assert attrs["_saved_result1"] == "mean" and attrs["_saved_result2"] == "rstd"
    assert saved._name(torch.tensor([x.mean()]), {"mean": torch.tensor(x.mean())}) == "mean"   # the oracle's mean
    bad = saved.layernorm_saved(LN["x"], LN["gamma"], LN["beta"], LN["eps"], saved.ELEMENTWISE)   # control
    assert "xhat" in set(_names(bad, "saved_tensors_hooks"))


def test_the_layernorm_bug_switches_change_what_they_name():
    x, gamma, beta, g = (torch.tensor(LN[k], dtype=F64) for k in ("x", "gamma", "beta", "upstream"))
    _, _, r, var, _ = _np_layernorm(LN["x"], LN["gamma"], LN["upstream"], 1e-12)
    hard = rules.layernorm_forward(x, gamma, beta, 1e-12, rules.HARD_CODED_EPS)["rstd"].item()
    assert hard == pytest.approx(1 / math.sqrt(var + torch.nn.LayerNorm(3).eps), rel=1e-15)
    outside = rules.layernorm_forward(x, gamma, beta, LN["eps"], rules.EPS_OUTSIDE_SQRT)["rstd"].item()
    assert outside == pytest.approx(1 / (math.sqrt(var) + LN["eps"]), rel=1e-15)
    assert rules.layernorm_forward(x, gamma, beta, 1e-12)["rstd"].item() == pytest.approx(r, rel=1e-15)
