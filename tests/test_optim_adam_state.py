"""O3 measured: a real optimizer's state tensors, against the bytes its parameters' shapes predict."""

import numpy as np
import pytest
import torch

from adbench.optim import adam_state, first_step

LAYERS = [8, 16, 4]


def analytic_elements(layers):
    """Parameter elements of the MLP: weights in x out plus biases out, per layer."""
    return sum(a * b + b for a, b in zip(layers, layers[1:]))


def test_adamw_state_is_lazy_then_two_fp32_moments_per_parameter():
    r = adam_state.adam_state(LAYERS, 4, 1e-3, 0, "AdamW")
    sums = r["adam_bytes"].set_index("phase")
    P = analytic_elements(LAYERS)
    before, after = sums.loc["before_step"], sums.loc["after_step"]
    assert before.state_entries == 0 and before.moment_bytes == 0             # nothing before the first step
    assert after.state_entries == 2 * (len(LAYERS) - 1)                       # every weight and bias
    assert after.param_elements == P and after.moment_bytes == 2 * 4 * P      # exp_avg + exp_avg_sq, fp32
    assert after.total_bytes_per_param == 16 and before.total_bytes_per_param == 8
    assert after.bookkeeping_bytes == 4 * after.state_entries                 # one fp32 scalar `step` each
    st = r["adam_state"]
    moments = st[(st.phase == "after_step") & st.shape_like_param]
    assert set(moments.entry) == {"exp_avg", "exp_avg_sq"} and set(moments.dtype) == {"float32"}
    assert (moments.entry_bytes == 4 * moments.numel).all()


def test_sgd_negative_control_holds_no_moments():
    # plain SGD keeps no per-parameter state: the same accounting must read 8 bytes per parameter
    sums = adam_state.adam_state(LAYERS, 4, 1e-3, 0, "SGD")["adam_bytes"].set_index("phase")
    assert sums.loc["after_step", "moment_bytes"] == 0 and sums.loc["after_step", "total_bytes_per_param"] == 8


def test_unknown_optimizer_names_the_config_key():
    with pytest.raises(ValueError, match="optim.o3.adam_state.optimizer"):
        adam_state.adam_state(LAYERS, 4, 1e-3, 0, "Sgdd")


def test_adam_first_step_equals_the_bias_corrected_formula_and_the_uncorrected_one_is_caught():
    d = first_step.adam_first_step(LAYERS, 4, 1e-3, 0)
    assert len(d) == analytic_elements(LAYERS) and set(d.dtype) == {"float32"}
    # oracle: the first update from zero state is lr * g / (|g| + eps) (m_hat = g, v_hat = g^2)
    oracle = 1e-3 * d.grad / (d.grad.abs() + 1e-8)
    step = d.param_before - d.param_after
    assert np.allclose(step, oracle, rtol=0, atol=4 * np.finfo(np.float32).eps * d.param_before.abs().max())
    assert np.allclose(d.exp_avg, 0.1 * d.grad, rtol=1e-6) and np.allclose(d.exp_avg_sq, 1e-3 * d.grad ** 2, rtol=1e-6)
    # negative control: without bias correction the hand step is (1 - b1) / sqrt(1 - b2) = 3.16 times the real one
    bad = first_step.adam_first_step(LAYERS, 4, 1e-3, 0, bug=first_step.FIRST_STEP_BUGS[0])
    assert np.median(bad.hand_step / step) == pytest.approx(0.1 / np.sqrt(1e-3), rel=1e-3)


def test_state_bytes_by_optimizer_and_a_read_before_the_step_is_caught():
    P = analytic_elements(LAYERS)
    d = first_step.state_by_optimizer(LAYERS, 4, 1e-3, 0).set_index("optimizer")
    assert (d.param_elements == P).all() and (d.param_bytes == 4 * P).all()
    assert list(d.state_bytes) == [0, 4 * P, 8 * P]                          # SGD, momentum, Adam: 0, 4P, 8P
    assert d.loc["Adam", "bookkeeping_bytes"] == 4 * 2 * (len(LAYERS) - 1)  # one fp32 `step` per parameter tensor
    bad = first_step.state_by_optimizer(LAYERS, 4, 1e-3, 0, bug=first_step.STATE_BUGS[0])
    assert (bad.state_bytes == 0).all()
    assert torch.get_default_dtype() == torch.float32                        # the MLP is fp32, as the claim reads
