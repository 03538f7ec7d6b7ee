"""O3 measured: the state a real torch optimizer holds, read off its tensors before and after one step.

A small fp32 MLP and `torch.optim.<optimizer>` (AdamW by default). Before the first step `opt.state` is
empty: the moments are allocated lazily by the step. After it, each parameter's state tensors are
listed with their bytes (`element_size() * numel()` of the real tensors), and the persistent payload
per parameter element is (parameter + gradient + every state tensor shaped like the parameter) bytes
divided by the element count. Per-tensor bookkeeping (Adam's scalar `step`) is counted apart: it does
not grow with the parameter.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn


def tensor_bytes(t: torch.Tensor | None) -> int:
    """Bytes of a tensor's elements (0 for None)."""
    return 0 if t is None else t.element_size() * t.numel()


def mlp(layers: list[int], seed: int) -> nn.Sequential:
    """fp32 Linear(layers[0], layers[1]) -> tanh -> ... -> Linear(layers[-2], layers[-1]), seeded."""
    torch.manual_seed(seed)
    mods: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(layers, layers[1:])):
        mods += [nn.Linear(a, b)] + ([nn.Tanh()] if i < len(layers) - 2 else [])
    return nn.Sequential(*mods)


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """torch.optim.<name>(params, lr=lr); the name must be one of torch's optimizers."""
    cls = getattr(torch.optim, name, None)
    if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
        raise ValueError(f"config key 'optim.o3.adam_state.optimizer': {name!r} is not a torch.optim optimizer")
    return cls(params, lr=lr)


# a measurement-level control (claims/bugs.py): the state tensors' size taken as their element count, not bytes
ADAM_STATE_BUGS = ("state counted in elements, not bytes",)


def state_rows(model: nn.Module, opt: torch.optim.Optimizer, phase: str, bug: str | None = None) -> list[dict]:
    """One row per (parameter, state entry); a parameter without state gets one row with entry 'none'. `bug`: a
    measurement-level control (ADAM_STATE_BUGS); None in every real run."""
    rows = []
    for name, p in model.named_parameters():
        base = {"phase": phase, "parameter": name, "numel": p.numel(), "param_bytes": tensor_bytes(p),
                "grad_bytes": tensor_bytes(p.grad)}
        state = opt.state.get(p, {})
        if not state:
            rows.append({**base, "entry": "none", "dtype": "", "shape_like_param": False, "entry_bytes": 0})
        for key in sorted(state):
            t = state[key]
            t = t if torch.is_tensor(t) else torch.tensor(t)
            rows.append({**base, "entry": key, "dtype": str(t.dtype).removeprefix("torch."),
                         "shape_like_param": t.shape == p.shape,
                         "entry_bytes": t.numel() if bug == ADAM_STATE_BUGS[0] else tensor_bytes(t)})
    return rows


def summary(rows: pd.DataFrame, n_state_entries: int) -> dict:
    """Per phase: state entries, element count and bytes per parameter element of each collection."""
    per_param = rows.drop_duplicates("parameter")
    n = int(per_param.numel.sum())
    moments = rows[rows.shape_like_param]
    moment_bytes = int(moments.entry_bytes.sum())
    total = int(per_param.param_bytes.sum() + per_param.grad_bytes.sum()) + moment_bytes
    return {"phase": rows.phase.iloc[0], "state_entries": n_state_entries, "param_elements": n,
            "param_bytes": int(per_param.param_bytes.sum()), "grad_bytes": int(per_param.grad_bytes.sum()),
            "moment_tensors": len(moments), "moment_bytes": moment_bytes,
            "bookkeeping_bytes": int(rows.loc[~rows.shape_like_param, "entry_bytes"].sum()),
            "total_bytes_per_param": total / n}


def adam_state(layers: list[int], batch: int, lr: float, seed: int, optimizer: str = "AdamW",
               bug: str | None = None) -> dict:
    """`adam_state` (state entries per parameter, before and after one step) and `adam_bytes` (per phase)."""
    model = mlp(layers, seed)
    opt = make_optimizer(optimizer, model.parameters(), lr)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, layers[0], generator=gen)   # (B, in)
    y = torch.randn(batch, layers[-1], generator=gen)  # (B, out)
    nn.functional.mse_loss(model(x), y).backward()
    before = pd.DataFrame(state_rows(model, opt, "before_step"))
    n_before = len(opt.state)
    opt.step()
    after = pd.DataFrame(state_rows(model, opt, "after_step", bug))
    table = pd.concat([before, after], ignore_index=True)
    table.insert(0, "optimizer", type(opt).__name__)
    sums = pd.DataFrame([summary(before, n_before), summary(after, len(opt.state))])
    sums.insert(0, "optimizer", type(opt).__name__)
    return {"adam_state": table, "adam_bytes": sums}
