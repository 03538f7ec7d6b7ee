"""G6: saved-tensor payload for one sequence and a batch, with and without activation checkpointing, on
two architectures holding the same weights: transformers' GPT2LMHeadModel as loaded, and the
nanoGPT-style GPT (nanogpt.py) the documents measured. Fused vs eager attention on each, too."""

from __future__ import annotations

import logging
import resource
from functools import partial

import pandas as pd
import torch

from ..timing import mark_unjudged, reported, timed_attempts, unjudged_reason
from .arch import CANDIDATE
from .common import load_model
from .nanogpt import from_gpt2, set_attention
from .saved import account, step
from .values import memory_values

log = logging.getLogger(__name__)
FP32 = 4  # bytes per float32 element
# transformers: GPT2LMHeadModel as loaded (eager attention, tanh-GELU as separate ops, log_softmax on
# its logits); nanogpt: the nanoGPT-style copy (fused attention, exact GELU, one cross_entropy)
ARCHS = ("transformers", "nanogpt")


def _accounting(net, x: torch.Tensor, batch: int) -> tuple[list[dict], list[dict]]:
    """The six saved-tensor rows (batch 1 kept and dropped, the batch dropped; plain and checkpointed)
    and the by-node breakdown of the plain, kept sequence."""
    rows, by_node = [], []
    for b, keep in ((1, True), (1, False), (batch, False)):
        for ckpt in (False, True):
            log.info("saved-tensor accounting: batch %d, checkpoint %s, %s", b, ckpt, "kept" if keep else "dropped")
            r = account(net, x[:b], ckpt, keep)
            by_node = r.pop("_by_node", by_node)  # the plain, kept sequence: breakdown by node type
            rows.append(r)
    return rows, by_node


def _set_hf_attention(net, kind: str) -> None:
    net.set_attn_implementation(kind)  # transformers reads it again at every forward


def _attention(nets: dict, x: torch.Tensor) -> pd.DataFrame:
    """One sequence, no checkpointing: the fused kernel (SDPA) against explicit softmax(QK^T)V, same weights.
    score_bytes: one fp32 (B, heads, T, T) matrix per layer, what an explicit attention materializes."""
    switch = {"transformers": _set_hf_attention, "nanogpt": set_attention}
    rows = []
    for arch, net in nets.items():
        cfg = net.config
        for kind in ("sdpa", "eager"):
            switch[arch](net, kind)
            r = account(net, x, False, False)
            rows.append({"arch": arch, "attention": kind, "batch": r["batch"], "tokens": r["tokens"],
                         **{k: r[k] for k in ("hook_calls", "bytes_per_hook_call", "unique_storages",
                                              "unique_storage_bytes", "largest_storage_bytes")},
                         "score_bytes": cfg.n_layer * r["batch"] * cfg.n_head * r["tokens"] ** 2 * FP32})
    _set_hf_attention(nets["transformers"], "eager")  # back to the configured kernels
    set_attention(nets["nanogpt"], "sdpa")
    return pd.DataFrame(rows)


def _cuda_peak(net, x: torch.Tensor) -> dict:
    if x.device.type != "cuda":
        return {}
    step(net, x, False)  # warm-up at the batch size
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step(net, x, False)  # the measured batch step
    return {"cuda_max_allocated_bytes_batch_plain": torch.cuda.max_memory_allocated()}


