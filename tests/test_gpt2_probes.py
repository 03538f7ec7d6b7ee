"""GPT-2 probes on a tiny random GPT-2 against independent float64 / analytic oracles."""

import copy
import math

import numpy as np
import pandas as pd
import pytest
import torch

torch.set_num_threads(1)

from adbench.gpt2.common import token_nll  # noqa: E402
from adbench.gpt2.fp16 import precision_table  # noqa: E402
from adbench.gpt2.resolve import record_model  # noqa: E402
from testing_tools import load_gpt2  # noqa: E402
from adbench.gpt2.prompt import _g4_values, measure_prompt  # noqa: E402
from adbench.gpt2.saved import Ledger, account  # noqa: E402
from adbench.gpt2.sequence import _g7_values, _surprise, measure_sequence  # noqa: E402

REV = "607a30d783dfa663caf39e06633721c8d4cfcd7e"
MODEL = dict(source="random", revision=REV, path=None, seed=3, tokenizer_vocab_size=300,
             random_config=dict(n_layer=2, n_embd=32, n_head=2, n_positions=64, vocab_size=300))
TEXT = ("The capital of France is Paris. Gradients flow backward through every block of the model, "
        "and the loss is the average surprise of the next token. ") * 30


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    """What gpt2_model writes: the model.json record, its trained tokenizer in tokenizer.json."""
    p = tmp_path_factory.mktemp("gpt2") / "tokenizer.json"
    out = record_model(**MODEL, corpus_text=TEXT, tokenizer_path=str(p))
    p.write_bytes(out["tokenizer"])
    return out["model"]


def _model():
    return load_gpt2(**{k: v for k, v in MODEL.items()}, corpus_text=TEXT)


def _f64_grads(model, ids, target_from: int):
    """Oracle: float64 copy, NLL of ids[target_from:] given the prefix, gradients of every parameter."""
    m = copy.deepcopy(model).double()
    logits = m(ids, use_cache=False).logits
    logp = torch.log_softmax(logits[0, target_from - 1:-1], dim=-1)
    nll = -logp.gather(-1, ids[0, target_from:, None]).sum()
    nll.backward()
    return m, nll.item()


def test_g1_g3_g4_against_float64_oracle(record):
    r = measure_prompt(record, "The capital of France is", " Paris", [0, 5, 11], 0, 0.01)
    loaded = _model()
    tok = loaded.tokenizer
    p, t = tok.encode("The capital of France is"), tok.encode(" Paris")
    m64, nll64 = _f64_grads(loaded.model, torch.tensor([p + t]), len(p))
    assert r["G1"]["target"].nll[0] == pytest.approx(nll64, rel=1e-5)
    assert r["G1"]["target"].probability[0] == pytest.approx(math.exp(-nll64), rel=1e-4)
    for i, row in r["G3"]["qkv"].iterrows():
        g = m64.transformer.h[i].attn.c_attn.weight.grad  # (C, 3C)
        C = g.shape[0]
        oracle = [float(g[:, j * C:(j + 1) * C].norm()) for j in range(3)]
        assert [row.q, row.k, row.v] == pytest.approx(oracle, rel=1e-4)
        # negative control: the nn.Linear-layout bug (split dim 0 as if the weight were (3C, C)) is caught
        wrong = [float(x.norm()) for x in torch.tensor_split(g, 3, dim=0)]
        assert [row.q, row.k, row.v] != pytest.approx(wrong, rel=1e-4)
    d = r["G4"]["direction"].set_index("move").loss
    assert d["against"] < nll64 * (1 + 1e-6) and d["against"] < d["restored"] < d["with"]
    assert bool(r["G4"]["direction"].bitwise_equal_to_original.iloc[-1])
    assert r["G4"]["values"].set_index("quantity").value["restoration"].startswith("restored exactly")
    assert r["G1"]["values"].set_index("quantity").value["unique_parameters"] == 124_439_808


def test_g2_states_have_gradients_and_map_to_documented_indices(record):
    r = measure_prompt(record, "The capital of France is", " Paris", [0, 5, 11], 0, 0.01)
    states = r["G2"]["states"]
    assert len(states) == MODEL["random_config"]["n_layer"] + 1 and (states.grad_norm_last_token > 0).all()
    v = r["G2"]["values"].set_index("quantity")
    assert len(v) == 13 and v.value["state_12"] == states.grad_norm_last_token.iloc[-1]
    assert "stands in for 12" in v.note["state_12"] and v.note["state_00"] == ""


