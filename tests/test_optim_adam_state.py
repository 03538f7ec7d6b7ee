"""O3 measured: a real optimizer's state tensors, against the bytes its parameters' shapes predict."""

import pytest

from adbench.optim import adam_state

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
