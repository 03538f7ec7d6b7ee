"""L6: a residual MLP stack, plain vs activation checkpointing, counted with saved-tensor hooks."""

from __future__ import annotations

import logging

import pandas as pd
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

log = logging.getLogger(__name__)
MIB = 2 ** 20
MODES = ("plain", "checkpoint_sequential", "checkpoint_every_segment")


class Block(nn.Module):
    """h + Linear(D, H) -> tanh -> Linear(H, D); counts its forward calls (recomputation included)."""

    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(width, hidden), nn.Linear(hidden, width)
        self.calls = 0

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return h + self.fc2(torch.tanh(self.fc1(h)))  # (B, D) -> (B, H) -> (B, D)


def build(width: int, hidden: int, blocks: int, batch: int, seed: int):
    """Seeded stack of residual blocks and an input (B, D) that requires grad."""
    torch.manual_seed(seed)
    model = nn.Sequential(*[Block(width, hidden) for _ in range(blocks)])
    x = torch.randn(batch, width, requires_grad=True)
    return model, x


def forward(model: nn.Sequential, x: torch.Tensor, mode: str, segments: int) -> torch.Tensor:
    """Scalar loss mean(out²) with the stack run plain or checkpointed (use_reentrant=False)."""
    if mode == "plain":
        out = model(x)
    elif mode == "checkpoint_sequential":  # torch's helper: the last segment runs without checkpoint
        out = checkpoint_sequential(model, segments, x, use_reentrant=False)
    elif mode == "checkpoint_every_segment":
        size, out = len(model) // segments, x
        for s in range(segments):
            out = checkpoint(model[s * size:(s + 1) * size], out, use_reentrant=False)
    else:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    return out.pow(2).mean()


def storage_key(t: torch.Tensor, index: int) -> int:
    """Which storage a saved tensor shares: its address, or for an empty storage its own key (-1 - index).
    Empty storages all report address 0 and keep no bytes, so they share nothing: torch 2.11's
    non-reentrant checkpoint saves an empty placeholder (torch.empty((0,)), _NoopSaveInputs) per segment
    through the user's hooks, and keyed by address they read as one storage saved several times."""
    st = t.untyped_storage()
    return st.data_ptr() if st.nbytes() > 0 else -1 - index


def account(model: nn.Sequential, x: torch.Tensor, mode: str, segments: int) -> tuple[dict, pd.DataFrame]:
    """Both accountings of what the user's pack hook sees, live bytes after forward, block calls."""
    for b in model:
        b.calls = 0
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        seen.append({"shape": tuple(t.shape), "bytes": t.nelement() * t.element_size(),
                     "storage": storage_key(t, len(seen)), "storage_bytes": st.nbytes(),
                     "parameter": st.data_ptr() in params})
        return t

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = forward(model, x, mode, segments)
    # net bytes the allocator still holds after forward: what the graph really keeps alive
    live = sum(e.cpu_memory_usage for e in prof.events() if e.cpu_parent is None)
    fwd_calls = sum(b.calls for b in model)
    loss.backward()
    log.info("%s: %d block calls in forward, %d after backward", mode, fwd_calls, sum(b.calls for b in model))
    df = pd.DataFrame(seen)
    # Addresses differ between runs: keep only which saves share a storage, as a first-seen index
    # (every saved tensor is alive until backward, so no address is reused inside one forward).
    df["storage"] = pd.factorize(df["storage"])[0]
    df = df.rename(columns={"storage": "storage_id"})
    uniq = df.drop_duplicates("storage_id")
    acts = uniq[~uniq.parameter]
    row = {"mode": mode, "hook_calls": len(df), "hook_bytes": int(df["bytes"].sum()),
           "hook_mib": df["bytes"].sum() / MIB, "zero_byte_tensors": int((df["bytes"] == 0).sum()),
           "parameter_hook_calls": int(df.parameter.sum()),
           "parameter_hook_mib": df.loc[df.parameter, "bytes"].sum() / MIB,
           "unique_storages": len(uniq), "unique_storage_mib": uniq.storage_bytes.sum() / MIB,
           "unique_activation_storages": len(acts), "unique_activation_mib": acts.storage_bytes.sum() / MIB,
           "allocator_live_after_forward_mib": live / MIB,
           "block_calls_forward": fwd_calls, "block_calls_total": sum(b.calls for b in model),
           "loss": loss.item()}
    return row, df


def hook_calls_per_block(model: nn.Sequential, x: torch.Tensor) -> list[int]:
    """Plain run: saved-tensor hook calls made while each block runs (what checkpointing hides)."""
    counts, current = [0] * len(model), [None]
    handles = [b.register_forward_pre_hook(lambda m, a, i=i: current.__setitem__(0, i)) for i, b in enumerate(model)]
    handles += [b.register_forward_hook(lambda m, a, o: current.__setitem__(0, None)) for b in model]

    def pack(t):
        if current[0] is not None:
            counts[current[0]] += 1
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward(model, x, "plain", 1)
    for h in handles:
        h.remove()
    return counts


def grads_of(model: nn.Sequential, x: torch.Tensor, mode: str, segments: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, every parameter gradient and dL/dx flattened) for one fresh backward."""
    model.zero_grad(set_to_none=True)
    x.grad = None
    loss = forward(model, x, mode, segments)
    loss.backward()
    return loss.detach(), torch.cat([p.grad.reshape(-1) for p in model.parameters()] + [x.grad.reshape(-1)])