def test_g7_split_against_untied_oracle(record):
    r = measure_sequence(record, TEXT, 48, 0, 0.1, 3, 4, 1.0, 1e-3, 1e3, 65536.0)
    c = r["G7"]["clipping"].iloc[0]
    m = copy.deepcopy(_model().model).double()
    # untie: the output layer gets its own copy, so the table's gradient is the input side alone
    m.lm_head.weight = torch.nn.Parameter(m.transformer.wte.weight.detach().clone())
    ids = torch.tensor([_model().tokenizer.encode(TEXT)[:48]])
    token_nll(m(ids, use_cache=False).logits, ids).mean().backward()
    inp, out = m.transformer.wte.weight.grad, m.lm_head.weight.grad
    rest = sum(float(p.grad.pow(2).sum()) for n, p in m.named_parameters()
               if n not in ("transformer.wte.weight", "lm_head.weight"))
    total = math.sqrt(rest + float((inp + out).pow(2).sum()))
    assert c.token_table_input_side == pytest.approx(float(inp.norm()), rel=1e-4)
    assert c.token_table_output_side == pytest.approx(float(out.norm()), rel=1e-4)
    assert c.total_norm == pytest.approx(total, rel=1e-4) and c.clip_return == pytest.approx(total, rel=1e-4)
    assert total > 1 and c.clipped_norm == pytest.approx(1.0, abs=1e-5) and c.cosine_clipped_unclipped == pytest.approx(1.0, abs=1e-6)
    # negative control: the whole tied table's norm is not its input side
    assert c.token_table_norm != pytest.approx(float(inp.norm()), rel=1e-2)
    assert not r["G8"]["blocks"].starved.any() and not r["G8"]["blocks"].runaway.any()


def test_g5_summary_against_hand_computed_values():
    class Tok:
        def decode(self, ids):
            return f"<{ids[0]}>"

        def __len__(self):
            return 7

    s = np.arange(1.0, 21.0)  # 20 surprises 1..20: worst tenth = {20, 19}
    tokens, g5 = _surprise(s, list(range(21)), Tok(), 0.1, 2, 3)
    sm = g5["summary"]
    assert sm["worst_tokens"] == 2 and sm["worst_share_pct"] == pytest.approx(100 * 39 / 210)
    assert sm["mean_nats"] == 10.5 and sm["median_nats"] == 10.5 and sm["perplexity"] == pytest.approx(math.exp(10.5))
    ex = g5["extremes"]
    assert list(ex.surprise_nats) == [20, 19, 1, 2] and ex.token[0] == "<20>" and ex.context[0] == "<17><18><19>"


def test_p9_counts_against_analytic_thresholds():
    # fp16 underflow: below half the smallest subnormal 2^-24 rounds to 0. bf16 keeps fp32's range.
    vals = [0.0, 1e-8, 2.0 ** -26, 3e-8, 1e-12, 1e-13, 2.0, 0.9999, 0.99955, -1e-9, 1e-3]
    t = precision_table(torch.tensor(vals), 65536.0).set_index("dtype")
    half_sub = 2.0 ** -25
    lost = [v for v in vals if v != 0 and abs(v) < half_sub]  # 1e-8, 2^-26, 1e-12, 1e-13, -1e-9
    assert t.loc["fp16", "to_zero"] == len(lost) == 5
    still = [v for v in lost if abs(v) * 65536 < half_sub]  # only 1e-13: 1e-12 * 65536 = 6.6e-8 > 2^-25
    assert t.loc["fp16", "scaled_still_zero"] == len(still) == 1
    assert t.loc["fp16", "scaled_above_fp16_max"] == 3  # 2.0, 0.9999, 0.99955 scaled exceed 65504
    assert t.loc["fp16", "scaled_to_inf"] == 2  # 0.99955 * 65536 = 65506.5 rounds down to 65504
    assert t.loc["bf16", "to_zero"] == 0 and t.loc["fp16", "fp32_zeros"] == 1
    # negative control: counting fp32 zeros as "rounded to zero" would give a different answer
    g = torch.tensor(vals)
    assert int((g.half() == 0).sum()) != t.loc["fp16", "to_zero"]


def test_saved_tensor_ledger_per_call_vs_unique():
    x = torch.randn(1000, requires_grad=True)
    led = Ledger([])
    with torch.autograd.graph.saved_tensors_hooks(led.pack, lambda t: t):
        y = (x * x).sum()  # mul saves x twice (self and other); sum saves nothing
    assert led.calls == 2 and led.call_bytes == 8000
    assert led.unique == 1 and led.unique_bytes == 4000  # one storage, counted once
    y.backward()
    assert torch.equal(x.grad, 2 * x)


