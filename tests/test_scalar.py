"""Scalar family against independent oracles: torch float64 and analytic formulas."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from adbench.scalar import numeric, probes, reuse
from adbench.scalar.dual import Dual, count_ops
from adbench.scalar.tape import Tape, Value, graph_size
from conftest import values

A, B = 1.5, -2.0
SCALAR = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())["scalar"]
# measure_s7's and measure_s8's later tables, from the config (the tests below vary the rest)
S7_EXTRA = {k: SCALAR["directional"][k] for k in ("orthogonal_to", "small_delta", "dropout", "relu_at", "mutations")}
S8_EXTRA = {k: SCALAR[k] for k in ("modes_seed", "vjp_v")}


def torch64_grad(a, b):
    ta = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(b, dtype=torch.float64, requires_grad=True)
    torch.tanh(ta * tb + ta).backward()
    return ta.grad.item(), tb.grad.item()


def gradient_check(grads, a=A, b=B, tol=1e-15):
    """The one check the correct tape passes and every bug must fail."""
    return all(abs(g - t) <= tol for g, t in zip(grads, torch64_grad(a, b)))


def test_tape_matches_torch_float64_and_the_analytic_rule():
    _, ga, gb = probes.tape_gradients(A, B)
    assert gradient_check((ga, gb))
    d = 1 - math.tanh(A * B + A) ** 2
    assert ga == pytest.approx(d * (B + 1), abs=1e-16) and gb == pytest.approx(d * A, abs=1e-16)


@pytest.mark.parametrize("bug", [{"overwrite": True}, {"order": "forward"}])
def test_the_same_check_catches_both_bugs(bug):
    _, ga, gb = probes.tape_gradients(A, B, **bug)
    assert not gradient_check((ga, gb))


def test_overwrite_bug_keeps_only_the_route_through_m():
    _, ga, gb = probes.tape_gradients(A, B, overwrite=True)
    d = 1 - math.tanh(A * B + A) ** 2
    assert ga == pytest.approx(d * B, abs=1e-16)  # route a -> m only
    assert gb == pytest.approx(d * A, abs=1e-16)  # b has one path: unaffected


def test_wrong_order_leaves_leaves_at_zero():
    assert probes.tape_gradients(A, B, order="forward")[1:] == (0.0, 0.0)


def test_s1_float32_differs_from_float64_by_float32_rounding():
    v = probes.measure_s1(A, B, 0.1)["values"].set_index("quantity").value
    assert 1e-9 < v["torch32_abs_diff"] < 1e-6
    assert v["central_abs_diff"] == pytest.approx(abs(v["central_dL_da"] - v["tape_dL_da"]))


def test_s3_routes_sum_to_the_tape_gradient():
    v = probes.measure_s3(A, B)["values"].set_index("quantity").value
    assert v["route_sum"] == pytest.approx(torch64_grad(A, B)[0], abs=1e-16)


def test_s5_slopes_follow_truncation_order_and_valley_has_a_floor():
    r = numeric.measure_s5(A, B, [10.0 ** -k for k in range(1, 13)], [1e-4, 1e-1])
    v = r["values"].set_index("quantity").value
    assert abs(v["forward_slope"] - 1) < 0.02 and abs(v["central_slope"] - 2) < 0.01
    sweep = r["sweep"]
    best = sweep.central_err.idxmin()
    assert 0 < best < len(sweep) - 1  # errors rise on both sides of the floor
    # truncation side: central error ~ h^2 |f'''| / 6, with f''' from torch float64 triple grad
    a = torch.tensor(A, dtype=torch.float64, requires_grad=True)
    g1 = torch.autograd.grad(torch.tanh(a * B + a), a, create_graph=True)[0]
    g2 = torch.autograd.grad(g1, a, create_graph=True)[0]
    g3 = torch.autograd.grad(g2, a)[0].item()
    assert sweep.central_err[1] == pytest.approx(1e-4 * abs(g3) / 6, rel=1e-3)


def test_s6_complex_step_and_its_controls():
    r = numeric.measure_s6(A, B, [1e-1, 1e-8, 1e-250], 2.0)
    v = r["values"].set_index("quantity").value
    exact = torch64_grad(A, B)[0]
    assert abs(float(v["est_h1e-250"]) - exact) <= 2 * np.spacing(abs(exact))
    assert float(v["tanh_deriv_1.5"]) == pytest.approx(1 - math.tanh(1.5) ** 2, abs=1e-16)
    assert float(v["abs_+2"]) == 0.0  # the silent failure: real slope is 1
    assert float(v["relu_branch_+2"]) == 1.0 and float(v["relu_branch_-2"]) == 0.0
    assert v["max_exception"] == "TypeError"


def test_s7_control_errors_equal_delta_times_direction_component():
    r = numeric.measure_s7(seed=3, rows=6, cols=8, directions=5, h=1e-5, control_coordinate=3, control_delta=0.1,
                           **S7_EXTRA)
    d = r["directions"]
    assert (d.abs_error < 1e-8).all()
    injected = (d.corrupted_dot_v - d.grad_dot_v).abs()
    assert np.allclose(d.corrupted_abs_error, injected, atol=1e-8)
    assert (d.corrupted_abs_error > 100 * d.abs_error).all()
    v = r["values"].set_index("quantity").value
    assert v["control_coord0_error"] == 0.0  # the corrupted coordinate is 3: coordinate 0 sees nothing
    assert 0 < v["control_coord0_fd_error"] < 1e-8  # against a central difference: noise only
    hit = numeric.measure_s7(seed=3, rows=6, cols=8, directions=5, h=1e-5, control_coordinate=0, control_delta=0.1,
                             **S7_EXTRA)
    assert abs(hit["values"].set_index("quantity").value["control_coord0_error"] - 0.1) < 1e-12  # control: bug at 0


def test_s8_both_modes_match_torch_and_counts_match_the_graph():
    x = [1.5, -2.0, 0.25, -0.75]
    r = numeric.measure_s8(x, **S8_EXTRA)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    torch.tanh(xt[0] * xt[1] + xt[2] * xt[2] + xt[3] * xt[3]).backward()
    m = r["modes"]
    assert np.allclose(m.forward_mode, xt.grad.numpy(), atol=1e-16, rtol=0)
    assert np.allclose(m.reverse_mode, xt.grad.numpy(), atol=1e-16, rtol=0)
    with Tape() as tape:
        leaves = [Value(v) for v in x]
        numeric._s8_loss(leaves)
    assert (m.forward_ops == tape.ops).all()  # one forward-mode op per tape op node


def test_dual_product_rule_and_counter():
    with count_ops() as c:
        out = Dual(3.0, 1.0) * Dual(4.0, 0.0) + Dual(1.0, 0.0)
    assert out == Dual(13.0, 4.0) and c.ops == 2


def test_s10_micrograd_counts_and_gradients():
    cfg = dict(sizes=[3, 4, 4, 1], seed=0, inputs=[[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0],
               [1.0, 1.0, -1.0]], targets=[1.0, -1.0, -1.0, 1.0])
    r = probes.measure_s10({"a": 2.0, "b": -3.0, "c": 10.0}, cfg, reuse_x=0.5)
    v = r["values"].set_index("quantity").value
    # relu(a*b + c)*a: grad = relu'(.)*b*a + relu(.) when active; analytic -2 at (2, -3, 10)
    assert v["a_grad_accumulate"] == (-3.0 * 2.0 + (2.0 * -3.0 + 10.0)) == v["a_grad_torch"]
    assert v["a_grad_overwrite"] == -3.0 * 2.0  # only the product route survives
    # node count from micrograd's construction, derived independently of the tape
    n_in, sizes, E = 3, cfg["sizes"], len(cfg["inputs"])
    per_example = sizes[1] * (3 * n_in + 1)  # const x_i, mul, add per input, relu
    for i in range(1, len(sizes) - 1):
        per_example += sizes[i + 1] * (2 * sizes[i] + (i < len(sizes) - 2))
    loss_nodes = E * 3 + 2 + (E - 1)  # (y - t): const + add; **2; then sum from 0
    params = sum(sizes[i + 1] * (sizes[i] + 1) for i in range(len(sizes) - 1))
    assert v["mlp_params"] == params
    assert v["mlp_nodes"] == E * per_example + loss_nodes + params
    # tape gradients against torch float64 on the same weights
    tape_grads = r["mlp_grads"].tape_grad.to_numpy()
    assert np.abs(tape_grads - r["mlp_grads"].torch_float32_grad.to_numpy()).max() < 1e-4


def test_graph_size_counts_each_reused_node_once():
    with Tape() as tape:
        a = Value(2.0)
        out = a * a + a
    assert graph_size(out) == 3 == tape.nodes


S7 = dict(rows=6, cols=8, directions=5, h=1e-5, control_coordinate=3, control_delta=0.1, **S7_EXTRA)


def test_s2_output_change_and_f_at_x():
    v = values(probes.measure_s2(3.0, [0.1, 0.01]))
    oracle = torch.tensor(3.1, dtype=torch.float64) ** 2 - torch.tensor(3.0, dtype=torch.float64) ** 2
    assert v["change_nudge1"] == oracle.item() and v["f_at_x"] == 9.0
    assert abs(v["change_nudge1"] - 0.61) < 1e-14                                  # analytic 2xh + h^2
    assert values(probes.measure_s2(3.0, [0.2]))["change_nudge1"] != pytest.approx(0.61)  # negative control


def test_s5_central_error_at_1e8_four_digits():
    v = values(numeric.measure_s5(1.5, -2.0, [1e-1, 1e-4, 1e-8], [1e-4, 1e-1]))
    a = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    torch.tanh(a * -2.0 + a).backward()
    f = lambda x: math.tanh(x * -2.0 + x)  # noqa: E731
    oracle = abs((f(1.5 + 1e-8) - f(1.5 - 1e-8)) / 2e-8 - a.grad.item())
    assert v["central_err_h1e-08_4sig"] == v["central_err_h1e-08"] == pytest.approx(oracle, abs=1e-16)  # 1 ulp of g
    assert 1e-11 < oracle < 1e-8                      # cancellation noise, far above truncation (~1e-17)
    assert v["central_err_h1e-08_4sig"] != v["central_err_h1e-04"]  # negative control: another step


def _s7_oracle(seed: int):
    """Independent draw with the global torch generator; g from autograd; slopes by torch float64."""
    torch.manual_seed(seed)
    A = torch.randn(6, 8, dtype=torch.float64)
    x = torch.randn(8, dtype=torch.float64)
    dirs = [(lambda v: v / v.norm())(torch.randn(8, dtype=torch.float64)) for _ in range(5)]
    xr = x.clone().requires_grad_(True)
    (torch.tanh(A @ xr) ** 2).sum().backward()
    loss = lambda z: (torch.tanh(A @ z) ** 2).sum().item()  # noqa: E731
    return [((loss(x + 1e-5 * v) - loss(x - 1e-5 * v)) / 2e-5, (xr.grad @ v).item()) for v in dirs]


def test_s7_direction_table_against_torch_oracle():
    v = values(numeric.measure_s7(seed=47, **S7))
    for d, (slope, gv) in enumerate(_s7_oracle(47)):
        assert v[f"grad_dot_v_d{d}"] == pytest.approx(gv, abs=1e-15)
        assert v[f"numerical_slope_d{d}"] == pytest.approx(slope, abs=2e-10)  # FD rounding noise only
        assert v[f"abs_error_d{d}"] == abs(v[f"numerical_slope_d{d}"] - v[f"grad_dot_v_d{d}"]) < 1e-9
    other = values(numeric.measure_s7(seed=0, **S7))                          # negative control
    assert all(abs(other[f"grad_dot_v_d{d}"] - gv) > 1e-6 for d, (_, gv) in enumerate(_s7_oracle(47)))


def test_s7_fsum_loss_is_order_independent():
    A = np.array([[1e16, 1.0, -1e16]])
    assert numeric.directional_loss(A, np.array([1.0, 1.0, 1.0])) == math.tanh(1.0) ** 2
    assert float(np.sum(np.tanh(A @ np.array([1.0, 1.0, 1.0])) ** 2)) != math.tanh(1.0) ** 2  # naive sum loses it


@pytest.mark.parametrize("x", [0.5, -1.25])
def test_reused_value_dependency_counting(x):
    trace = pd.concat([reuse.dependency_trace(x, m) for m in ("counted", "eager")], ignore_index=True)
    v = dict(reuse.reuse_items(trace, reuse.torch_x_grad(x)))
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (torch.relu(t * t) + torch.tanh(t * t)).backward()
    analytic = 2 * x * (1.0 + (1 - math.tanh(x * x) ** 2))                  # both routes through the square
    assert v["reuse_x_grad_counted"] == pytest.approx(t.grad.item(), abs=1e-15) == pytest.approx(analytic)
    assert v["reuse_square_consumers"] == 2 and v["reuse_square_waits_for_both"] == "true"
    assert v["reuse_x_grad_eager"] == pytest.approx(2 * x * 1.0)            # only branch A's route reached x
    assert v["reuse_early_x_grad_incomplete"] == "true"                      # negative control: the bug shows
    last = trace[(trace["mode"] == "counted")].step.max()
    assert trace[(trace["mode"] == "counted") & (trace.step == last)].active.iloc[0] == "square"


def test_reused_value_bad_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        reuse.dependency_trace(0.5, "lazy")


def test_s2_derivative_is_the_tapes_and_l5_stale_gradient():
    from adbench.lifetimes.graph import measure_l5, silent_stale_gradient
    t = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    (t ** 2).backward()
    assert values(probes.measure_s2(3.0, [0.1]))["derivative_at_x"] == t.grad.item() == 6.0
    assert values(probes.measure_s2(4.0, [0.1]))["derivative_at_x"] == 8.0          # control: follows x
    storage, stale = silent_stale_gradient([2.0, 3.0], 1.0)
    assert storage == [3.0, 4.0] and stale == [2 * 3.0, 2 * 4.0]                   # analytic 2 (x + shift)
    v = values(measure_l5([2.0, 3.0], 1.0, 2.0))
    assert "modified by an inplace operation" in v["inplace_error"]                # without the hooks: refused
    assert [v["stale_grad_0"], v["stale_grad_1"]] != [v["retain_graph_grad_0"], v["retain_graph_grad_1"]]


def test_s4_bug_variants_against_the_analytic_gradient():
    a, b = 0.5, -1.25
    out = probes.measure_s4(a, b, [b])
    t = out["variants"].set_index("variant")
    x = torch.tensor([a, b], dtype=torch.float64, requires_grad=True)
    torch.tanh(x[0] * x[1] + x[0]).backward()  # the oracle: torch float64 autograd of tanh(ab + a)
    assert t.loc["analytic", "dL_da"] == pytest.approx(x.grad[0].item(), rel=1e-15)
    assert t.loc["correct +=", ["dL_da", "dL_db"]].tolist() == pytest.approx(x.grad.tolist(), rel=1e-12)
    assert t.loc["BUG = (overwrite)", "dL_da"] != pytest.approx(x.grad[0].item())  # the bug loses a route
    assert values(out)["exceptions_raised"] == 0  # neither bug raises: they are silent


def test_s4_overwrite_factor_is_b_over_b_plus_one():
    """Oracle: the two routes by hand, dL/dz * b (kept by the overwrite) over dL/dz * (b + 1)."""
    a, bs = 1.5, [-3.0, -2.0, -0.5, 2.0]
    d = probes.overwrite_factor(a, bs)
    for r in d.itertuples():
        dz = 1 - math.tanh(a * r.b + a) ** 2
        assert r.correct_dL_da == pytest.approx(dz * (r.b + 1), rel=1e-14)
        assert r.overwrite_dL_da == pytest.approx(dz * r.b, rel=1e-14)
        assert r.overwrite_over_correct == pytest.approx(r.b / (r.b + 1), rel=1e-14)
    assert d.set_index("b").overwrite_over_correct[-2.0] == 2.0  # exactly: -2d / (-2d + d)
    assert probes.overwrite_factor(a, [-1.0]).overwrite_over_correct.isna().all()  # the correct gradient is 0
