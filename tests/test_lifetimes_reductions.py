"""Issue 36's L measurements against hand oracles: clearing with zeros (L1), dividing by the microbatch count (L2),
the global element and token counts (L3), the unclassified bytes eager attention saves (L7); each with its
measurement-level bug switch as a negative control."""

import pytest
import torch

from adbench.lifetimes import accumulation, attention_saved, clearing, tokens
from adbench.lifetimes.claims_shapes import quadratic_fit

torch.set_num_threads(1)
DATA = dict(in_features=3, out_features=2, seed=0)


def hand_mse_grad(model, x, y, weights):
    """Oracle: d sum_i w_i * mean_o (x_i W^T + b - y_i)_o^2 / d(W, b), written out: 2 w_i / O r_i x_i and 2 w_i / O r_i."""
    r = model(x).detach() - y  # (N, O)
    scaled = 2.0 * weights[:, None] * r / r.shape[1]
    return torch.cat([(scaled.T @ x).reshape(-1), scaled.sum(0)])


# ---- L1 ----

def test_l1_zero_fill_and_none_give_the_fresh_gradient_and_not_clearing_adds_the_first():
    t = clearing.clearing_table(7, **DATA).set_index("clearing")
    model, x, y = accumulation._problem(7, 3, 2, 0)
    first, second = hand_mse_grad(model, x[:3], y[:3], torch.full((3,), 1 / 3, dtype=torch.float64)), \
        hand_mse_grad(model, x[3:], y[3:], torch.full((4,), 1 / 4, dtype=torch.float64))
    assert t.loc["zero_grad(set_to_none=True)", "max_abs_diff_vs_fresh"] == 0
    assert t.loc["zero_grad(set_to_none=False)", "bitwise_equal"]
    assert t.loc["not cleared", "max_abs_diff_vs_fresh"] == pytest.approx(first.abs().max().item(), rel=1e-12)
    assert t.loc["not cleared", "fresh_grad_norm"] == pytest.approx(second.norm().item(), rel=1e-12)
    bad = clearing.clearing_table(7, bug="zero_grad forgotten", **DATA).set_index("clearing")  # negative control
    assert bad.loc["zero_grad(set_to_none=False)", "max_abs_diff_vs_fresh"] > 0.01


# ---- L2 ----

def test_l2_dividing_by_the_count_is_exact_only_for_equal_microbatches():
    s = accumulation.measure_l2(7, [3, 4], nanogpt_steps=2, nanogpt_micro=2, equal_split=[4, 4],
                                **DATA)["schemes"].set_index("scheme")
    model, x, y = accumulation._problem(7, 3, 2, 0)
    full = hand_mse_grad(model, x, y, torch.full((7,), 1 / 7, dtype=torch.float64))
    halves = hand_mse_grad(model, x, y, torch.tensor([1 / 6] * 3 + [1 / 8] * 4, dtype=torch.float64))  # (m1 + m2) / 2
    assert s.loc["means / microbatch count", "max_abs_diff_vs_full"] == pytest.approx(
        (halves - full).abs().max().item(), rel=1e-12)
    assert s.loc["equal sizes, means / microbatch count", "max_abs_diff_vs_full"] < 1e-15
    bad = accumulation.measure_l2(7, [3, 4], nanogpt_steps=2, nanogpt_micro=2, equal_split=[4, 4],
                                  bug="microbatch slices overlap", **DATA)["schemes"].set_index("scheme")
    assert bad.loc["equal sizes, means / microbatch count", "max_abs_diff_vs_full"] > 1e-3  # negative control


# ---- L3 ----

def test_l3_sums_over_loss_elements_not_examples():
    r = accumulation.rank_reductions([2, 2, 3], **DATA).set_index("reduction")
    assert r.loc["sum of rank sums / loss elements", "divisor"] == 14
    assert r.loc["sum of rank sums / loss elements", "max_abs_diff_vs_single_process"] < 1e-15
    # / 7 instead of / 14: twice the gradient, so off by exactly the gradient's largest entry
    model, x, y = accumulation._problem(7, 3, 2, 0)
    full = hand_mse_grad(model, x, y, torch.full((7,), 1 / 7, dtype=torch.float64))
    assert r.loc["sum of rank sums / examples", "max_abs_diff_vs_single_process"] == pytest.approx(
        full.abs().max().item(), rel=1e-12)
    bad = accumulation.rank_reductions([2, 2, 3], bug="sums divided by the example count", **DATA)
    assert bad.set_index("reduction").loc["sum of rank sums / loss elements", "divisor"] == 7  # negative control