def measure_memory(model: dict, text: str, seq_len: int, batch: int, timing_batch: int, timing_rounds: int,
                   timing_warmup: int, seed: int, device: str = "cpu", timing_retries: int = 0) -> dict:
    """Saved bytes (per hook call / unique storages), log-probability share, peak RSS, checkpoint time ratio,
    for each architecture."""
    loaded = load_model(model, device)  # model: gpt2_model's record (model.json); text: the corpus
    info = loaded.info
    ids = loaded.tokenizer.encode(text)[: batch * seq_len]
    if len(ids) < batch * seq_len:
        raise ValueError(f"the corpus gives {len(ids)} tokens; G6 needs batch x seq_len = {batch * seq_len}")
    nets = {"transformers": loaded.model, "nanogpt": from_gpt2(loaded.model)}  # the same weights
    dev = next(loaded.model.parameters()).device
    x = torch.tensor(ids, device=dev).view(batch, seq_len)  # (B, T): consecutive chunks of the corpus
    saved, by_node = [], []
    for arch, net in nets.items():
        rows, nodes = _accounting(net, x, batch)
        saved += [{"arch": arch, **r} for r in rows]
        by_node += [{"arch": arch, **r} for r in nodes]
    saved = pd.DataFrame(saved)
    vocab = loaded.model.config.vocab_size
    saved["logprob_bytes"] = saved.batch * seq_len * vocab * FP32
    attention = _attention(nets, x[:1])
    xt = x[:timing_batch]
    summary, frames, loads = [], [], {}
    for arch in ARCHS:  # plain and checkpointed interleaved, one architecture at a time
        log.info("timing %d rounds of forward+backward at batch %d, plain vs checkpointed, %s", timing_rounds,
                 timing_batch, arch)
        names = {kind: f"{CANDIDATE[arch]}{kind}" for kind in ("plain", "checkpoint")}
        candidates = {names[k]: partial(step, nets[arch], xt, k == "checkpoint") for k in names}
        samples, loads[arch] = timed_attempts(candidates, {c: 1 for c in candidates}, timing_rounds, timing_warmup,
                                              seed, timing_retries)
        frames.append(samples)
        med = reported(samples).groupby("candidate").per_call_us.median()
        plain, ckpt = med[names["plain"]], med[names["checkpoint"]]
        # `_volatile`: figures that differ between identical runs (README, "What lands where")
        summary.append({"arch": arch, "peak_rss_bytes_volatile": 0, "checkpoint_time_ratio_volatile": ckpt / plain,
                        "timing_batch": timing_batch, "timing_rounds": timing_rounds,
                        "timing_retries_volatile": loads[arch]["timing_retries"], "plain_median_s_volatile": plain / 1e6,
                        "checkpoint_median_s_volatile": ckpt / 1e6, "logprob_bytes_run": batch * seq_len * vocab * FP32,
                        "weights_bytes_run": sum(p.numel() for p in nets[arch].parameters()) * FP32,
                        "threads": torch.get_num_threads(), **_cuda_peak(nets[arch], x)})
    summary = pd.DataFrame(summary)
    summary["peak_rss_bytes_volatile"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the job's; KiB
    by_node = pd.DataFrame(by_node)
    noisy = {a: unjudged_reason(int(loads[a]["timing_stayed_noisy"]), 1, loads[a]["timing_retries"]) for a in ARCHS}
    values = memory_values(saved, summary, by_node, batch, info["model_source"], noisy)
    nano = nets["nanogpt"].config.to_dict()
    nano["weights"] = "copied from the transformers model (model_source)"
    return {"values": values, "saved": saved, "summary": summary, "timing": pd.concat(frames, ignore_index=True),
            "by_node": by_node, "attention": attention, "architectures": architectures(saved, batch),
            "_meta": {**info, **loads["transformers"], "nanogpt_timing": loads["nanogpt"], "nanogpt": nano}}


def architectures(saved: pd.DataFrame, batch: int) -> pd.DataFrame:
    """The two architectures side by side: what each keeps, counted both ways (from the saved table)."""
    kept = saved[~saved.kept].set_index(["arch", "batch", "checkpoint"])
    cases = [("one sequence", 1, False), (f"batch {batch}", batch, False), (f"batch {batch}, checkpointed", batch, True)]
    rows = []
    for label, b, ckpt in cases:
        for col, what in (("unique_storage_bytes", "unique storage bytes"), ("bytes_per_hook_call", "bytes per hook call"),
                          ("hook_calls", "hook calls")):
            r = {"case": label, "count": what, **{a: kept.loc[(a, b, ckpt), col] for a in ARCHS}}
            rows.append(r | {"nanogpt_over_transformers": r["nanogpt"] / r["transformers"]})
    return pd.DataFrame(rows)
