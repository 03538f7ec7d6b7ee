"""Tensor family: every hand-written backward rule against torch float64 autograd, plus negative controls."""

import math
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from adbench.verdicts.verdict import compare
from adbench.verdicts.documented import load
from adbench.tensor import probes, rules
from conftest import values

torch.set_num_threads(1)
F64 = torch.float64
X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
W = [[1.0, -1.0], [2.0, 0.0], [0.5, 3.0]]
G1 = [[1.0, 2.0], [-1.0, 0.5]]
Q, K, V = [[1.0, 0.0], [0.5, 1.0]], [[1.0, 1.0], [0.0, 2.0]], [[2.0, -1.0], [0.0, 3.0]]
G3 = [[1.0, -0.5], [-1.0, 2.0]]
LN = dict(x=[1.0, 2.0, 4.0], gamma=[0.5, 1.5, -1.0], beta=[0.25, -0.5, 1.0], upstream=[1.0, -2.0, 0.5], eps=1e-5)
TENSOR = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())["tensor"]
# the arguments of the later T2-T4 tables, from the config (the tests below vary the documented inputs)
T2_EXTRA = {"output_layer": TENSOR["softmax"]["output_layer"]}
T3_EXTRA = {k: TENSOR["attention"][k] for k in ("mask_fill", "projections")}
T4_EXTRA = {k: TENSOR["layernorm"][k] for k in ("near_constant_x", "eps_compare")}


def t(a):
    return torch.tensor(a, dtype=F64)


def agrees(hand, ref, tol=1e-14):
    """The one check every rule must pass and every broken rule must fail."""
    return hand.shape == ref.shape and (hand - ref).abs().max().item() <= tol


def autograd(fn, *inputs, upstream):
    """Gradients of <fn(*inputs), upstream> for every input, by torch float64 autograd."""
    leaves = [x.clone().requires_grad_() for x in inputs]
    fn(*leaves).backward(upstream)
    return [x.grad for x in leaves]


@pytest.fixture(params=[0, 1, 2])
def rng(request):
    return torch.Generator().manual_seed(request.param)


# ---- T1: matrix product ----

def test_matmul_rule_matches_autograd_on_document_and_random_inputs(rng):
    for x, w, g in [(t(X), t(W), t(G1)),
                    (torch.randn(4, 5, generator=rng, dtype=F64), torch.randn(5, 3, generator=rng, dtype=F64),
                     torch.randn(4, 3, generator=rng, dtype=F64))]:
        dx, dw = rules.matmul_backward(x, w, g)
        rx, rw = autograd(torch.matmul, x, w, upstream=g)
        assert agrees(dx, rx) and agrees(dw, rw)


def test_matmul_without_the_transposes_is_caught():
    x, w, g = torch.randn(3, 3, dtype=F64), torch.randn(3, 3, dtype=F64), torch.randn(3, 3, dtype=F64)
    rx, rw = autograd(torch.matmul, x, w, upstream=g)
    assert not agrees(g @ w, rx) and not agrees(x @ g, rw)  # square, so only the values can tell


def test_t1_path_sums_equal_the_matrix_entries():
    v = probes.measure_t1(X, W, G1)["values"].set_index("quantity").value
    rx, rw = autograd(torch.matmul, t(X), t(W), upstream=t(G1))
    assert v["path_dX_0_1"] == rx[0, 1].item() and v["path_dW_0_1"] == rw[0, 1].item()
    assert v["max_diff_dX"] == 0 and v["max_diff_dW"] == 0


# ---- T2: softmax cross-entropy ----

def test_softmax_xent_rule_matches_autograd(rng):
    for z in ([2.0, 0.5, -1.0], torch.randn(7, generator=rng, dtype=F64).tolist()):
        p, loss, dz = rules.softmax_xent_backward(z, 0)
        zt = t(z).requires_grad_()
        ref = torch.nn.functional.cross_entropy(zt[None], torch.tensor([0]))
        ref.backward()
        assert loss == pytest.approx(ref.item(), abs=1e-15)
        assert agrees(t(dz), zt.grad, 1e-16) and abs(sum(dz)) < 1e-15