def test_l3_token_means_weight_ranks_not_tokens():
    t = tokens.token_table(2, 4, [8, 5], **DATA).set_index("reduction")
    model, x, y = accumulation._problem(16, 3, 2, 0)
    valid = torch.cat([torch.ones(8), torch.ones(5), torch.zeros(3)]).to(torch.float64)
    glob = hand_mse_grad(model, x, y, valid / 13)
    ranked = hand_mse_grad(model, x, y, torch.cat([valid[:8] / 8, valid[8:] / 5]) / 2)  # each rank's mean weighs 1/2
    assert t.loc["average of rank token means", "max_abs_diff_vs_single_process"] == pytest.approx(
        (ranked - glob).abs().max().item(), rel=1e-12)
    assert t.loc["summed token-loss numerators / summed valid tokens", "max_abs_diff_vs_single_process"] < 1e-15
    bad = tokens.token_table(2, 4, [8, 5], bug="padding counted in the global token count", **DATA)
    assert bad.set_index("reduction").iloc[1].max_abs_diff_vs_single_process > 1e-3  # negative control
    with pytest.raises(ValueError, match="lifetimes.tokens.valid"):
        tokens.token_table(2, 4, [9, 5], **DATA)


# ---- L7 ----

def test_l7_saved_bytes_fit_a_quadratic_and_a_fused_kernel_keeps_none():
    s = attention_saved.attention_saved([4, 8, 32], 1, 0, grown_batch=2)["saved"]
    D, H = 768, 12  # GPT2Config() defaults, the oracle's own constants
    assert (s.parameter_bytes == 4 * (D * 3 * D + 3 * D + D * D + D)).all()  # c_attn and c_proj, fp32
    one, two = (s[s.batch == b].sort_values("seq_len").activation_bytes.to_numpy() for b in (1, 2))
    assert (two == 2 * one).all()  # every saved activation carries the batch axis
    a, b, c = quadratic_fit(s[s.batch == 1].seq_len.to_numpy(), one)
    assert c >= H * 4  # at least one (1, H, T, T) fp32 score matrix
    fused = attention_saved.attention_saved([4, 8, 32], 1, 0, bug="fused attention kernel")["saved"]
    _, _, c_fused = quadratic_fit(fused[fused.batch == 1].seq_len.to_numpy(), fused[fused.batch == 1].activation_bytes.to_numpy())
    assert abs(c_fused) < 1e-6  # negative control: SDPA keeps no T x T tensor
    with pytest.raises(ValueError, match="three"):
        quadratic_fit(s.seq_len.to_numpy()[:2], one[:2])


# ---- L5 ----

def test_l5_versions_count_writes_and_match_the_engine_error():
    from adbench.lifetimes import saved_values

    v = saved_values.version_table([2.0, 3.0], 1.0)
    inplace = v[v["write"].str.startswith("in place")]
    assert (inplace.version_after - inplace.version_before == inplace.writes).all()  # +1 per add_
    assert (inplace.error_at_version == inplace.version_after).all() and inplace.raised.all()
    out = v[~v["write"].str.startswith("in place")].iloc[0]
    assert out.version_after == out.version_before and not out.raised  # control: x + 1 touches nothing
    bad = saved_values.version_table([2.0, 3.0], 1.0, bug="edit made on a copy")  # negative control
    assert (bad.version_after == 0).all() and not bad.raised.any()


def test_l5_exp_hands_its_output_to_the_hook_and_retain_graph_keeps_the_saved_values():
    from adbench.lifetimes import saved_values

    s = saved_values.saved_by_table([2.0, 3.0]).set_index("op")
    assert (s.loc["exp(x)", "saves_output"], s.loc["exp(x)", "saves_input"]) == (1, 0)
    assert (s.loc["sin(x)", "saves_output"], s.loc["sin(x)", "saves_input"]) == (0, 1)  # cos(x) needs x
    life = saved_values.lifetime_table([2.0, 3.0]).set_index("case")
    # exp(x * x): MulBackward saves x twice, ExpBackward its output: three float64 [2] tensors
    assert life.loc["backward(retain_graph=True)", "alive_bytes_after"] == 3 * 2 * 8
    assert life.loc["backward()", "alive_after"] == 0
    assert life.loc["backward(retain_graph=True), then the graph dropped", "alive_after"] == 0
    bad = saved_values.lifetime_table([2.0, 3.0], bug="retain_graph dropped").set_index("case")
    assert bad.loc["backward(retain_graph=True)", "alive_after"] == 0  # negative control
