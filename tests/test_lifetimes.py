"""Lifetimes family: accumulation, leaves, saved values, checkpoint accounting, shape arithmetic."""

from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from adbench.verdicts.verdict import compare
from adbench.verdicts.documented import load
from adbench.lifetimes import accumulation, checkpoint, checkpoint_probe, checkpoint_timing, graph, shapes
from adbench.lifetimes.accumulation import measure_l2
from conftest import values

torch.set_num_threads(1)
DATA = dict(in_features=3, out_features=2, seed=0)
SMALL = dict(width=32, hidden=64, blocks=4, batch=4, segments=2, seed=0)
HOOKS = dict(seq_lens=[3, 4], batch=1, seed=0)  # L7's saved-tensor probe, tested in test_lifetimes_conditions.py


def analytic_mse_grad(model, x, y):
    """d mean((xWᵀ + b - y)²)/d(W, b) by hand: 2/(N·O) rᵀx and 2/(N·O) Σr."""
    r = model(x).detach() - y  # (N, O)
    scale = 2.0 / r.numel()
    return torch.cat([(scale * r.T @ x).reshape(-1), scale * r.sum(0)])


# ---- L1-L3 ----

def test_l1_second_backward_doubles_and_zero_grad_sets_none():
    v = values(accumulation.measure_l1(7, **DATA))
    assert v["max_abs_g2_minus_2g1"] == 0 and v["max_abs_g2_minus_g1"] > 0
    assert v["grad_after_zero_grad"].startswith("None")


def test_l2_weighted_microbatches_match_the_analytic_full_gradient():
    model, x, y = accumulation._problem(7, 3, 2, 0)
    full = analytic_mse_grad(model, x, y)
    v = values(accumulation.measure_l2(7, [3, 4], nanogpt_steps=40, nanogpt_micro=2, **DATA))
    assert v["full_grad_norm"] == pytest.approx(full.norm().item(), rel=1e-14)
    assert v["weighted_max_diff"] < 1e-15              # rounding level
    assert v["unweighted_max_diff"] > 1e-2             # the negative control is far above rounding
    assert 1.5 < v["unweighted_norm_ratio"] < 2.5      # two means summed: about twice the scale
    assert v["nanogpt_accumulated_max_diff"] < 1e-15
    assert v["nanogpt_unscaled_norm_ratio"] == pytest.approx(40, rel=1e-12)


def test_l3_rank_weights_one_sixth_and_one_eighth_vs_one_seventh():
    model, x, y = accumulation._problem(7, 3, 2, 0)
    per_example = [analytic_mse_grad(model, x[i:i + 1], y[i:i + 1]) for i in range(7)]
    naive = sum(g / 6 for g in per_example[:3]) + sum(g / 8 for g in per_example[3:])
    full = sum(per_example) / 7
    v = values(accumulation.measure_l3([3, 4], equal_split=[4, 4], **DATA))
    assert v["naive_max_diff"] == pytest.approx((naive - full).abs().max().item(), rel=1e-12)
    assert v["weighted_max_diff"] < 1e-15 and v["sum_over_elements_max_diff"] < 1e-15


def test_l3_equal_split_makes_the_naive_average_correct():
    v = values(accumulation.measure_l3([4, 4], equal_split=[4, 4], **DATA))  # the assumption that hides the bug
    assert v["naive_max_diff"] < 1e-15


def test_l3_equal_ranks_table_against_the_analytic_gradient():
    """Oracle: the hand-written MSE gradient of all eight examples; equal ranks need no weights."""
    d = accumulation.equal_ranks([4, 4], **DATA).set_index("reduction")
    model, x, y = accumulation._problem(8, 3, 2, 0)
    full = analytic_mse_grad(model, x, y)
    assert d.loc["average of rank means", "grad_norm"] == pytest.approx(full.norm().item(), rel=1e-14)
    assert (d.max_abs_diff_vs_single_process < 1e-15).all()
    with pytest.raises(ValueError, match="equal_split"):
        accumulation.equal_ranks([3, 4], **DATA)  # unequal sizes are the other table's case


# ---- L4-L5 ----

