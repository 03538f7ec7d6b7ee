"""G6: saved-tensor payload for one sequence and a batch, with and without activation checkpointing, on
two architectures holding the same weights: transformers' GPT2LMHeadModel as loaded, and the
nanoGPT-style GPT (nanogpt.py) the documents measured. Fused vs eager attention on each, too."""

from __future__ import annotations

import logging
import resource
import sys
from functools import partial

import pandas as pd
import torch

from ..timing import device_sync, mark_unjudged, reported, timed_attempts, unjudged_reason
from .arch import CANDIDATE, SUFFIX
from .common import load_model
from .fake import FakeAccounting, supported
from .nanogpt import from_gpt2, set_attention
from .saved import COUNTS, Accounting, account, step
from .values import memory_values

log = logging.getLogger(__name__)
FP32 = 4  # bytes per float32 element
# transformers: GPT2LMHeadModel as loaded (eager attention, tanh-GELU as separate ops, log_softmax on
# its logits); nanogpt: the nanoGPT-style copy (fused attention, exact GELU, one cross_entropy)
ARCHS = ("transformers", "nanogpt")


def _accounting(net, x: torch.Tensor, batch: int, fake: bool) -> tuple[list[dict], list[dict], Accounting]:
    """The six saved-tensor rows (batch 1 kept and dropped, the batch dropped; plain and checkpointed), the
    by-node breakdown of the plain, kept sequence, and the counter of the dropped rows (the attention's too).
    The kept rows run for real (they run backward); the dropped ones on fake tensors when `fake`, unless
    those disagree with the kept rows, which count the same forward (checked on every run)."""
    kept = []
    for ckpt in (False, True):
        log.info("saved-tensor accounting: batch 1, checkpoint %s, kept", ckpt)
        kept.append(account(net, x[:1], ckpt, True))
    by_node = kept[0].pop("_by_node")  # the plain, kept sequence: breakdown by node type
    counter = FakeAccounting(net) if fake else Accounting(net)
    dropped = _dropped(counter, x, batch)
    if fake and not _same_counts(kept, dropped[:2]):  # e.g. a library release that reads data a fake lacks
        log.warning("fake-tensor counts %s differ from the real forward's %s; counting the dropped rows for real",
                    _counts(dropped[:2]), _counts(kept))
        counter = Accounting(net)
        dropped = _dropped(counter, x, batch)
    return kept + dropped, by_node, counter


def _dropped(counter: Accounting, x: torch.Tensor, batch: int) -> list[dict]:
    rows = []
    for b in (1, batch):
        for ckpt in (False, True):
            log.info("saved-tensor accounting: batch %d, checkpoint %s, dropped (%s)", b, ckpt, _kind(counter))
            rows.append(counter(x[:b], ckpt))
    return rows


def _kind(counter: Accounting) -> str:
    return "fake tensors" if isinstance(counter, FakeAccounting) else "real forward"


def _counts(rows: list[dict]) -> list[list[int]]:
    return [[r[k] for k in COUNTS] for r in rows]


def _same_counts(rows: list[dict], others: list[dict]) -> bool:
    return _counts(rows) == _counts(others)


def _set_hf_attention(net, kind: str) -> None:
    net.set_attn_implementation(kind)  # transformers reads it again at every forward


SWITCH = {"transformers": _set_hf_attention, "nanogpt": set_attention}
CONFIGURED = {"transformers": "eager", "nanogpt": "sdpa"}  # the kernels the saved rows and the timing use


def _attention(counters: dict[str, Accounting], x: torch.Tensor) -> pd.DataFrame:
    """One sequence, no checkpointing: the fused kernel (SDPA) against explicit softmax(QK^T)V, same weights.
    score_bytes: one fp32 (B, heads, T, T) matrix per layer, what an explicit attention materializes."""
    rows = []
    for arch, counter in counters.items():
        cfg = counter.module.config
        for kind in ("sdpa", "eager"):
            SWITCH[arch](counter.module, kind)
            r = counter(x, False)
            rows.append({"arch": arch, "attention": kind, "batch": r["batch"], "tokens": r["tokens"],
                         **{k: r[k] for k in ("hook_calls", "bytes_per_hook_call", "unique_storages",
                                              "unique_storage_bytes", "largest_storage_bytes")},
                         "score_bytes": cfg.n_layer * r["batch"] * cfg.n_head * r["tokens"] ** 2 * FP32})
        SWITCH[arch](counter.module, CONFIGURED[arch])  # back (a real counter's module is the timed net)
    return pd.DataFrame(rows)


