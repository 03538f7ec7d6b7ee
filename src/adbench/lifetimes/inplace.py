"""L5 controls: which in-place edits the version check refuses (saved storage) and which it lets run.

Every case builds a small float64 graph, edits a tensor in place under no_grad, then calls backward.
The same case without the edit gives the reference gradient, so a run that is let through can be
checked against the gradient of the forward that actually ran.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import torch

from .saved_values import edit as edit_in_place

F64 = torch.float64


def _edit_then_backward(leaf: torch.Tensor, y: torch.Tensor, target: torch.Tensor, shift, edit,
                        bug: str | None = None) -> torch.Tensor:
    """Optionally add `shift` to `target` in place (no_grad), then backward from `y`: the leaf's gradient.
    `bug`: a measurement-level control (saved_values.L5_BUGS): the write lands in a copy."""
    if edit:
        with torch.no_grad():
            edit_in_place(target, shift, bug)
    y.backward()
    return leaf.grad


def _direct(forward: Callable[[torch.Tensor], torch.Tensor]) -> Callable:
    """A case on the leaf x itself (a float64 vector): y = forward(x); the edit writes into x."""
    def build(x, shift, edit, bug=None):
        xt = torch.tensor(x, dtype=F64, requires_grad=True)
        return _edit_then_backward(xt, forward(xt), xt, shift, edit, bug)
    return build


def _exp_output_edited(x, shift, edit, bug=None) -> torch.Tensor:
    """y = sum(e) with e = exp(x): ExpBackward saved e, and the edit writes into e."""
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    e = torch.exp(xt)
    return _edit_then_backward(xt, e.sum(), e, shift, edit, bug)


def _square(x) -> torch.Tensor:
    """x as a 2 x n matrix (the row repeated, shifted), so it has a transpose and two rows."""
    row = torch.tensor(x, dtype=F64)
    return torch.stack([row, row + 1.0]).requires_grad_()


def _views(pick: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]) -> Callable:
    """A case on two views of one 2 x n matrix: pick(base) -> (saved, written); y = sum(saved * saved)
    saves `saved`, and the edit writes through `written`."""
    def build(x, shift, edit, bug=None):
        base = _square(x)
        saved, written = pick(base)
        return _edit_then_backward(base, (saved * saved).sum(), written, shift, edit, bug)
    return build


def _rows_of_a_nonleaf(base: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    h = base * 1.0  # a non-leaf tensor whose two rows are views of one storage, no element in common
    return h[0], h[1]


_mul_saves_x = _direct(lambda x: (x * x).sum())  # MulBackward saves both operands: x itself
# AddBackward passes the upstream gradient on without reading its inputs
_add_saves_nothing = _direct(lambda x: (x + torch.ones_like(x, requires_grad=True)).sum())
_exp_saves_output = _direct(lambda x: torch.exp(x).sum())  # ExpBackward saves its result: d exp(x)/dx = exp(x)
# view 1: the transpose, saved by the product; view 2: a row of the same storage
_transpose_saved_row_written = _views(lambda base: (base.t(), base[0]))
_row_saved_other_row_written = _views(_rows_of_a_nonleaf)
# control: the written row belongs to a copy, its own storage
_clone_row_written = _views(lambda base: (base.t(), base.detach().clone()[0]))


# (kind, case, whether the edit writes into storage a saved tensor uses, builder)
CASES: list[tuple[str, str, bool, Callable]] = [
    ("direct", "y = sum(x*x) saves x; edit x", True, _mul_saves_x),
    ("direct", "y = sum(x + w) saves no input; edit x", False, _add_saves_nothing),
    ("direct", "y = sum(exp(x)) saves its output, not x; edit x", False, _exp_saves_output),
    ("direct", "y = sum(exp(x)) saves its output; edit the output", True, _exp_output_edited),
    ("view", "product saves the transpose x.t(); write through the row view x[0]", True, _transpose_saved_row_written),
    ("view", "product saves row h[0]; write through row h[1] (no shared element)", True, _row_saved_other_row_written),
    ("view", "control: product saves x.t(); write through a row of x.clone()", False, _clone_row_written),
]


def inplace_cases(x: list[float], shift: float, bug: str | None = None) -> pd.DataFrame:
    """One row per case: did backward raise after the edit, with which message, and, when it ran,
    does its gradient equal the unedited graph's. `bug`: a measurement-level control (saved_values.L5_BUGS)."""
    rows = []
    for kind, case, saved, build in CASES:
        reference = build(x, shift, edit=False)
        try:
            grad, message = build(x, shift, edit=True, bug=bug), "no error"
        except RuntimeError as err:
            grad, message = None, " ".join(str(err).split())
        rows.append({"kind": kind, "case": case, "edits_saved_storage": saved,
                     "raised": grad is None, "message": message,
                     "grad_equals_unedited": None if grad is None else bool(torch.equal(grad, reference))})
    return pd.DataFrame(rows)
