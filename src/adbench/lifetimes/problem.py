"""The L1-L3 regression problem: a seeded float64 linear layer, its examples, and its flattened gradients."""

from __future__ import annotations

import torch

F64 = torch.float64


def _problem(n: int, n_in: int, n_out: int, seed: int):
    """A float64 linear layer and n regression examples, all from one seeded generator."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = torch.nn.Linear(n_in, n_out, dtype=F64)
    x = torch.randn(n, n_in, dtype=F64, generator=gen)   # (n, n_in)
    y = torch.randn(n, n_out, dtype=F64, generator=gen)  # (n, n_out)
    return model, x, y


def _grads(model: torch.nn.Module) -> torch.Tensor:
    """All parameter gradients flattened into one vector."""
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def _mse_grad(model, x, y, reduction: str = "mean", scale: float = 1.0) -> torch.Tensor:
    """Gradient of scale * mse(model(x), y) on a cleared model."""
    model.zero_grad(set_to_none=True)
    (scale * torch.nn.functional.mse_loss(model(x), y, reduction=reduction)).backward()
    return _grads(model)
