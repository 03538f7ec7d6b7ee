"""Where the lifetimes mechanisms stop holding: batch-dependent layers under microbatching (L2), dropout
recomputed without its generator state (L6), retain_graph against create_graph (L5), and the bytes a
saved-tensor hook really sees in GPT-2 attention (L7)."""

import pytest
import torch
from torch import nn

from adbench.lifetimes import accumulation, attention_saved, batch_layers, checkpoint_rng, higher_order

torch.set_num_threads(1)
DATA = dict(in_features=3, out_features=2, seed=0)
SMALL = dict(width=16, hidden=32, blocks=4, batch=4, segments=2, seed=0)


# ---- L2: batch-dependent layers ----

def hand_batchnorm_grads(x, y, split, eps=1e-5):
    """Oracle: the L2 net Linear -> BatchNorm (train) written out by hand in float64, full batch and
    size-weighted microbatches, each normalised with its own batch's mean and biased variance."""
    model, _, _ = accumulation._problem(len(x), 3, 2, 0)
    W, b = model.weight.detach().clone().requires_grad_(), model.bias.detach().clone().requires_grad_()
    gamma = torch.ones(2, dtype=torch.float64, requires_grad=True)
    beta = torch.zeros(2, dtype=torch.float64, requires_grad=True)

    def grad(xs, ys, scale):
        h = xs @ W.T + b                                          # (n, 2)
        z = (h - h.mean(0)) / torch.sqrt(h.var(0, unbiased=False) + eps)
        loss = scale * ((gamma * z + beta - ys) ** 2).mean()
        return torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, (W, b, gamma, beta))])

    full = grad(x, y, 1.0)
    bounds = [sum(split[:i]) for i in range(len(split) + 1)]
    weighted = sum(grad(x[a:c], y[a:c], (c - a) / len(x)) for a, c in zip(bounds, bounds[1:]))
    return full, weighted


def test_l2_layers_linear_holds_batchnorm_and_fresh_dropout_break():
    t = batch_layers.layer_table(7, [3, 4], dropout=0.5, **DATA).set_index(["layer", "mode", "reseeded"])
    _, x, y = accumulation._problem(7, 3, 2, 0)
    full, weighted = hand_batchnorm_grads(x, y, [3, 4])
    bn = t.loc[("BatchNorm1d", "train", False)]
    assert bn.max_abs_diff_vs_full == pytest.approx((weighted - full).abs().max().item(), rel=1e-10)
    assert bn.full_grad_norm == pytest.approx(full.norm().item(), rel=1e-12)
    assert bn.max_abs_diff_vs_full > 1e-2
    assert t.loc[("linear only", "train", False), "max_abs_diff_vs_full"] < 1e-15  # L2's own case still holds
    assert t.loc[("BatchNorm1d", "eval", False), "max_abs_diff_vs_full"] < 1e-15   # running stats: per example
    fresh = t.loc[("dropout", "train", False)]
    assert fresh.masks == "differ" and fresh.max_abs_diff_vs_full > 1e-2


def test_l2_layers_reseeded_dropout_matches_only_when_its_masks_do():
    # control: re-seeding makes the microbatch masks the full batch's, element for element, on this
    # build; the gradient then agrees to rounding, so the fresh-mask row's gap is the masks' doing
    t = batch_layers.layer_table(7, [3, 4], dropout=0.5, **DATA).set_index(["layer", "reseeded"])
    row = t.loc[("dropout", True)]
    if row.masks == "equal":
        assert row.max_abs_diff_vs_full < 1e-15
    else:
        assert row.max_abs_diff_vs_full > 0


def test_measure_l2_layers_keeps_l2_tables():
    r = batch_layers.measure_l2_layers(7, [3, 4], nanogpt_steps=4, nanogpt_micro=2, dropout=0.5, **DATA)
    plain = accumulation.measure_l2(7, [3, 4], nanogpt_steps=4, nanogpt_micro=2, **DATA)
    assert r["values"].equals(plain["values"]) and r["schemes"].equals(plain["schemes"])
    assert set(r["layers"].layer) == {"linear only", "BatchNorm1d", "dropout"}


# ---- L6: checkpointed dropout ----

def test_l6_rng_restored_reproduces_plain_exactly_and_unrestored_does_not():
    t = checkpoint_rng.rng_table(dropout=0.3, **SMALL).set_index(["dropout_p", "preserve_rng_state"])
    assert t.loc[(0.3, True), "grads_identical"] and t.loc[(0.3, True), "max_grad_abs_diff_vs_plain"] == 0
    assert not t.loc[(0.3, False), "grads_identical"] and t.loc[(0.3, False), "rel_grad_diff_vs_plain"] > 1e-3
    assert (t.loss_abs_diff_vs_plain == 0).all()  # the forward is the same either way: only backward differs
    assert t.loc[(0.0, False), "grads_identical"]  # control: without dropout there is no state to restore
    assert (t.block_calls == 2 * SMALL["blocks"]).all()  # every segment recomputed once