def faulting(fn, into: list[int]):
    """`fn`, appending each call's minor page faults (fresh pages the kernel zero-fills) to `into`. On the CPU a
    plain step's saved tensors are new allocations every step, returned to the system after it: their first
    touch costs time that checkpointing, which keeps less, does not pay (G6.checkpoint-costs-time's reason)."""
    def call():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        fn()
        into.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return call


def maxrss_bytes(ru_maxrss: int) -> int:
    """getrusage's ru_maxrss in bytes: macOS reports bytes, Linux KiB."""
    return ru_maxrss if sys.platform == "darwin" else ru_maxrss * 1024


def _median(xs: list[int]) -> float:
    return float(pd.Series(xs, dtype=float).median()) if xs else float("nan")


def _cuda_peak(net, x: torch.Tensor) -> dict:
    if x.device.type != "cuda":
        return {}
    step(net, x, False)  # warm-up at the batch size
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step(net, x, False)  # the measured batch step
    return {"cuda_max_allocated_bytes_batch_plain": torch.cuda.max_memory_allocated()}


def measure_memory(model: dict, text: str, seq_len: int, batch: int, timing_batch: int, timing_rounds: int,
                   timing_warmup: int, seed: int, device: str = "cpu", timing_retries: int = 0,
                   fake: bool = True) -> dict:
    """Saved bytes (per hook call / unique storages), log-probability share, peak RSS, checkpoint time ratio,
    for each architecture. `fake`: count the dropped rows on fake tensors (False: every forward real, the
    tests' oracle)."""
    loaded = load_model(model, device)  # model: gpt2_model's record (model.json); text: the corpus
    info = loaded.info
    ids = loaded.tokenizer.encode(text)[: batch * seq_len]
    if len(ids) < batch * seq_len:
        raise ValueError(f"the corpus gives {len(ids)} tokens; G6 needs batch x seq_len = {batch * seq_len}")
    nets = {"transformers": loaded.model, "nanogpt": from_gpt2(loaded.model)}  # the same weights
    dev = next(loaded.model.parameters()).device
    x = torch.tensor(ids, device=dev).view(batch, seq_len)  # (B, T): consecutive chunks of the corpus
    # fake tensors count on the CPU only: on CUDA a row also measures the allocator's growth, which needs real tensors
    fake = fake and dev.type == "cpu" and supported()
    saved, by_node, counters = [], [], {}
    for arch, net in nets.items():
        rows, nodes, counters[arch] = _accounting(net, x, batch, fake)
        saved += [{"arch": arch, **r} for r in rows]
        by_node += [{"arch": arch, **r} for r in nodes]
    saved = pd.DataFrame(saved)
    vocab = loaded.model.config.vocab_size
    saved["logprob_bytes"] = saved.batch * seq_len * vocab * FP32
    attention = _attention(counters, x[:1])
    xt = x[:timing_batch]
    # At batch 1 the accounting's kept rows already ran each candidate's forward+backward for real, on these
    # tensors: that is the first warm-up pass of each (the same kernels and shapes), so the timing skips it.
    warmup = max(timing_warmup - 1, 0) if timing_batch == 1 else timing_warmup
    summary, frames, loads = [], [], {}
    for arch in ARCHS:  # plain and checkpointed interleaved, one architecture at a time
        log.info("timing %d rounds of forward+backward at batch %d, plain vs checkpointed, %s", timing_rounds,
                 timing_batch, arch)
        names = {kind: f"{CANDIDATE[arch]}{kind}" for kind in ("plain", "checkpoint")}
        faults = {n: [] for n in names.values()}
        candidates = {names[k]: faulting(partial(step, nets[arch], xt, k == "checkpoint"), faults[names[k]])
                      for k in names}
        samples, loads[arch] = timed_attempts(candidates, {c: 1 for c in candidates}, timing_rounds, warmup,
                                              seed, timing_retries, sync=device_sync(dev))
        frames.append(samples)
        med = reported(samples).groupby("candidate").per_call_us.median()
        plain, ckpt = med[names["plain"]], med[names["checkpoint"]]
        # `_volatile`: figures that differ between identical runs (README, "What lands where")
        summary.append({"arch": arch, "peak_rss_bytes_volatile": 0, "checkpoint_time_ratio_volatile": ckpt / plain,
                        "timing_batch": timing_batch, "timing_rounds": timing_rounds,
                        "timing_retries_volatile": loads[arch]["timing_retries"], "plain_median_s_volatile": plain / 1e6,
                        "checkpoint_median_s_volatile": ckpt / 1e6,
                        "plain_minor_faults_volatile": _median(faults[names["plain"]]),
                        "checkpoint_minor_faults_volatile": _median(faults[names["checkpoint"]]),
                        "logprob_bytes_run": batch * seq_len * vocab * FP32,
                        "weights_bytes_run": sum(p.numel() for p in nets[arch].parameters()) * FP32,
                        "threads": torch.get_num_threads(), **_cuda_peak(nets[arch], x)})
    summary = pd.DataFrame(summary)
    summary["peak_rss_bytes_volatile"] = maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # the job's
    by_node = pd.DataFrame(by_node)
    noisy = {a: unjudged_reason(int(loads[a]["timing_stayed_noisy"]), 1, loads[a]["timing_retries"]) for a in ARCHS}
    values = memory_values(saved, summary, by_node, batch, info["model_source"], noisy)
    nano = nets["nanogpt"].config.to_dict()
    nano["weights"] = "copied from the transformers model (model_source)"
    return {"values": values, "saved": saved, "summary": summary, "timing": pd.concat(frames, ignore_index=True),
            "timing_pairs": timing_pairs(),
            "by_node": by_node, "attention": attention, "architectures": architectures(saved, batch),
            "_meta": {**info, **loads["transformers"], "nanogpt_timing": loads["nanogpt"], "nanogpt": nano,
                      "dropped_rows_counted_on": {a: _kind(c) for a, c in counters.items()},
                      "timing_warmup_passes": {"configured": timing_warmup, "run": warmup,
                                               "from_the_accounting": timing_warmup - warmup}}}


