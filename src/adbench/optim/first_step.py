"""O3 measured: Adam's first step beside the essay's formula, and the persistent state of three real optimizers.

The model is adam_state's fp32 MLP with one seeded batch, so both tables read the very tensors a torch optimizer
holds. `adam_first_step`: torch.optim.Adam's real first update of every parameter element beside the essay's
formula computed by hand in float64 from the autograd gradient (with bias correction, m_hat = g and v_hat = g^2,
so the step is lr * g / (|g| + eps)). `state_by_optimizer`: bytes of the state tensors SGD, SGD with momentum and
Adam keep after one step, per parameter element.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

from .adam_state import mlp, tensor_bytes

# measurement-level controls (claims/bugs.py): the hand formula without Adam's bias correction; the optimizers'
# state read before their first step (where lazy optimizers hold nothing yet)
FIRST_STEP_BUGS = ("hand Adam without bias correction",)
STATE_BUGS = ("state read before the step",)
# the three optimizers the essay's persistent-state sentence contrasts; momentum 0.9 is torch's customary value
OPTIMIZERS = (("SGD", "SGD", {}), ("SGD momentum", "SGD", {"momentum": 0.9}), ("Adam", "Adam", {}))


def _backward(layers: list[int], batch: int, seed: int) -> nn.Module:
    """adam_state's seeded MLP with the gradient of one seeded batch's mean squared error."""
    model = mlp(layers, seed)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, layers[0], generator=gen)   # (B, in)
    y = torch.randn(batch, layers[-1], generator=gen)  # (B, out)
    nn.functional.mse_loss(model(x), y).backward()
    return model


def hand_first_step(g: np.ndarray, lr: float, beta1: float, beta2: float, eps: float,
                    corrected: bool = True) -> np.ndarray:
    """Adam's first update from zero state, in float64: lr * m_hat / (sqrt(v_hat) + eps), m = (1 - beta1) g and
    v = (1 - beta2) g^2; with the bias correction m_hat = g, v_hat = g^2."""
    m, v = (1 - beta1) * g, (1 - beta2) * g * g
    if corrected:
        m, v = m / (1 - beta1), v / (1 - beta2)
    return lr * m / (np.sqrt(v) + eps)


def adam_first_step(layers: list[int], batch: int, lr: float, seed: int, bug: str | None = None) -> pd.DataFrame:
    """One row per parameter element: before/after torch.optim.Adam's first step, the gradient, Adam's stored
    averages, and the hand formula's step. `bug`: a measurement-level control (FIRST_STEP_BUGS)."""
    model = _backward(layers, batch, seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt.step()
    group = opt.param_groups[0]
    (b1, b2), eps = group["betas"], group["eps"]
    frames = []
    for name, p in model.named_parameters():
        g = p.grad.double().flatten().numpy()
        st = opt.state[p]
        frames.append(pd.DataFrame({
            "parameter": name, "index": np.arange(p.numel()),
            "param_before": before[name].double().flatten().numpy(),
            "param_after": p.detach().double().flatten().numpy(),
            "grad": g, "exp_avg": st["exp_avg"].double().flatten().numpy(),
            "exp_avg_sq": st["exp_avg_sq"].double().flatten().numpy(),
            "hand_step": hand_first_step(g, lr, b1, b2, eps, corrected=bug != FIRST_STEP_BUGS[0])}))
    table = pd.concat(frames, ignore_index=True)
    return table.assign(lr=group["lr"], beta1=b1, beta2=b2, eps=eps, dtype=str(p.dtype).removeprefix("torch."))


def state_by_optimizer(layers: list[int], batch: int, lr: float, seed: int, bug: str | None = None) -> pd.DataFrame:
    """Per optimizer: the bytes of its state tensors shaped like a parameter (persistent, they grow with P) and of
    the rest (per-tensor bookkeeping), after one step. `bug`: a measurement-level control (STATE_BUGS)."""
    rows = []
    for label, cls, settings in OPTIMIZERS:
        model = _backward(layers, batch, seed)
        opt = getattr(torch.optim, cls)(model.parameters(), lr=lr, **settings)
        if bug != STATE_BUGS[0]:
            opt.step()
        params = list(model.parameters())
        state = [(p, t) for p in params for t in opt.state.get(p, {}).values() if torch.is_tensor(t)]
        like = [tensor_bytes(t) for p, t in state if t.shape == p.shape]
        rows.append({"optimizer": label, "torch_class": cls, "momentum": settings.get("momentum", 0.0),
                     "param_elements": sum(p.numel() for p in params),
                     "param_bytes": sum(tensor_bytes(p) for p in params),
                     "state_tensors": len(like), "state_bytes": sum(like),
                     "bookkeeping_bytes": sum(tensor_bytes(t) for p, t in state if t.shape != p.shape)})
    return pd.DataFrame(rows)
