"""G6: saved-tensor payload for one sequence and a batch, with and without activation checkpointing."""

from __future__ import annotations

import logging
import resource
from functools import partial

import pandas as pd
import torch
from transformers import GPT2Config

from ..tables import values_table
from ..timing import mark_unjudged, reported, timed_attempts, unjudged_reason
from .common import load_model
from .load import gpt2_small_parameters
from .saved import account, step

log = logging.getLogger(__name__)
FP32 = 4  # bytes per float32 element


def measure_memory(model: dict, text: str, seq_len: int, batch: int, timing_batch: int, timing_rounds: int,
                   timing_warmup: int, seed: int, device: str = "cpu", timing_retries: int = 0) -> dict:
    """Saved bytes (per hook call / unique storages), log-probability share, peak RSS, checkpoint time ratio."""
    loaded = load_model(model, device)  # model: gpt2_model's record (model.json); text: the corpus
    net, info = loaded.model, loaded.info
    ids = loaded.tokenizer.encode(text)[: batch * seq_len]
    if len(ids) < batch * seq_len:
        raise ValueError(f"the corpus gives {len(ids)} tokens; G6 needs batch x seq_len = {batch * seq_len}")
    dev = next(net.parameters()).device
    x = torch.tensor(ids, device=dev).view(batch, seq_len)  # (B, T): consecutive chunks of the corpus
    rows, by_node = [], None
    for b, keep in ((1, True), (1, False), (batch, False)):
        for ckpt in (False, True):
            log.info("saved-tensor accounting: batch %d, checkpoint %s, %s", b, ckpt, "kept" if keep else "dropped")
            r = account(net, x[:b], ckpt, keep)
            nodes = r.pop("_by_node", None)
            if nodes is not None:  # the plain, kept sequence: breakdown by node type
                by_node = pd.DataFrame(nodes)
            rows.append(r)
    saved = pd.DataFrame(rows)
    logprob_run = batch * seq_len * net.config.vocab_size * FP32  # the run's (B, T, V) fp32 log-probabilities
    saved["logprob_bytes"] = saved.batch * seq_len * net.config.vocab_size * FP32
    log.info("timing %d rounds of forward+backward at batch %d, plain vs checkpointed", timing_rounds, timing_batch)
    xt = x[:timing_batch]
    samples, load = timed_attempts({"plain": partial(step, net, xt, False), "checkpoint": partial(step, net, xt, True)},
                                   {"plain": 1, "checkpoint": 1}, timing_rounds, timing_warmup, seed, timing_retries)
    med = reported(samples).groupby("candidate").per_call_us.median()
    ratio = med["checkpoint"] / med["plain"]
    cuda = {}
    if dev.type == "cuda":
        step(net, x, False)  # warm-up at the batch size
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        step(net, x, False)  # the measured batch step
        cuda = {"cuda_max_allocated_bytes_batch_plain": torch.cuda.max_memory_allocated()}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    # `_volatile`: figures that differ between identical runs (README, "What lands where")
    summary = {"peak_rss_bytes_volatile": peak, "checkpoint_time_ratio_volatile": ratio, "timing_batch": timing_batch,
               "timing_rounds": timing_rounds, "timing_retries_volatile": load["timing_retries"],
               "plain_median_s_volatile": med["plain"] / 1e6,
               "checkpoint_median_s_volatile": med["checkpoint"] / 1e6, "logprob_bytes_run": logprob_run,
               "weights_bytes_run": info["unique_parameters"] * FP32, "threads": torch.get_num_threads(), **cuda}
    reason = unjudged_reason(int(load["timing_stayed_noisy"]), 1, load["timing_retries"])
    values = mark_unjudged(_values(saved, summary, batch, info["model_source"]), reason, prefix="checkpoint_time")
    return {"values": values, "saved": saved, "summary": pd.DataFrame([summary]), "timing": samples,
            "by_node": by_node, "_meta": {**info, **load}}


def _values(saved: pd.DataFrame, s: dict, batch: int, src: str) -> pd.DataFrame:
    """Documented G6 rows: byte arithmetic from GPT-2 small's config, saved bytes from this run."""
    small = GPT2Config()
    kept = saved[~saved.kept].set_index(["batch", "checkpoint"])
    one, big, big_ck = kept.loc[(1, False)], kept.loc[(batch, False)], kept.loc[(batch, True)]
    note = ("unique non-parameter storages; per hook call: {:.3g} GB. transformers' eager GPT-2 with tanh-GELU "
            "saves more per block than the documents' model")
    derived = values_table("G6", [("weights_mb", gpt2_small_parameters() * FP32 / 1e6),
                                  ("logprob_gb", batch * small.n_positions * small.vocab_size * FP32 / 1e9)],
                           {"weights_mb": "GPT-2 small's unique parameters x 4 bytes",
                            "logprob_gb": f"{batch} x {small.n_positions} x {small.vocab_size} x 4 bytes"})
    measured = values_table("G6", [
        ("per_sequence_saved_mb", one.unique_storage_bytes / 1e6),
        ("batch_saved_gb", big.unique_storage_bytes / 1e9),
        ("batch_checkpointed_saved_gb", big_ck.unique_storage_bytes / 1e9),
        ("checkpoint_time_overhead_pct", 100 * (s["checkpoint_time_ratio_volatile"] - 1))],
        {"per_sequence_saved_mb": note.format(one.bytes_per_hook_call / 1e9),
         "batch_saved_gb": note.format(big.bytes_per_hook_call / 1e9),
         "batch_checkpointed_saved_gb": "saves outside the blocks plus the block inputs the checkpoint keeps; "
                                        f"per hook call (outside the blocks only): {big_ck.bytes_per_hook_call / 1e9:.3g} GB",
         "checkpoint_time_overhead_pct": f"median of {s['timing_rounds']} rounds at batch {s['timing_batch']}"},
        model_source=src)
    return pd.concat([derived, measured], ignore_index=True)
