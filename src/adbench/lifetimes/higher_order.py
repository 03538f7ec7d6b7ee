"""L5's last pair: retain_graph keeps the graph of the forward alive, create_graph records the backward
itself. Only the second gives a derivative that can be differentiated again."""

from __future__ import annotations

import pandas as pd
import torch

F64 = torch.float64


def _second(first: torch.Tensor, x: torch.Tensor) -> tuple[float, str]:
    """(d first / dx, 'no error'), or (NaN, the RuntimeError's text) when `first` is not differentiable."""
    try:
        (d2,) = torch.autograd.grad(first, x)
    except RuntimeError as err:
        return float("nan"), " ".join(str(err).split())
    return d2.item(), "no error"


HIGHER_BUGS = ("create_graph dropped",)  # a measurement-level control (claims/bugs.py): the flag never passed


def higher_order_table(cube_at: float, bug: str | None = None) -> pd.DataFrame:
    """f(x) = x³ at x = cube_at: autograd.grad with neither flag, retain_graph or create_graph, then a
    second grad through the first derivative, and whether y's graph can still be walked. `bug`: HIGHER_BUGS."""
    rows = []
    for flag in ("neither", "retain_graph", "create_graph"):
        x = torch.tensor(cube_at, dtype=F64, requires_grad=True)
        y = x ** 3
        kw = {} if flag == "neither" or (flag == "create_graph" and bug == HIGHER_BUGS[0]) else {flag: True}
        (d1,) = torch.autograd.grad(y, x, **kw)  # d1 = 3x²; a graph of its own only with create_graph
        d2, error = _second(d1, x)
        rows.append({"flag": flag, "x": cube_at, "first_derivative": d1.item(), "first_requires_grad": d1.requires_grad,
                     "first_grad_fn": type(d1.grad_fn).__name__ if d1.grad_fn is not None else "None (no graph)",
                     "graph_of_y_kept": _reusable(y, x), "second_derivative": d2, "second_grad_error": error})
    return pd.DataFrame(rows)


def _reusable(y: torch.Tensor, x: torch.Tensor) -> bool:
    """Whether y's graph can be walked again after the first autograd.grad (its saved tensors still held)."""
    try:
        torch.autograd.grad(y, x)
    except RuntimeError:
        return False
    return True
