"""L6 measurements: memory accountings, equality checks and the plain-vs-checkpointed timing."""

from __future__ import annotations

import logging

import pandas as pd
import torch

from .. import timing
from ..tables import values_table
from .checkpoint import MODES, account, build, forward, grads_of, hook_calls_per_block
from .segments import segment_sweep

log = logging.getLogger(__name__)
SLOW, FAST = "checkpointed", "plain"
DOC_MODE = "checkpoint_sequential"  # reproduces the documents' 22 block calls and 2.50 MiB


def measure_l6_memory(width: int, hidden: int, blocks: int, batch: int, segments: int, seed: int) -> dict:
    """Accountings for plain and checkpointed runs, per-block hook calls, output/gradient equality."""
    rows, saved = [], []
    for mode in MODES:
        model, x = build(width, hidden, blocks, batch, seed)
        row, df = account(model, x, mode, segments)
        rows.append(row)
        saved.append(df.assign(mode=mode))
        log.info("%s: %d hook calls, %.4f MiB", mode, row["hook_calls"], row["hook_mib"])
    acc = pd.DataFrame(rows).set_index("mode")
    model, x = build(width, hidden, blocks, batch, seed)
    per_block = hook_calls_per_block(model, x)
    ref_loss, ref_grads = grads_of(model, x, "plain", segments)
    checks = []
    for mode in MODES[1:]:
        loss, grads = grads_of(model, x, mode, segments)
        checks.append({"mode": mode, "loss_abs_diff": (loss - ref_loss).abs().item(),
                       "max_grad_abs_diff": (grads - ref_grads).abs().max().item()})
    checks = pd.DataFrame(checks)
    plain, ck = acc.loc["plain"], acc.loc[DOC_MODE]
    seg = blocks // segments
    hidden_calls = sum(per_block[: blocks - seg])  # saves inside the checkpointed segments
    items = [("plain_saved_tensors", int(plain.hook_calls)), ("plain_saved_mib", plain.hook_mib),
             ("plain_block_calls", int(plain.block_calls_total)),
             ("ckpt_saved_tensors", int(ck.hook_calls)), ("ckpt_saved_mib", ck.hook_mib),
             ("ckpt_percent_of_plain", 100 * ck.hook_bytes / plain.hook_bytes),
             ("ckpt_reduction_pct", 100 * (1 - ck.hook_bytes / plain.hook_bytes)),  # "82 percent ... reduction"
             ("ckpt_block_calls", int(ck.block_calls_total)),
             ("output_max_diff", checks.loss_abs_diff.max()), ("grad_max_diff", checks.max_grad_abs_diff.max()),
             ("plain_unique_activation_mib", plain.unique_activation_mib),
             ("ckpt_unique_activation_mib", ck.unique_activation_mib),
             ("plain_live_after_forward_mib", plain.allocator_live_after_forward_mib),
             ("ckpt_live_after_forward_mib", ck.allocator_live_after_forward_mib),
             ("hook_calls_hidden_by_checkpoint", hidden_calls),
             ("every_segment_saved_tensors", int(acc.loc["checkpoint_every_segment"].hook_calls))]
    version = torch.__version__.split("+")[0]
    notes = {"ckpt_saved_tensors": (
        f"torch {version}: {int(ck.hook_calls)} hook calls, {int(ck.zero_byte_tensors)} of them zero-byte; "
        f"the {hidden_calls} saves inside checkpointed segments never reach the user's hooks"),
        "plain_saved_mib": (f"per hook call: includes {int(plain.parameter_hook_calls)} weight views "
                            f"({plain.parameter_hook_mib:.2f} MiB) and counts a storage again each time it is saved")}
    per_block_df = pd.DataFrame({"block": range(1, blocks + 1), "plain_hook_calls": per_block,
                                 "checkpointed": [i < blocks - seg for i in range(blocks)]})
    return {"values": values_table("L6", items, notes), "accounting": acc.reset_index(),
            "per_block": per_block_df, "checks": checks,
            "saved": pd.concat(saved, ignore_index=True).astype({"shape": str}),
            "segments": segment_sweep(width, hidden, blocks, batch, seed)}  # last: the rows above come first


def make_candidates(width: int, hidden: int, blocks: int, batch: int, segments: int, seed: int) -> dict:
    """Forward + backward closures for the plain and the checkpointed stack (same weights, same input)."""
    model, x = build(width, hidden, blocks, batch, seed)

    def step(mode):
        def run():
            model.zero_grad(set_to_none=True)
            x.grad = None
            forward(model, x, mode, segments).backward()
        return run

    return {SLOW: step(DOC_MODE), FAST: step("plain")}


def measure_calibration(width: int, hidden: int, blocks: int, batch: int, segments: int, seed: int,
                        target_ms: float) -> dict:
    """Loop counts per candidate, fixed once for every process run."""
    cands = make_candidates(width, hidden, blocks, batch, segments, seed)
    return {"calibration": timing.calibration_table(cands, target_ms)}


def measure_run(width: int, hidden: int, blocks: int, batch: int, segments: int, seed: int, rounds: int,
                warmup: int, process: int, calibration: pd.DataFrame, retries: int = 0) -> dict:
    """One process run of the plain and the checkpointed stack (adbench.timing.process_run)."""
    cands = make_candidates(width, hidden, blocks, batch, segments, seed)
    return timing.process_run(cands, calibration, rounds, warmup, seed, process, retries)
