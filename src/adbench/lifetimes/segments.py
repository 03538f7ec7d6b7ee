"""L6 segment sweep: the same stack checkpointed with every segment count that divides it.

Per segment count: the bytes the graph keeps, split into saves made outside any block (segment
boundaries and the loss's input) and inside blocks (the segments that run without checkpoint); the
block forward calls that backward makes (recomputation) and the longest run of them before a
parameter gradient lands (how much is recomputed at a time).
"""

from __future__ import annotations

import pandas as pd
import torch

from .checkpoint import build, forward

SWEEP_MODES = ("checkpoint_every_segment", "checkpoint_sequential")


def divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _longest_run(events: list[str], kind: str) -> int:
    best = run = 0
    for e in events:
        run = run + 1 if e == kind else 0
        best = max(best, run)
    return best


def sweep_one(width: int, hidden: int, blocks: int, batch: int, seed: int, mode: str, segments: int) -> dict:
    """One forward + backward, counted by a saved-tensor hook and by block and gradient hooks."""
    model, x = build(width, hidden, blocks, batch, seed)
    inside, events = [False], []
    handles = [b.register_forward_pre_hook(lambda m, a: (inside.__setitem__(0, True), events.append("block"))[0])
               for b in model]
    handles += [b.register_forward_hook(lambda m, a, o: inside.__setitem__(0, False)) for b in model]
    handles += [p.register_post_accumulate_grad_hook(lambda p: events.append("grad"))
                for b in model for p in b.parameters()]
    saved = {"inside": [0, 0], "outside": [0, 0]}  # [tensors, bytes]

    def pack(t: torch.Tensor) -> torch.Tensor:
        where = saved["inside" if inside[0] else "outside"]
        where[0] += 1
        where[1] += t.nelement() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = forward(model, x, mode, segments)
    forward_calls = events.count("block")
    events.clear()
    loss.backward()
    for h in handles:
        h.remove()
    return {"mode": mode, "segments": segments, "blocks_per_segment": blocks // segments,
            "outside_block_saves": saved["outside"][0], "outside_block_bytes": saved["outside"][1],
            "inside_block_saves": saved["inside"][0], "inside_block_bytes": saved["inside"][1],
            "saved_bytes": saved["outside"][1] + saved["inside"][1],
            "block_calls_forward": forward_calls, "blocks_recomputed": events.count("block"),
            "longest_recompute_run": _longest_run(events, "block"), "loss": loss.item()}


def segment_sweep(width: int, hidden: int, blocks: int, batch: int, seed: int) -> pd.DataFrame:
    """Every mode of SWEEP_MODES at every segment count dividing `blocks`."""
    return pd.DataFrame([sweep_one(width, hidden, blocks, batch, seed, mode, s)
                         for mode in SWEEP_MODES for s in divisors(blocks)])