def test_l6_rng_oracle_plain_gradient_by_hand_masks():
    # oracle for the plain run: the same stack with its dropout masks drawn first and applied by hand
    # (a fixed multiplicative mask), differentiated by torch float64: equal to the plain run's gradient
    p = 0.3
    _, plain, _ = checkpoint_rng.run(p=p, preserve=None, **SMALL)
    torch.manual_seed(SMALL["seed"])
    model = nn.Sequential(*[checkpoint_rng.DropoutBlock(16, 32, p) for _ in range(4)])
    x = torch.randn(4, 16, requires_grad=True)
    torch.manual_seed(SMALL["seed"] + 1)
    masks = [nn.functional.dropout(torch.ones(4, 32), p) for _ in range(4)]  # (B, H) each, drawn in block order
    model, x = model.double(), x.detach().double().requires_grad_()
    h = x
    for blk, m in zip(model, masks):
        h = h + blk.fc2(m.double() * torch.tanh(blk.fc1(h)))
    h.pow(2).mean().backward()
    ref = torch.cat([q.grad.reshape(-1) for q in model.parameters()] + [x.grad.reshape(-1)])
    assert (plain.double() - ref).abs().max().item() < 1e-6  # float32 run against the float64 oracle


def test_measure_l6_memory_rng_adds_the_table():
    r = checkpoint_rng.measure_l6_memory_rng(dropout=0.3, **SMALL)
    assert {"values", "accounting", "segments", "rng"} <= set(r) and len(r["rng"]) == 4


# ---- L5: retain_graph against create_graph ----

def test_l5_only_create_graph_gives_a_differentiable_derivative():
    t = higher_order.higher_order_table(2.0).set_index("flag")
    assert (t.first_derivative == 3 * 2.0 ** 2).all()                     # analytic 3x²
    assert t.loc["create_graph", "second_derivative"] == 6 * t.loc["create_graph", "x"] == 6 * 2.0  # analytic 6x
    assert t.loc["create_graph", "first_requires_grad"] and t.loc["create_graph", "first_grad_fn"] != "None (no graph)"
    r = t.loc["retain_graph"]
    assert not r.first_requires_grad and r.first_grad_fn == "None (no graph)"
    assert r.second_derivative != r.second_derivative  # NaN: no second derivative
    assert "does not require grad" in r.second_grad_error
    assert r.graph_of_y_kept and not t.loc["neither", "graph_of_y_kept"]  # control: without the flag it is freed


# ---- L7: saved-tensor hooks on GPT-2 attention ----

def test_l7_hook_bytes_against_the_shape_formula():
    r = attention_saved.attention_saved([5, 16], 2, 0)
    h = r["hooks"].set_index(["seq_len", "kind"])
    D, H = 768, 12  # GPT2Config() defaults, the oracle's own constants
    for t in (5, 16):
        res, sc = h.loc[(t, "residual")], h.loc[(t, "scores")]
        assert res.bytes == res.tensors * 2 * t * D * 4 and res.tensors > 0   # each B·T·D fp32
        assert sc.bytes == sc.tensors * 2 * H * t * t * 4 and sc.tensors > 0  # each B·H·T·T fp32
    assert h.loc[(5, "parameter"), "bytes"] == h.loc[(16, "parameter"), "bytes"]  # weights do not grow with T
    assert h.loc[(16, "scores"), "bytes"] / h.loc[(5, "scores"), "bytes"] == pytest.approx((16 / 5) ** 2)


def test_l7_kind_of_separates_scores_from_residual_sized_tensors():
    # negative control: a (B, T, T) tensor without the heads, and a (B, T, 4D) MLP tensor, are neither kind
    assert attention_saved.kind_of((1, 12, 5, 5), False, 1, 5, 768, 12) == "scores"
    assert attention_saved.kind_of((12, 5, 64), False, 1, 5, 768, 12) == "residual"
    assert attention_saved.kind_of((1, 5, 5), False, 1, 5, 768, 12) == "other"
    assert attention_saved.kind_of((1, 5, 3072), False, 1, 5, 768, 12) == "other"
    assert attention_saved.kind_of((768, 768), True, 1, 5, 768, 12) == "parameter"