def test_softmax_gradient_without_the_target_term_is_caught():
    p, _, _ = rules.softmax_xent_backward([2.0, 0.5, -1.0], 0)
    zt = t([2.0, 0.5, -1.0]).requires_grad_()
    torch.nn.functional.cross_entropy(zt[None], torch.tensor([0])).backward()
    assert not agrees(t(p), zt.grad, 1e-16)  # forgot "- 1 at the target"


def test_naive_softmax_overflows_and_the_shift_fixes_it():
    with pytest.raises(OverflowError):
        rules.softmax_naive([1000.0, 999.0, 998.0])
    e = [math.exp(-k) for k in range(3)]  # analytic: softmax is shift-invariant
    assert rules.softmax_shifted([1000.0, 999.0, 998.0]) == pytest.approx([v / sum(e) for v in e], abs=1e-16)
    red = dict(tokens=[1, 2], padded=1, width=2, seed=0)
    v = values(probes.measure_t2([2.0, 0.5, -1.0], 0, [1000.0, 999.0, 998.0], red, **T2_EXTRA))
    assert v["naive_overflow"].startswith("OverflowError")


def test_token_reductions_sum_is_count_times_mean():
    """Oracle: the per-token gradients by hand, x_iᵀ (p_i - onehot_i), summed or divided by the counted tokens."""
    d = probes.token_reductions(vocab=3, tokens=[1, 4], padded=2, width=2, seed=0)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 2, dtype=F64, generator=gen)
    w = torch.randn(2, 3, dtype=F64, generator=gen)
    y = torch.randint(3, (4,), generator=gen)
    for r in d.itertuples():
        p = torch.softmax(x[:r.counted] @ w, 1)
        per_token = x[:r.counted].T @ (p - torch.nn.functional.one_hot(y[:r.counted], 3))  # ignored tokens add nothing
        assert r.grad_norm_sum == pytest.approx(per_token.norm().item(), rel=1e-13)
        assert r.grad_norm_mean == pytest.approx(per_token.norm().item() / r.counted, rel=1e-13)
        assert r.sum_over_mean == pytest.approx(r.counted, rel=1e-13)
    assert list(zip(d.tokens, d.ignored)) == [(1, 0), (4, 0), (4, 2)]  # padding only where a token is left


# ---- T3: one attention head ----

def attention_ref(q, k, v, g):
    return autograd(lambda q, k, v: torch.softmax(q @ k.T / math.sqrt(q.shape[1]), -1) @ v, q, k, v, upstream=g)


def test_attention_rule_matches_autograd(rng):
    cases = [(t(Q), t(K), t(V), t(G3))] + [tuple(torch.randn(4, 3, generator=rng, dtype=F64) for _ in range(4))]
    for q, k, v, g in cases:
        h = rules.attention_backward(q, k, v, g)
        rq, rk, rv = attention_ref(q, k, v, g)
        assert agrees(h["dQ"], rq) and agrees(h["dK"], rk) and agrees(h["dV"], rv)
        assert h["dS"].sum(dim=1).abs().max().item() < 1e-14  # shift invariance of each softmax row


def test_softmax_jvp_equals_the_explicit_jacobian(rng):
    a = torch.softmax(torch.randn(3, 5, generator=rng, dtype=F64), -1)
    g = torch.randn(3, 5, generator=rng, dtype=F64)
    explicit = torch.stack([(torch.diag(r) - torch.outer(r, r)) @ gr for r, gr in zip(a, g)])
    assert agrees(rules.softmax_jvp(a, g), explicit)