def timing_pairs() -> pd.DataFrame:
    """Which two timing candidates each timed quantity compares (checkpointed over plain, per architecture): the
    history tests a move on exactly these samples (adbench.history.timing_moves reads this table)."""
    return pd.DataFrame([{"quantity": f"checkpoint_time_overhead_pct{SUFFIX[a]}", "numerator": f"{CANDIDATE[a]}checkpoint",
                          "denominator": f"{CANDIDATE[a]}plain"} for a in ARCHS])


def architectures(saved: pd.DataFrame, batch: int) -> pd.DataFrame:
    """The two architectures side by side: what each keeps, counted both ways (from the saved table's
    dropped rows: the batch is counted only there)."""
    dropped = saved[~saved.kept].set_index(["arch", "batch", "checkpoint"])
    cases = [("one sequence", 1, False), (f"batch {batch}", batch, False), (f"batch {batch}, checkpointed", batch, True)]
    rows = []
    for label, b, ckpt in cases:
        for col, what in (("unique_storage_bytes", "unique storage bytes"), ("bytes_per_hook_call", "bytes per hook call"),
                          ("hook_calls", "hook calls")):
            r = {"case": label, "count": what,
                 **{a: dropped.loc[(a, b, ckpt), col] for a in ARCHS}}
            rows.append(r | {"nanogpt_over_transformers": r["nanogpt"] / r["transformers"]})
    return pd.DataFrame(rows)