def test_account_kept_equals_dropped_and_checkpoint_saves_less():
    net = _model().model
    ids = torch.tensor([_model().tokenizer.encode(TEXT)[:32]] * 2)  # (2, 32)
    keys = ["hook_calls", "bytes_per_hook_call", "unique_storages", "unique_storage_bytes"]
    kept, dropped = account(net, ids, False, True), account(net, ids, False, False)
    assert [kept[k] for k in keys] == [dropped[k] for k in keys]
    # the graph walk by node type accounts for the same storages (up to a few scalar tensors)
    walked = sum(r["unique_bytes"] for r in kept["_by_node"])
    assert abs(walked - kept["unique_storage_bytes"]) <= 1024 < kept["parameter_bytes_seen"]
    ck = account(net, ids, True, True)
    assert ck["unique_storage_bytes"] < kept["unique_storage_bytes"] and ck["hook_calls"] < kept["hook_calls"]
    V = net.config.vocab_size
    assert kept["largest_storage_bytes"] >= 2 * 31 * V * 4  # the (B, T-1, V) log-probabilities are kept
    # checkpointed backward gives the plain backward's gradients (recompute, not approximation)
    grads = {}
    for ckpt in (False, True):
        account(net, ids, ckpt, True)  # runs backward, then zeroes; recompute once more to read grads
        from adbench.gpt2.saved import checkpointed
        with checkpointed(net, ckpt):
            token_nll(net(ids, use_cache=False).logits, ids).mean().backward()
        grads[ckpt] = torch.cat([p.grad.flatten() for p in net.parameters()])
        net.zero_grad(set_to_none=True)
    assert torch.allclose(grads[False], grads[True], rtol=0, atol=1e-6)


def test_g4_restoration_check_catches_a_one_ulp_difference():
    import pandas as pd

    from adbench.verdicts.verdict import verdict
    from adbench.verdicts.documented import load
    from adbench.gpt2.prompt import _g4_values

    orig = 3.0
    ok = pd.DataFrame({"move": ["against", "with", "restored"], "loss": [2.9, 3.1, orig], "original": orig})
    ok["bitwise_equal_to_original"] = ok.loss == orig
    bad = ok.copy()
    bad.loc[2, "loss"] = float(np.nextafter(np.float32(orig), np.float32(4)))  # restore off by one fp32 ulp
    bad["bitwise_equal_to_original"] = bad.loss == orig
    text = {k: _g4_values(d, "random").set_index("quantity").value["restoration"] for k, d in (("ok", ok), ("bad", bad))}
    row = load().set_index(["id", "quantity"]).loc[("G4", "restoration")]  # the shipped row: kind and pattern
    assert verdict(row.kind, row.documented, text["ok"], pattern=row.pattern)[0] == "match"
    assert verdict(row.kind, row.documented, text["bad"], pattern=row.pattern)[0] == "MISMATCH"


def _direction(against: float, original: float, with_: float, restored: float) -> pd.DataFrame:
    d = pd.DataFrame({"move": ["against", "with", "restored"], "loss": [against, with_, restored],
                      "l2_moved": [0.01, 0.01, 0.0]})
    d["original"] = original
    d["bitwise_equal_to_original"] = d["loss"] == original
    return d


def test_g4_property_rows_and_8_digit_rows():
    v = _g4_values(_direction(3.42, 3.43, 3.44, 3.43), "random").set_index("quantity")
    assert v.value["ordering_against_original_with"] == "true" and v.value["restoration_bitwise"] == "true"
    assert v.value["loss_against_8digits"] == 3.42 and v.value["loss_original_8digits"] == 3.43
    bad = _g4_values(_direction(3.45, 3.43, 3.44, 3.43 + 1e-6), "random").set_index("quantity")  # violated
    assert bad.value["ordering_against_original_with"] == "false" and bad.value["restoration_bitwise"] == "false"
    assert pd.isna(v.model_source["ordering_against_original_with"])  # judged for any model


def test_g7_clip_property_rows():
    params = [torch.nn.Parameter(torch.randn(50, 7)), torch.nn.Parameter(torch.randn(9))]
    for p in params:
        p.grad = torch.randn_like(p) * 3
    total = torch.cat([p.grad.flatten() for p in params]).double().norm().item()   # float64 oracle
    before = torch.cat([p.grad.flatten() for p in params]).double()
    total_fp32 = float(torch.nn.utils.get_total_norm([p.grad for p in params]))
    returned = float(torch.nn.utils.clip_grad_norm_(params, 1.0))
    after = torch.cat([p.grad.flatten() for p in params]).double()
    cos = float(after @ before / (after.norm() * before.norm()))
    g7 = dict(total_norm=total, total_norm_fp32=total_fp32, token_table_input_side=0.1, clip_return=returned,
              clipped_norm=after.norm().item(), cosine_clipped_unclipped=cos)
    v = _g7_values(g7, "random").set_index("quantity").value
    assert v["clip_return_equals_unclipped_total"] == "true" and v["clip_direction_unchanged"] == "true"
    wrong = _g7_values({**g7, "clip_return": after.norm().item(), "cosine_clipped_unclipped": 0.9}, "random")
    wrong = wrong.set_index("quantity").value                                   # returns the clipped norm, turns
    assert wrong["clip_return_equals_unclipped_total"] == "false" and wrong["clip_direction_unchanged"] == "false"