def test_l4_leaf_and_non_leaf():
    v = values(graph.measure_l4([2.0, 3.0]))
    assert (v["x_is_leaf"], v["y_is_leaf"], v["y_grad_fn"]) == ("True", "False", "MulBackward0")
    assert (v["x_grad_0"], v["x_grad_1"]) == (4.0, 6.0)        # analytic 2x
    assert (v["y_grad_retained_0"], v["y_grad_retained_1"]) == (1.0, 1.0)
    assert v["y_grad_default"].startswith("None")


def test_l5_errors_retain_graph_and_create_graph():
    v = values(graph.measure_l5([2.0, 3.0], 1.0, 2.0))
    assert "is at version 1; expected version 0 instead" in v["inplace_error"]
    assert "Trying to backward through the graph a second time" in v["second_backward_error"]
    assert (v["retain_graph_grad_0"], v["retain_graph_grad_1"]) == (4.0, 6.0)
    assert (v["create_graph_first"], v["create_graph_second"]) == (3 * 2.0 ** 2, 6 * 2.0)


def test_l4_untaken_branch_parameter_gets_no_gradient():
    d = graph.branch_gradients([2.0, 3.0])
    assert (d.grad_is_none == ~d.in_taken_branch).all()
    taken = d[d.in_taken_branch].set_index("input").grad
    assert (taken["x"], taken["-x"]) == (5.0, -5.0)  # analytic: d sum(w x)/dw = sum(x)
    assert set(d[d.in_taken_branch].parameter) == {"w_pos", "w_neg"}  # each parameter once on the path


def test_l5_inplace_cases_refuse_saved_storage_only():
    from adbench.lifetimes import inplace

    d = inplace.inplace_cases([2.0, 3.0], 1.0).set_index("case")
    assert (d.raised == d.edits_saved_storage).all()
    assert d[d.raised].message.str.contains("is at version 1; expected version 0").all()
    assert d[~d.raised].grad_equals_unedited.all()
    # oracle for the cases let through: the analytic gradient of the forward that ran
    assert inplace._add_saves_nothing([2.0, 3.0], 1.0, edit=True).tolist() == [1.0, 1.0]
    x = torch.tensor([2.0, 3.0], dtype=torch.float64)
    assert torch.equal(inplace._exp_saves_output([2.0, 3.0], 1.0, edit=True), torch.exp(x))
    assert inplace._clone_row_written([2.0, 3.0], 1.0, edit=True).tolist() == [[4.0, 6.0], [6.0, 8.0]]  # 2 x


def test_l5_edit_of_an_unsaved_tensor_is_not_an_error():
    x = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    y = (x + 1.0).sum()  # add saves nothing it needs from x
    with torch.no_grad():
        x.add_(1.0)
    y.backward()
    assert x.grad.tolist() == [1.0, 1.0]


# ---- L6 ----

def expected_plain(width, hidden, blocks, batch, **_):
    """Analytic hook accounting of the plain stack: per block x, W1ᵀ, tanh out twice, W2ᵀ; plus pow's input."""
    per_block = 4 * (batch * width + width * hidden + 2 * batch * hidden + hidden * width)
    return 5 * blocks + 1, blocks * per_block + 4 * batch * width


def test_l6_accountings_match_the_analytic_counts():
    r = checkpoint_probe.measure_l6_memory(**SMALL)
    acc = r["accounting"].set_index("mode")
    calls, nbytes = expected_plain(**SMALL)
    assert acc.loc["plain", "hook_calls"] == calls and acc.loc["plain", "hook_bytes"] == nbytes
    seg = SMALL["blocks"] // SMALL["segments"]
    ck = acc.loc["checkpoint_sequential"]
    # (segments-1) checkpointed inputs + the plain last segment + the loss
    assert ck.hook_calls == SMALL["segments"] - 1 + 5 * seg + 1
    assert ck.block_calls_total == SMALL["blocks"] + SMALL["blocks"] - seg  # recomputation
    assert acc.loc["checkpoint_every_segment", "hook_calls"] == SMALL["segments"] + 1
    # unique non-parameter storages: input + per block (tanh out, block out)
    assert acc.loc["plain", "unique_activation_storages"] == 1 + 2 * SMALL["blocks"]
    assert (r["checks"].max_grad_abs_diff == 0).all() and (r["checks"].loss_abs_diff == 0).all()
    v = values(r)
    assert v["hook_calls_hidden_by_checkpoint"] == 5 * (SMALL["blocks"] - seg)


