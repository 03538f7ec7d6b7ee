"""L5 controls: which in-place edits the version check refuses (saved storage) and which it lets run.

Every case builds a small float64 graph, edits a tensor in place under no_grad, then calls backward.
The same case without the edit gives the reference gradient, so a run that is let through can be
checked against the gradient of the forward that actually ran.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import torch

F64 = torch.float64


def _mul_saves_x(x, shift, edit):
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    y = (xt * xt).sum()  # MulBackward saves both operands: x itself
    if edit:
        with torch.no_grad():
            xt.add_(shift)
    y.backward()
    return xt.grad


def _add_saves_nothing(x, shift, edit):
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    w = torch.ones_like(xt, requires_grad=True)
    y = (xt + w).sum()  # AddBackward passes the upstream gradient on without reading its inputs
    if edit:
        with torch.no_grad():
            xt.add_(shift)
    y.backward()
    return xt.grad


def _exp_saves_output(x, shift, edit):
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    y = torch.exp(xt).sum()  # ExpBackward saves its result, since d exp(x)/dx = exp(x)
    if edit:
        with torch.no_grad():
            xt.add_(shift)
    y.backward()
    return xt.grad


def _square(x) -> torch.Tensor:
    """x as a 2 x n matrix (the row repeated, shifted), so it has a transpose and two rows."""
    row = torch.tensor(x, dtype=F64)
    return torch.stack([row, row + 1.0]).requires_grad_()


def _transpose_saved_row_written(x, shift, edit):
    base = _square(x)
    saved = base.t()   # view 1: the transpose, saved by the product below
    other = base[0]    # view 2: a row of the same storage
    y = (saved * saved).sum()
    if edit:
        with torch.no_grad():
            other.add_(shift)
    y.backward()
    return base.grad


def _row_saved_other_row_written(x, shift, edit):
    base = _square(x)
    h = base * 1.0           # a non-leaf tensor whose two rows are views of one storage
    saved, other = h[0], h[1]  # no element in common
    y = (saved * saved).sum()
    if edit:
        with torch.no_grad():
            other.add_(shift)
    y.backward()
    return base.grad


def _clone_row_written(x, shift, edit):
    base = _square(x)
    saved = base.t()
    other = base.detach().clone()[0]  # control: a row of a copy, its own storage
    y = (saved * saved).sum()
    if edit:
        with torch.no_grad():
            other.add_(shift)
    y.backward()
    return base.grad


# (kind, case, whether the edit writes into storage a saved tensor uses, builder)
CASES: list[tuple[str, str, bool, Callable]] = [
    ("direct", "y = sum(x*x) saves x; edit x", True, _mul_saves_x),
    ("direct", "y = sum(x + w) saves no input; edit x", False, _add_saves_nothing),
    ("direct", "y = sum(exp(x)) saves its output, not x; edit x", False, _exp_saves_output),
    ("view", "product saves the transpose x.t(); write through the row view x[0]", True, _transpose_saved_row_written),
    ("view", "product saves row h[0]; write through row h[1] (no shared element)", True, _row_saved_other_row_written),
    ("view", "control: product saves x.t(); write through a row of x.clone()", False, _clone_row_written),
]


def inplace_cases(x: list[float], shift: float) -> pd.DataFrame:
    """One row per case: did backward raise after the edit, with which message, and, when it ran,
    does its gradient equal the unedited graph's."""
    rows = []
    for kind, case, saved, build in CASES:
        reference = build(x, shift, edit=False)
        try:
            grad, message = build(x, shift, edit=True), "no error"
        except RuntimeError as err:
            grad, message = None, " ".join(str(err).split())
        rows.append({"kind": kind, "case": case, "edits_saved_storage": saved,
                     "raised": grad is None, "message": message,
                     "grad_equals_unedited": None if grad is None else bool(torch.equal(grad, reference))})
    return pd.DataFrame(rows)
