"""L6 with dropout inside the checkpointed segments: backward recomputes each segment, and the
recomputation draws the same masks as the forward only if the generator state is restored first
(`preserve_rng_state=True`, torch's default). Without it the recomputed masks are fresh draws, so the
gradient belongs to a different network than the loss that was computed."""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from .checkpoint import Block
from .checkpoint_probe import measure_l6_memory


class DropoutBlock(Block):
    """h + Linear(D, H) -> tanh -> dropout -> Linear(H, D): a random mask inside every block."""

    def __init__(self, width: int, hidden: int, p: float):
        super().__init__(width, hidden)
        self.drop = nn.Dropout(p)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return h + self.fc2(self.drop(torch.tanh(self.fc1(h))))  # (B, D) -> (B, H) -> (B, D)


def run(width: int, hidden: int, blocks: int, batch: int, segments: int, seed: int, p: float,
        preserve: bool | None) -> tuple[float, torch.Tensor, int]:
    """(loss, every gradient flattened, block calls) for one forward + backward in train mode; `preserve`
    None runs the stack plainly, else every segment is checkpointed with preserve_rng_state=preserve."""
    torch.manual_seed(seed)
    model = nn.Sequential(*[DropoutBlock(width, hidden, p) for _ in range(blocks)]).train()
    x = torch.randn(batch, width, requires_grad=True)  # (B, D)
    torch.manual_seed(seed + 1)  # the masks' generator state at the start of the forward, the same in every run
    if preserve is None:
        out = model(x)
    else:
        size, out = blocks // segments, x
        for s in range(segments):
            out = checkpoint(model[s * size:(s + 1) * size], out, use_reentrant=False, preserve_rng_state=preserve)
    loss = out.pow(2).mean()
    loss.backward()
    grads = torch.cat([q.grad.reshape(-1) for q in model.parameters()] + [x.grad.reshape(-1)])
    return loss.item(), grads, sum(b.calls for b in model)


RNG_BUGS = ("preserve_rng_state never passed on",)  # a measurement-level control: every run checkpoints with False


def rng_table(width: int, hidden: int, blocks: int, batch: int, segments: int, seed: int,
              dropout: float, bug: str | None = None) -> pd.DataFrame:
    """Checkpointed against plain, with dropout `dropout` and with none (p = 0: the flag has nothing to restore).
    `bug`: a measurement-level control (RNG_BUGS); None in every real run."""
    rows = []
    for p in (dropout, 0.0):
        plain_loss, plain, _ = run(width, hidden, blocks, batch, segments, seed, p, None)
        for preserve in (True, False):
            asked = False if bug == RNG_BUGS[0] else preserve
            loss, grads, calls = run(width, hidden, blocks, batch, segments, seed, p, asked)
            diff = (grads - plain).abs().max().item()
            rows.append({"dropout_p": p, "preserve_rng_state": preserve, "block_calls": calls,
                         "loss_abs_diff_vs_plain": abs(loss - plain_loss), "max_grad_abs_diff_vs_plain": diff,
                         "rel_grad_diff_vs_plain": diff / plain.abs().max().item(),
                         "grads_identical": bool(torch.equal(grads, plain))})
    return pd.DataFrame(rows)


def measure_l6_memory_rng(width: int, hidden: int, blocks: int, batch: int, segments: int, seed: int,
                          dropout: float) -> dict:
    """L6's memory tables plus `rng`: checkpointed dropout with and without the generator state restored."""
    out = measure_l6_memory(width, hidden, blocks, batch, segments, seed)
    out["rng"] = rng_table(width, hidden, blocks, batch, segments, seed, dropout)
    return out
