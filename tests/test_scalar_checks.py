"""The scalar checking tables (S4 dedup, S7 blind spots / dropout / ReLU kink / mutated rules, S8 seeds and
vᵀJ) against independent oracles (torch float64, analytic values), each with a negative control."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml

from adbench.scalar import blind, dedup, mutated, numeric, vjp
from adbench.scalar.tape import Tape, Value, topological

A, B = 1.5, -2.0
SCALAR = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())["scalar"]
DIRECTIONAL = SCALAR["directional"]
F64 = torch.float64


# ---- S4: the sort without its visited set ----

def _grads(table, expr, engine):
    row = table[(table.expression == expr) & (table.engine == engine)].iloc[0]
    return row.dL_da, row.dL_db


def _calls(table, expr, engine):
    t = table[(table.expression == expr) & (table.engine == engine)]
    return dict(zip(t.node, t.closure_calls))


def test_without_visited_set_the_interior_node_runs_twice_and_its_parents_go_wrong():
    t = dedup.dedup_tables(A, B)
    g, c = t["dedup_grads"], t["dedup_calls"]
    expr = "tanh(m) + m, m = a·b"
    d = 1 - math.tanh(A * B) ** 2 + 1                    # analytic dL/dm: the tanh route plus the direct one
    assert _grads(g, expr, "visited set") == pytest.approx((B * d, A * d), abs=1e-15)   # oracle: analytic
    bad = _grads(g, expr, "no visited set")
    # m's first run passes on the direct route alone (dL/dm = 1): a and b receive it on top of the full one
    assert bad == pytest.approx((B * (d + 1), A * (d + 1)), abs=1e-15)
    assert _calls(c, expr, "no visited set")["m = a·b"] == 2 and _calls(c, expr, "visited set")["m = a·b"] == 1
    row = g[(g.expression == expr) & (g.engine == "visited set")].iloc[0]
    ta, tb = torch.tensor(A, dtype=F64, requires_grad=True), torch.tensor(B, dtype=F64, requires_grad=True)
    m = ta * tb
    (torch.tanh(m) + m).backward()                       # oracle: torch float64, built here
    assert (row.dL_da, row.dL_db) == pytest.approx((ta.grad.item(), tb.grad.item()), abs=1e-15)


def test_the_opening_expression_is_unaffected_because_only_a_leaf_is_reused():
    t = dedup.dedup_tables(A, B)
    g, c = t["dedup_grads"], t["dedup_calls"]
    expr = "tanh(a·b + a)"
    assert _grads(g, expr, "no visited set") == _grads(g, expr, "visited set")
    assert set(_calls(c, expr, "no visited set").values()) <= {0, 1}      # the leaf a has no closure to repeat
    order = t["dedup_grads"].set_index(["expression", "engine"]).order_length
    assert order[(expr, "no visited set")] > order[(expr, "visited set")]  # a still enters the order twice
    # negative control: the same "each closure once" check fails on the interior expression
    assert max(_calls(c, "tanh(m) + m, m = a·b", "no visited set").values()) > 1


def test_tape_switch_counts_closures_and_topological_lists_a_node_per_path():
    with Tape(dedup=False) as tape:
        a, b = Value(A), Value(B)
        m = a * b
        out = m.tanh() + m
        out.backward()
    assert tape.closures_run == 4                         # add, tanh, and m twice
    assert [id(n) for n in topological(out, dedup=False)].count(id(m)) == 2
    assert [id(n) for n in topological(out)].count(id(m)) == 1   # control: the default sort deduplicates


# ---- S7: blind spots, dropout, ReLU's kink, mutated rules ----

@pytest.fixture(scope="module")
def s7():
    return numeric.measure_s7(**DIRECTIONAL)


def test_orthogonal_error_hides_from_its_direction_and_shows_in_others(s7):
    b = s7["blind_spots"]
    k = DIRECTIONAL["orthogonal_to"]
    orth = b[b.corruption == "orthogonal"].set_index("direction")
    assert (orth.orthogonal_to == k).all()
    assert orth.corruption_norm.iloc[0] == pytest.approx(DIRECTIONAL["control_delta"], rel=1e-14)
    # oracle: the check's error along v is the corruption's component e·v, here 0 to rounding
    assert abs(orth.loc[k, "abs_error"] - orth.loc[k, "correct_abs_error"]) < 1e-15
    others = orth.drop(index=k)
    assert (others.abs_error - others.error_along_v.abs()).abs().max() < 1e-9
    assert (others.abs_error > 1e6 * others.correct_abs_error).all()
    coord = b[b.corruption == "coordinate"].set_index("direction")
    assert coord.loc[k, "abs_error"] > 1e6 * coord.loc[k, "correct_abs_error"]   # control: not orthogonal, caught


def test_error_below_the_finite_difference_noise_hides_in_every_direction(s7):
    b = s7["blind_spots"]
    small = b[b.corruption == "small"]
    noise = b[b.corruption == "none"].abs_error.max()
    # triangle inequality: the error moves by at most |e·v| <= small_delta, far below the correct check's noise
    assert ((small.abs_error - small.correct_abs_error).abs() <= DIRECTIONAL["small_delta"] + 1e-18).all()
    assert (small.abs_error <= noise + DIRECTIONAL["small_delta"]).all()
    assert DIRECTIONAL["small_delta"] < noise / 10
    big = b[b.corruption == "coordinate"]
    assert (big.abs_error > 1e6 * noise).all()            # control: the same coordinate at 0.1 is caught


def test_dropout_check_fails_with_fresh_masks_and_passes_reseeded(s7):
    d = s7["dropout"]
    A_, x, _, vs = numeric.s7_problem(DIRECTIONAL["seed"], DIRECTIONAL["rows"], DIRECTIONAL["cols"],
                                      DIRECTIONAL["directions"])
    p, seed = DIRECTIONAL["dropout"]["p"], DIRECTIONAL["dropout"]["seed"]
    torch.manual_seed(seed)
    mask = F.dropout(torch.ones(DIRECTIONAL["rows"], dtype=F64), p=p, training=True)   # the same draw, by hand
    u = mask * (torch.tensor(A_) @ torch.tensor(x))
    g = torch.tensor(A_).T @ (mask * 2 * torch.tanh(u) * (1 - torch.tanh(u) ** 2))    # analytic gradient
    re = d[d.masks == "reseeded"]
    assert re.grad_dot_v.tolist() == pytest.approx([float(g @ v) for v in vs], abs=1e-15)
    assert (re.abs_error < 1e-9).all()
    assert (d[d.masks == "fresh"].abs_error > 1e3 * re.abs_error.max()).all()   # control: fresh masks fail


def test_relu_kink_backward_is_zero_where_the_central_difference_is_a_half(s7):
    r = s7["relu_kink"].set_index("x")
    h = DIRECTIONAL["h"]
    assert r.loc[0.0, "torch_backward"] == 0.0
    assert r.loc[0.0, "central_difference"] == pytest.approx((h - 0.0) / (2 * h), abs=1e-12)   # analytic 1/2
    off = r.drop(index=0.0)
    assert (off.abs_diff < 1e-9).all()                    # control: away from the kink the two agree
    assert off.torch_backward.to_dict() == {-1.0: 0.0, 1.0: 1.0}
    assert r.straddles_kink.to_dict() == {-1.0: False, 0.0: True, 1.0: False}


def test_correct_rule_matches_autograd_and_every_mutation_is_caught(s7):
    m = s7["mutations"]
    cfg = DIRECTIONAL["mutations"]
    x, w, c, _ = mutated.mutation_problem(cfg["seed"], cfg["rows"], cfg["width"], cfg["directions"])
    xt, wt = x.clone().requires_grad_(), w.clone().requires_grad_()
    (c * torch.tanh(xt @ wt)).sum().backward()            # oracle: torch's own backward
    ref = torch.cat([xt.grad.flatten(), wt.grad.flatten()])
    g = {b: mutated.mutated_gradient(x, w, c, b, cfg["wrong_scale"]) for b in mutated.BUGS}
    assert (g["correct"] - ref).abs().max() < 1e-15
    assert torch.allclose(g["flipped sign"], -ref, atol=1e-15)
    assert torch.allclose(g["wrong scale"], cfg["wrong_scale"] * ref, atol=1e-15)
    worst = m.groupby("rule").abs_error.max()
    best = m.groupby("rule").abs_error.min()
    assert worst["correct"] < 1e-9
    assert all(best[b] > 1e6 * worst["correct"] for b in mutated.BUGS if b != "correct")


def test_a_dropped_transpose_is_invisible_when_w_is_symmetric():
    """Negative control of the mutation table: the check sees the bug only because W != Wᵀ."""
    x, w, c, _ = mutated.mutation_problem(0, 3, 4, 1)
    sym = (w + w.T) / 2
    assert torch.allclose(mutated.mutated_gradient(x, sym, c, "dropped transpose", 2.0),
                          mutated.mutated_gradient(x, sym, c, "correct", 2.0), atol=1e-15)
    assert not torch.allclose(mutated.mutated_gradient(x, w, c, "dropped transpose", 2.0),
                              mutated.mutated_gradient(x, w, c, "correct", 2.0), atol=1e-6)


def test_blind_corruptions_are_built_as_named():
    vs = [torch.tensor([0.6, 0.8, 0.0], dtype=F64)]
    e = blind.corruptions(3, vs, 1, 0.1, 0, 1e-12)
    assert abs(e["orthogonal"] @ vs[0].numpy()) < 4 * np.finfo(float).eps * 0.1   # rounding of a 0.1-sized dot
    assert np.linalg.norm(e["orthogonal"]) == pytest.approx(0.1, rel=1e-15)
    assert e["small"].tolist() == [0.0, 1e-12, 0.0] and e["coordinate"].tolist() == [0.0, 0.1, 0.0]


# ---- S8: k random forward seeds, and vᵀJ ----

def _torch_s8_grad(x):
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    torch.tanh(xt[0] * xt[1] + xt[2] * xt[2] + xt[3] * xt[3]).backward()
    return xt.grad.numpy()


def test_k_forward_seeds_recover_the_gradient_only_when_k_equals_n():
    x = SCALAR["modes_x"]
    r = numeric.measure_s8(x, SCALAR["modes_seed"], SCALAR["vjp_v"])["reconstruction"].set_index("seeds")
    g = _torch_s8_grad(x)                                 # oracle: torch float64
    n = len(x)
    S = np.random.default_rng(SCALAR["modes_seed"]).standard_normal((n, n))
    for k in range(1, n):
        proj = S[:k].T @ np.linalg.pinv(S[:k].T)         # projector on the span of k seeds
        assert r.loc[k, "err_norm"] == pytest.approx(np.linalg.norm(g - proj @ g), rel=1e-9)
        assert r.loc[k, "err_norm"] > 1e-3 * np.linalg.norm(g)     # k < n: an error is left
    assert r.loc[n, "max_abs_err"] < 1e-15                 # k = n: exact to rounding
    assert r.forward_passes.tolist() == list(range(1, n + 1)) and (r.reverse_backward_passes == 1).all()
    assert (r.forward_ops == 6 * r.index).all() and (r.reverse_closures == 6).all()


def test_nonscalar_backward_needs_v_and_returns_v_times_the_jacobian():
    x, v = SCALAR["modes_x"], SCALAR["vjp_v"]
    t = vjp.vjp_tables(x, v)
    calls = t["nonscalar"].set_index("call").outcome
    assert calls["y.backward()"].startswith("RuntimeError: ") and "scalar outputs" in calls["y.backward()"]
    xa, va = np.array(x), np.array(v)
    prev = np.roll(xa, 1)
    local = 1 - np.tanh(xa * prev) ** 2
    J = np.diag(1 + local * prev)                          # analytic Jacobian of y_i = tanh(x_i x_{i-1}) + x_i
    for i in range(len(x)):
        J[i, (i - 1) % len(x)] += local[i] * xa[i]
    tab = t["vjp"]
    assert tab.backward_v.tolist() == pytest.approx((va @ J).tolist(), abs=1e-15)
    assert tab.v_at_jacobian.tolist() == pytest.approx((va @ J).tolist(), abs=1e-15)
    assert (tab.ones_abs_diff > 1e-3).any()                # control: an all-ones vector is not v
