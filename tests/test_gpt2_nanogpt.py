"""The nanoGPT-style GPT (G6's documented architecture) against transformers' GPT-2 and analytic byte counts."""

import pytest
import torch

torch.set_num_threads(1)

from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from adbench.gpt2.nanogpt import CONV1D, NanoConfig, NanoGPT, config_from_gpt2, from_gpt2, set_attention  # noqa: E402
from adbench.gpt2.saved import account  # noqa: E402

SIZES = dict(n_layer=2, n_embd=32, n_head=2, n_positions=64, vocab_size=300)
B, T = 2, 24


def _hf(seed: int = 5) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(attn_implementation="eager", bos_token_id=0, eos_token_id=0, **SIZES)).eval()


def _ids(seed: int = 1) -> torch.Tensor:
    return torch.randint(0, SIZES["vocab_size"], (B, T), generator=torch.Generator().manual_seed(seed))


def _loss64(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Oracle: mean -log p(next token) in float64, written out."""
    logp = torch.log_softmax(logits[:, :-1].double(), dim=-1)
    return -logp.gather(-1, ids[:, 1:, None]).mean()


def test_nanogpt_in_transformers_numerics_reproduces_gpt2_in_float64():
    hf = _hf().double()
    nano = from_gpt2(hf, gelu="tanh", attention="eager")
    assert next(nano.parameters()).dtype == torch.float64
    ids = _ids()
    ref, got = hf(ids, use_cache=False).logits, nano(ids)
    assert (ref - got).abs().max().item() <= 1e-12 * ref.abs().max().item()
    # the model's own loss (one cross_entropy over T positions, the last ignored) is the same mean NLL
    loss, oracle = nano.next_token_loss(ids), _loss64(ref, ids)
    assert abs(loss.item() - oracle.item()) <= 1e-13
    loss.backward(), oracle.backward()
    hp, np_ = dict(hf.named_parameters()), dict(nano.named_parameters())
    assert hp.keys() == np_.keys()  # the same parameters under the same names (the tied head once)
    for name, p in np_.items():
        g = hp[name].grad.t() if name.endswith(CONV1D) else hp[name].grad  # Conv1D keeps (in, out)
        assert torch.allclose(p.grad, g, rtol=1e-10, atol=1e-13), name
    # the fused kernel computes the same function (it only keeps other tensors for backward)
    set_attention(nano, "sdpa")
    assert (nano(ids) - ref).abs().max().item() <= 1e-12 * ref.abs().max().item()


def test_exact_gelu_is_a_different_function_and_weights_are_copied_not_shared():
    hf = _hf().double()
    ids = _ids()
    exact = from_gpt2(hf)  # the documents' architecture: exact GELU, fused attention
    gap = (exact(ids) - hf(ids, use_cache=False).logits).abs().max().item()
    assert 1e-9 < gap < 1e-2  # control: the tanh approximation is not the exact GELU, but close to it
    with torch.no_grad():
        exact.transformer.wte.weight[0, 0] += 1.0
    assert exact.lm_head.weight[0, 0] == exact.transformer.wte.weight[0, 0]  # tied inside the copy
    assert hf.transformer.wte.weight[0, 0] != exact.transformer.wte.weight[0, 0]  # the original is untouched


def test_config_from_gpt2_refuses_what_the_model_does_not_have():
    assert config_from_gpt2(GPT2Config()) == NanoConfig()  # GPT-2 small's sizes are the defaults
    with pytest.raises(ValueError, match="n_inner"):
        config_from_gpt2(GPT2Config(n_inner=100, **SIZES))
    with pytest.raises(ValueError, match="attention"):
        NanoConfig(attention="flash")


def _by_node(net, ids):
    out = account(net, ids, False, True)
    return out, {r["node"]: r for r in out["_by_node"]}


def test_saved_bytes_by_node_against_analytic_counts():
    cfg = NanoConfig(vocab_size=300, block_size=64, n_layer=2, n_head=2, n_embd=32)
    L, C, V, f32 = cfg.n_layer, cfg.n_embd, cfg.vocab_size, 4
    torch.manual_seed(0)
    net = NanoGPT(cfg).eval()
    ids = _ids()
    out, nodes = _by_node(net, ids)
    gelu = nodes["GeluBackward0"]  # one exact GELU per block, keeping its (B, T, 4C) input
    assert (gelu["nodes"], gelu["saved_tensors"], gelu["unique_bytes"]) == (L, L, L * B * T * 4 * C * f32)
    ln = nodes["NativeLayerNormBackward0"]  # 2 per block + final: input, mean, rstd (and weight, bias)
    assert (ln["nodes"], ln["saved_tensors"]) == (2 * L + 1, 5 * (2 * L + 1))
    assert ln["unique_bytes"] == (2 * L + 1) * (B * T * C + 2 * B * T) * f32
    # the loss keeps the (B*T, V) log-probabilities once: at nll_loss, the first node reached, with targets
    # (int64) and the total weight; log_softmax saves the same storage and gets nothing
    assert nodes["NllLossBackward0"]["unique_bytes"] == B * T * V * f32 + B * T * 8 + f32
    assert nodes["LogSoftmaxBackward0"]["unique_bytes"] == 0
    walked = sum(r["unique_bytes"] for r in out["_by_node"])
    assert abs(walked - out["unique_storage_bytes"]) <= 1024 < out["parameter_bytes_seen"]
    # the explicit attention keeps at least one (B, heads, T, T) probability matrix per layer more
    set_attention(net, "eager")
    eager = account(net, ids, False, False)["unique_storage_bytes"]
    assert eager - out["unique_storage_bytes"] >= L * B * cfg.n_head * T * T * f32
    assert "SoftmaxBackward0" in _by_node(net, ids)[1]


def test_transformers_gpt2_keeps_the_tanh_gelu_intermediates_instead():
    hf = _hf()
    ids = _ids()
    hf_out, hf_nodes = _by_node(hf, ids)
    nano_out, nano_nodes = _by_node(from_gpt2(hf), ids)
    L, C, f32 = SIZES["n_layer"], SIZES["n_embd"], 4
    # control: no single GELU node; the tanh formula's pow and tanh each keep a (B, T, 4C) tensor per block
    assert "GeluBackward0" not in hf_nodes and "GeluBackward0" in nano_nodes
    for node in ("PowBackward0", "TanhBackward0"):
        assert hf_nodes[node]["unique_bytes"] == L * B * T * 4 * C * f32, node
    assert nano_out["unique_storage_bytes"] < hf_out["unique_storage_bytes"]