def test_empty_saved_tensors_share_no_storage_and_views_do():
    """Oracle: a view shares its base's storage; two empty tensors (address 0 both) share nothing."""
    base = torch.ones(4, 3)
    a, b = torch.empty((0,)), torch.empty((0,))
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()  # why an address is not enough
    keys = [checkpoint.storage_key(t, i) for i, t in enumerate([base, base[1:], base.t(), a, b])]
    assert keys[0] == keys[1] == keys[2] and len({keys[0], keys[3], keys[4]}) == 3


class DriftingBlock(checkpoint.Block):
    """A block whose output depends on how often it ran: recomputation replays a different function."""

    def forward(self, h):
        self.calls += 1
        return h + self.fc2(torch.tanh(self.fc1(h))) * (1 + 0.01 * self.calls)


def test_l6_segment_sweep_counts_boundaries_and_recomputation():
    """Oracle: with every segment checkpointed the hook sees one (batch, width) float32 input per segment
    plus the loss's input, and backward recomputes every block once, a segment at a time."""
    from adbench.lifetimes import segments

    w, b, n = SMALL["width"], SMALL["batch"], SMALL["blocks"]
    d = segments.segment_sweep(w, SMALL["hidden"], n, b, 0)
    every = d[d["mode"] == "checkpoint_every_segment"].set_index("segments")
    assert list(every.index) == [1, 2, 4]
    for s, r in every.iterrows():
        assert r.outside_block_bytes == (s + 1) * b * w * 4 and r.inside_block_bytes == 0
        assert (r.blocks_recomputed, r.longest_recompute_run) == (n, n // s)
    seq = d[d["mode"] == "checkpoint_sequential"].set_index("segments")
    # checkpoint_sequential runs its last segment plainly: it recomputes the other segments' blocks
    assert [seq.blocks_recomputed[s] for s in (1, 2, 4)] == [0, n - n // 2, n - 1]
    assert seq.inside_block_saves[1] == 5 * n  # per block x, W1ᵀ, tanh out twice, W2ᵀ (see expected_plain)
    assert d.loss.nunique() == 1  # every arrangement computes the same loss
    assert segments._longest_run(["block", "grad", "block", "block", "grad"], "block") == 2


def test_l6_gradient_check_catches_state_dependent_recomputation(monkeypatch):
    model, x = checkpoint.build(**{k: SMALL[k] for k in ("width", "hidden", "blocks", "batch", "seed")})
    ref = checkpoint.grads_of(model, x, "plain", 2)[1]
    assert (checkpoint.grads_of(model, x, "checkpoint_sequential", 2)[1] - ref).abs().max() == 0
    monkeypatch.setattr(checkpoint, "Block", DriftingBlock)
    model, x = checkpoint.build(**{k: SMALL[k] for k in ("width", "hidden", "blocks", "batch", "seed")})
    for b in model:
        b.calls = 0
    ref = checkpoint.grads_of(model, x, "plain", 2)[1]
    for b in model:
        b.calls = 0
    bad = checkpoint.grads_of(model, x, "checkpoint_sequential", 2)[1]
    assert (bad - ref).abs().max() > 0


def test_l6_timing_summary_on_known_samples():
    rows = [{"process": p, "round": r, "candidate": c, "per_call_us": base * (2.0 if c == "checkpointed" else 1.0)}
            for p, base in ((1, 100.0), (2, 110.0)) for r in range(5) for c in ("plain", "checkpointed")]
    v = values(checkpoint_timing.measure_summary([pd.DataFrame(rows)], bootstrap=100, seed=0))
    assert v["ratio_min"] == pytest.approx(2.0) and v["ratio_max"] == pytest.approx(2.0)
    assert v["plain_median_min_ms"] == pytest.approx(0.1) and v["ckpt_median_max_ms"] == pytest.approx(0.22)


def test_l6_candidates_run():
    cands = checkpoint_probe.make_candidates(**SMALL)
    for fn in cands.values():
        fn()


# ---- L7 ----

def test_l7_bytes_follow_the_shape_formulas():
    from transformers import GPT2Config

    c = GPT2Config()
    for prompt, context, batch in ((5, 1024, 8), (3, 256, 2)):
        v = values(shapes.measure_l7(prompt, context, batch, 4, [prompt, context], HOOKS))
        assert v["state_bytes_prompt"] == prompt * c.n_embd * 4
        assert v["states_bytes_prompt"] == (c.n_layer + 1) * prompt * c.n_embd * 4
        assert v["states_mib_context_batch"] == batch * (c.n_layer + 1) * context * c.n_embd * 4 / 2 ** 20
        assert v["scores_bytes_context"] == c.n_head * context ** 2 * 4
        assert v["score_element_growth"] == pytest.approx((context / prompt) ** 2)


def test_every_documented_l_quantity_is_measured():
    made = set()
    for mid, r in [("L1", accumulation.measure_l1(7, **DATA)),
                   ("L2", accumulation.measure_l2(7, [3, 4], nanogpt_steps=40, nanogpt_micro=2, **DATA)),
                   ("L3", accumulation.measure_l3([3, 4], equal_split=[4, 4], **DATA)), ("L4", graph.measure_l4([2.0, 3.0])),
                   ("L5", graph.measure_l5([2.0, 3.0], 1.0, 2.0)), ("L6", checkpoint_probe.measure_l6_memory(**SMALL)),
                   ("L7", shapes.measure_l7(5, 1024, 8, 4, [5, 1024], HOOKS))]:
        made |= {(mid, q) for q in r["values"].quantity}
    made |= {("L6", q) for q in ("plain_median_min_ms", "plain_median_max_ms", "ckpt_median_min_ms",
                                 "ckpt_median_max_ms", "ratio_min", "ratio_max")}  # from the summary job
    doc = load()
    wanted = {(i, q) for i, q in zip(doc.id, doc.quantity) if i.startswith("L")}
    assert wanted and wanted <= made


def test_default_l6_block_reproduces_the_documented_memory_rows():
    cfg = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())["lifetimes"]["checkpoint"]
    doc = load()
    rows = ["plain_saved_tensors", "plain_saved_mib", "plain_block_calls", "ckpt_saved_mib",
            "ckpt_percent_of_plain", "ckpt_block_calls", "output_max_diff", "grad_max_diff"]
    cmp = compare(doc[(doc.id == "L6") & doc.quantity.isin(rows)], checkpoint_probe.measure_l6_memory(**cfg)["values"])
    assert len(cmp) == len(rows) and (cmp.status == "match").all(), cmp[["quantity", "documented", "measured"]]


def test_exact_and_derived_l_rows_match_the_documented_table():
    cfg = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())["lifetimes"]
    data = dict(in_features=cfg["in_features"], out_features=cfg["out_features"], seed=cfg["seed"])
    measured = pd.concat([
        accumulation.measure_l1(cfg["accumulation_examples"], **data)["values"],
        accumulation.measure_l2(cfg["accumulation_examples"], cfg["split"], nanogpt_steps=cfg["nanogpt_steps"],
                                nanogpt_micro=cfg["nanogpt_micro"], **data)["values"],
        accumulation.measure_l3(cfg["split"], equal_split=cfg["equal_split"], **data)["values"],
        graph.measure_l4(cfg["leaf_x"])["values"],
        graph.measure_l5(cfg["leaf_x"], cfg["inplace_shift"], cfg["cube_at"])["values"],
        shapes.measure_l7(**cfg["shapes"])["values"]])
    doc = load()
    # L6 (measured in test_default_l6_block_reproduces_the_documented_memory_rows) is not probed here
    doc = doc[doc.id.str.startswith("L") & (doc.id != "L6") & doc.kind.isin(["exact", "derived"])]
    cmp = compare(doc, measured)
    assert len(cmp) and (cmp.status == "match").all(), cmp[cmp.status != "match"][["id", "quantity", "measured"]]