G6_SEQ, G6_BATCH = 16, 2


@pytest.fixture(scope="module")
def g6(record):
    """One G6 job on the tiny model: both architectures, every table."""
    from adbench.gpt2.memory import measure_memory

    return measure_memory(record, TEXT, G6_SEQ, G6_BATCH, timing_batch=1, timing_rounds=2, timing_warmup=0, seed=0)


def test_g6_memory_job_on_a_tiny_model(record, g6):
    from adbench.gpt2.memory import measure_memory

    seq_len, batch, out = G6_SEQ, G6_BATCH, g6
    saved = out["saved"].set_index(["arch", "batch", "checkpoint", "kept"])
    # every saved storage is counted once among the unique ones, and once per hook call that saved it
    assert (out["saved"].unique_storage_bytes <= out["saved"].bytes_per_hook_call).all()
    for arch in ("transformers", "nanogpt"):
        plain, ckpt = saved.loc[(arch, batch, False, False)], saved.loc[(arch, batch, True, False)]
        assert ckpt.unique_storage_bytes < plain.unique_storage_bytes  # checkpointing keeps fewer bytes
        kept, dropped = saved.loc[(arch, 1, False, True)], saved.loc[(arch, 1, False, False)]
        assert kept.unique_storage_bytes == dropped.unique_storage_bytes
    vocab = MODEL["random_config"]["vocab_size"]
    assert (out["saved"].logprob_bytes == out["saved"].batch * seq_len * vocab * 4).all()  # (B, T, V) fp32
    assert set(out["by_node"].arch) == set(out["summary"].arch) == set(out["attention"].arch) == {"transformers", "nanogpt"}
    a = out["attention"].set_index(["arch", "attention"]).unique_storage_bytes
    assert a["nanogpt", "sdpa"] < a["nanogpt", "eager"] and a["transformers", "sdpa"] < a["transformers", "eager"]
    # the attention switch is put back: the nanoGPT-style rows of the saved table are the fused ones
    assert a["nanogpt", "sdpa"] == saved.loc[("nanogpt", 1, False, False)].unique_storage_bytes
    assert a["transformers", "eager"] == saved.loc[("transformers", 1, False, False)].unique_storage_bytes
    with pytest.raises(ValueError, match="batch x seq_len"):  # control: a corpus too short is refused
        measure_memory(record, TEXT[:50], 64, batch, timing_batch=1, timing_rounds=1, timing_warmup=0, seed=0)


def test_g6_documented_rows_are_judged_on_the_nanogpt_architecture(g6):
    from adbench.verdicts.documented import load
    from adbench.verdicts.verdict import NOT_JUDGED, compare

    saved = g6["saved"].set_index(["arch", "batch", "checkpoint", "kept"]).unique_storage_bytes
    cmp = compare(load(), g6["values"]).set_index(["id", "quantity"]).loc["G6"]
    # the documented quantity carries the nanoGPT-style figure; transformers' has its own row, not scored
    assert cmp.measured["per_sequence_saved_mb"] == saved["nanogpt", 1, False, False] / 1e6
    assert cmp.measured["batch_saved_gb_transformers"] == saved["transformers", G6_BATCH, False, False] / 1e9
    assert cmp.measured["batch_checkpointed_saved_gb"] == saved["nanogpt", G6_BATCH, True, False] / 1e9
    for q in ("per_sequence_saved_mb", "batch_saved_gb", "batch_checkpointed_saved_gb", "checkpoint_time_overhead_pct"):
        other = cmp.loc[q + "_transformers"]
        assert other.status == NOT_JUDGED and "GPT2LMHeadModel" in other.note, q
        assert "nanoGPT-style" in cmp.note[q]  # the judged row says which architecture it was measured on
    judged = cmp.loc[["per_sequence_saved_mb", "batch_saved_gb", "batch_checkpointed_saved_gb"]]
    assert (judged.status != NOT_JUDGED).all()  # tiny sizes, far from the documents: judged, not excused
    assert "MB more per sequence; by node type: " in cmp.note["per_sequence_saved_mb_transformers"]
