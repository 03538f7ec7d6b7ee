"""torch's own GradScaler on the CPU (P5) and 16-bit sums with wider accumulation (P6)."""

import math

import pytest
import torch

from adbench.precision import grad_scaler, wide_sum


@pytest.fixture(scope="module")
def steps():
    return grad_scaler.grad_scaler_table([1.0, -2.0], [0.5, 3.0], 0.1, 0).set_index("step")


def test_grad_scaler_skips_the_overflowing_step_and_halves(steps):
    s1, s2 = steps.loc[1], steps.loc[2]
    start = torch.amp.GradScaler("cpu").get_scale()   # the oracle reads torch's default, as the probe does
    assert s1.scale_before == start and s1.scaled_grad_over_true_grad == start  # backward saw S * dL/dw
    assert s1.inf_injected and not s1.unscaled_all_finite
    assert s1.weights_unchanged and s1.max_abs_weight_change == 0               # the step was skipped
    assert s1.scale_after == start / 2 == s2.scale_before                       # backoff factor 0.5


def test_grad_scaler_finite_step_updates_with_the_unscaled_gradient(steps):
    s2 = steps.loc[2]
    assert not s2.inf_injected and s2.unscaled_all_finite and not s2.weights_unchanged
    assert s2.unscaled_max_abs_diff_vs_true_grad == 0     # a power-of-two scale divides out exactly
    # oracle: w - lr * x by hand, in float32 (the loss is linear: dL/dw = x)
    w, x = torch.tensor([1.0, -2.0]), torch.tensor([0.5, 3.0])
    assert s2.max_abs_weight_change == pytest.approx((0.1 * x).abs().max().item(), rel=1e-6)
    assert s2.max_abs_diff_vs_sgd_step == 0
    assert s2.scale_after == s2.scale_before              # no growth after one clean step


def test_grad_scaler_negative_control_a_clean_first_step_is_taken():
    # without the injected inf the very first step must change the weights and keep the starting scale
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt, scaler = torch.optim.SGD([w], lr=0.1), torch.amp.GradScaler("cpu")
    row = grad_scaler.scaler_step(w, torch.tensor([0.5, 3.0]), opt, scaler, 0.1, None)
    assert not row["weights_unchanged"] and row["scale_after"] == row["scale_before"]
    assert row["max_abs_diff_vs_sgd_step"] == 0


@pytest.mark.parametrize("dtype, stall", [("float16", 2048), ("bfloat16", 256)])
def test_16bit_sum_reaches_the_count_and_the_loop_stalls_where_spacing_reaches_two(dtype, stall):
    t = wide_sum.wide_sum_table(4096, [dtype, "float32"]).set_index("dtype")
    eps = torch.finfo(wide_sum.DTYPES[dtype]).eps
    assert stall == 2 / eps                                  # analytic: the gap above 2/eps is 2
    r = t.loc[dtype]
    assert r.torch_sum == 4096 and r.torch_sum_exact
    assert r.stepwise_sum == r.stepwise_stalls_at == stall and not r.stepwise_exact
    f = t.loc["float32"]                                     # control: a 24-bit significand never stalls here
    assert f.stepwise_sum == 4096 and math.isnan(f.stepwise_stalls_at)


def test_short_sums_do_not_stall():
    # negative control: below the stall point the loop is exact in every format
    t = wide_sum.wide_sum_table(200, ["float16", "bfloat16"])
    assert t.stepwise_exact.all() and t.torch_sum_exact.all()