def test_l2_unscaled_accumulation_is_measured():
    r = measure_l2(7, [3, 4], 3, 2, 0, 40, 2)
    v = values(r)
    assert v["nanogpt_unscaled_norm_ratio"] == pytest.approx(40, abs=1e-12)
    torch.manual_seed(0)  # oracle: sum of 40 microbatch means == 40 x full-batch mean (equal sizes), float64
    gen = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(3, 2, dtype=torch.float64)
    x, y = torch.randn(80, 3, dtype=torch.float64, generator=gen), torch.randn(80, 2, dtype=torch.float64, generator=gen)
    total = sum(torch.nn.functional.mse_loss(lin(x[2 * s:2 * s + 2]), y[2 * s:2 * s + 2]) for s in range(40))
    grads = torch.autograd.grad(total, list(lin.parameters()))
    norm_unscaled = torch.cat([g.flatten() for g in grads]).norm().item()
    row = r["schemes"].set_index("scheme").loc["nanoGPT without the division"]
    assert row.grad_norm == pytest.approx(norm_unscaled, rel=1e-13) and row.microbatches == 40
    assert values(measure_l2(7, [3, 4], 3, 2, 0, 10, 2))["nanogpt_unscaled_norm_ratio"] == pytest.approx(10)  # control


def test_l2_l3_labels_are_fixed_and_the_configured_sizes_are_columns():
    """A changed split or step count moves the columns, never the scheme and reduction names (claims look them up)."""
    for split, steps in (([3, 4], 40), ([2, 5], 8)):
        s = measure_l2(sum(split), split, 3, 2, 0, steps, 2)["schemes"].set_index("scheme")
        assert list(s.index) == ["full batch", "means weighted by size", "unweighted sum of means",
                                 "nanoGPT, loss / microbatches", "nanoGPT without the division"]
        assert s.loc["means weighted by size", "loss_weights"] == " + ".join(f"{k}/{sum(split)}" for k in split)
        assert s.loc["nanoGPT, loss / microbatches", "microbatches"] == steps
        assert s.loc["nanoGPT without the division", "examples"] == 2 * steps
        r = accumulation.measure_l3(split, 3, 2, 0, [4, 4])["ranks"].set_index("reduction")
        assert list(r.index) == ["average of rank means", "rank means weighted by count",
                                 "sum of rank sums / loss elements", "sum of rank sums / examples"]
        # ranks, examples, loss elements; and the examples again (the wrong divisor of the element-count control)
        assert list(r.divisor) == [len(split), sum(split), 2 * sum(split), sum(split)]