def test_forgetting_the_scale_is_caught_on_dq_and_dk_but_not_dv():
    q, k, v, g = t(Q), t(K), t(V), t(G3)
    bug = rules.attention_backward(q, k, v, g, forget_scale=True)
    rq, rk, rv = attention_ref(q, k, v, g)
    assert not agrees(bug["dQ"], rq) and not agrees(bug["dK"], rk)
    assert agrees(bug["dV"], rv)  # a check that looked only at V would miss the bug
    assert (bug["dQ"] / rq).flatten().tolist() == pytest.approx([math.sqrt(2)] * 4, rel=1e-14)
    control = probes.measure_t3(Q, K, V, G3, **T3_EXTRA)["control"].set_index("gradient")
    assert control.caught.to_dict() == {"dQ": True, "dK": True, "dV": False}


# ---- T4: layer normalization ----

def test_layernorm_rule_matches_autograd(rng):
    cases = [tuple(t(LN[k]) for k in ("x", "gamma", "beta", "upstream"))]
    cases += [tuple(torch.randn(6, generator=rng, dtype=F64) for _ in range(4))]
    for x, ga, be, g in cases:
        h = rules.layernorm_backward(x, ga, be, g, LN["eps"])
        rx, rg, rb = autograd(lambda x, ga, be: torch.nn.functional.layer_norm(x, x.shape, ga, be, LN["eps"]),
                              x, ga, be, upstream=g)
        assert agrees(h["dx"], rx) and agrees(h["dgamma"], rg) and agrees(h["dbeta"], rb)
        assert abs(h["dx"].sum().item()) < 1e-14
        # analytic statistics
        assert h["mean"].item() == pytest.approx(x.mean().item(), abs=1e-15)
        assert h["rstd"].item() == pytest.approx(1 / math.sqrt(x.var(unbiased=False).item() + LN["eps"]), rel=1e-14)


def test_layernorm_without_the_variance_path_is_caught():
    x, ga, be, g = (t(LN[k]) for k in ("x", "gamma", "beta", "upstream"))
    h = rules.layernorm_backward(x, ga, be, g, LN["eps"])
    u = g * ga
    broken = h["rstd"] / 3 * (3 * u - u.sum())  # dropped the xhat * sum(u * xhat) reduction
    (rx,) = autograd(lambda x: torch.nn.functional.layer_norm(x, (3,), ga, be, LN["eps"]), x, upstream=g)
    assert agrees(h["dx"], rx) and not agrees(broken, rx)


def test_every_documented_t_quantity_is_measured():
    doc = load()
    made = {("T1", q) for q in probes.measure_t1(X, W, G1)["values"].quantity}
    red = dict(tokens=[1, 2], padded=1, width=2, seed=0)
    t2 = probes.measure_t2([2.0, 0.5, -1.0], 0, [1000.0, 999.0, 998.0], red, **T2_EXTRA)
    made |= {("T2", q) for q in t2["values"].quantity}
    made |= {("T3", q) for q in probes.measure_t3(Q, K, V, G3, **T3_EXTRA)["values"].quantity}
    made |= {("T4", q) for q in probes.measure_t4(**LN, **T4_EXTRA)["values"].quantity}
    wanted = {(i, q) for i, q in zip(doc.id, doc.quantity) if i in ("T1", "T2", "T3", "T4")}
    assert wanted and wanted <= made


def test_every_exact_t_row_matches_the_documented_table():
    cfg = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())["tensor"]
    sections = {1: "matmul", 2: "softmax", 3: "attention", 4: "layernorm"}  # ID number -> its `tensor:` section
    measured = [getattr(probes, f"measure_t{i}")(**cfg[key])["values"] for i, key in sections.items()]
    doc = load()
    cmp = compare(doc[doc.id.isin(["T1", "T2", "T3", "T4"])], pd.concat(measured))
    assert (cmp.status == "match").all(), cmp[cmp.status != "match"][["id", "quantity", "documented", "measured"]]