def test_l3_example_weights_by_autograd():
    from fractions import Fraction

    from adbench.lifetimes.accumulation import example_weights, measure_l3
    naive = example_weights([3, 4], counted=False)
    assert naive == pytest.approx([1 / 6] * 3 + [1 / 8] * 4, abs=1e-16)          # analytic 1/(2 * count)
    assert example_weights([3, 4], counted=True) == pytest.approx([1 / 7] * 7, abs=1e-16)
    assert example_weights([3, 3], counted=False) == pytest.approx([1 / 6] * 6)   # control: equal ranks agree
    v = values(measure_l3([3, 4], 3, 2, 0, [4, 4]))
    assert (v["naive_weight_rank0"], v["naive_weight_rank1"], v["counted_weight"]) == ("1/6", "1/8", "1/7")
    assert Fraction(v["counted_weight"]) != Fraction(v["naive_weight_rank0"])


def test_l2_l3_claims_are_judged_under_a_changed_split_and_step_count():
    """`lifetimes.nanogpt_steps: 20` (or another split) still gives a report: the relations read the sizes from
    the tables, not from the shipped configuration, and judge the new one."""
    from adbench.claims.registry import load_all
    from adbench.outcomes import HOLDS

    rel = load_all()
    t = {"L2/schemes": measure_l2(7, [2, 5], 3, 2, 0, 20, 2)["schemes"],
         **{f"L3/{k}": v for k, v in accumulation.measure_l3([2, 5], 3, 2, 0, [4, 4]).items() if k != "values"}}
    for name in ("weighted_microbatches_match", "unweighted_roughly_doubles", "nanogpt_division_by_microbatches",
                 "rank_means_need_weights", "equal_ranks_average_exact"):
        out = rel[name](t)
        assert out.verdict == HOLDS, (name, out.reason)
    assert "loss/20" in rel["nanogpt_division_by_microbatches"](t).reason
