"""L4-L5: leaves vs non-leaves, and how long saved values and graphs live."""

from __future__ import annotations

import warnings

import pandas as pd
import torch

from ..tables import values_table
from .higher_order import higher_order_table
from .inplace import inplace_cases
from .saved_values import lifetime_table, saved_by_table, version_table

F64 = torch.float64


def measure_l4(x: list[float]) -> dict:
    """L4: x is a leaf without grad_fn; y = x*x is not; y.grad exists only after retain_grad()."""
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    y = xt * xt
    y.sum().backward()
    with warnings.catch_warnings(record=True) as caught:  # torch warns that non-leaf .grad is not populated
        warnings.simplefilter("always")
        default_y_grad = repr(y.grad)  # no retain_grad: the non-leaf gradient was released
    xr = torch.tensor(x, dtype=F64, requires_grad=True)
    yr = xr * xr
    yr.retain_grad()
    yr.sum().backward()
    table = pd.DataFrame([
        {"tensor": "x", "is_leaf": xt.is_leaf, "grad_fn": repr(xt.grad_fn), "grad": repr(xt.grad.tolist())},
        {"tensor": "y = x*x", "is_leaf": y.is_leaf, "grad_fn": type(y.grad_fn).__name__, "grad": default_y_grad},
        {"tensor": "y after retain_grad()", "is_leaf": yr.is_leaf, "grad_fn": type(yr.grad_fn).__name__,
         "grad": repr(yr.grad.tolist())}])
    # "None" spelled out with context: a bare "None" cell would read back from CSV as missing
    items = [("x_is_leaf", str(xt.is_leaf)), ("x_grad_fn", f"{xt.grad_fn!r} (no creating operation)"),
             ("y_is_leaf", str(y.is_leaf)),
             ("y_grad_fn", type(y.grad_fn).__name__)]
    items += [(f"x_grad_{i}", v) for i, v in enumerate(xt.grad.tolist())]
    items += [("y_grad_default", f"{default_y_grad} (not retained)")]
    items += [("y_grad_warning", " ".join(str(caught[0].message).split()[:12]) if caught else "no warning")]
    items += [(f"y_grad_retained_{i}", v) for i, v in enumerate(yr.grad.tolist())]
    return {"values": values_table("L4", items), "tensors": table, "branches": branch_gradients(x)}


# Measurement-level controls (claims/bugs.py); None in every real run.
L4_BUGS = ("both branches through torch.where",)
L5_GRAPH_BUGS = ("x.grad not cleared between traversals",)


def branch_gradients(x: list[float], bug: str | None = None) -> pd.DataFrame:
    """An if on the data picks w_pos * x or w_neg * x; backward reaches only the parameter on the
    path that ran. Called on x and on -x, so each parameter is once taken and once not. `bug` (L4_BUGS): both
    branches computed and one selected by torch.where, so both parameters are on the graph."""
    rows = []
    for name, sign in (("x", 1.0), ("-x", -1.0)):
        xt = sign * torch.tensor(x, dtype=F64)
        w_pos = torch.tensor(1.0, dtype=F64, requires_grad=True)
        w_neg = torch.tensor(1.0, dtype=F64, requires_grad=True)
        positive = bool(xt.sum() > 0)
        if bug == L4_BUGS[0]:
            y = torch.where(xt.sum() > 0, (w_pos * xt).sum(), (w_neg * xt).sum())
        else:
            y = (w_pos * xt).sum() if positive else (w_neg * xt).sum()  # eager autograd records this branch only
        y.backward()
        for param, w, taken in (("w_pos", w_pos, positive), ("w_neg", w_neg, not positive)):
            rows.append({"input": name, "branch_taken": "w_pos * x" if positive else "w_neg * x", "parameter": param,
                         "in_taken_branch": taken, "grad_is_none": w.grad is None,
                         "grad": float("nan") if w.grad is None else w.grad.item()})
    return pd.DataFrame(rows)


def _error_text(fn) -> str:
    """The message of the RuntimeError `fn` raises (or 'no error')."""
    try:
        fn()
    except RuntimeError as err:
        return " ".join(str(err).split())  # one line; the message wraps differently per version
    return "no error"


def measure_l5(x: list[float], shift: float, cube_at: float, bug: str | None = None) -> dict:
    """L5: version-counter error, second-backward error, retain_graph, create_graph for x³ (and, in
    `higher_order`, which of the two flags gives a derivative that can be differentiated again). `bug`: a
    measurement-level control (L5_GRAPH_BUGS); None in every real run."""
    def inplace():
        xt = torch.tensor(x, dtype=F64, requires_grad=True)
        y = (xt * xt).sum()
        with torch.no_grad():
            xt.add_(shift)  # bumps xt's version from 0 to 1; MulBackward saved version 0
        y.backward()

    def twice():
        xt = torch.tensor(x, dtype=F64, requires_grad=True)
        y = (xt * xt).sum()
        y.backward()
        y.backward()  # the saved tensors were freed by the first call

    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    y = (xt * xt).sum()
    y.backward(retain_graph=True)
    first = xt.grad.clone()
    if bug != L5_GRAPH_BUGS[0]:
        xt.grad = None
    y.backward()  # the retained graph runs again
    c = torch.tensor(cube_at, dtype=F64, requires_grad=True)
    (d1,) = torch.autograd.grad(c ** 3, c, create_graph=True)  # d1 = 3c², itself differentiable
    (d2,) = torch.autograd.grad(d1, c)
    errors = pd.DataFrame([{"case": "in-place edit of a saved tensor", "message": _error_text(inplace)},
                           {"case": "second backward without retain_graph", "message": _error_text(twice)}])
    items = [("inplace_error", errors.message[0]), ("second_backward_error", errors.message[1])]
    items += [(f"retain_graph_grad_{i}", v) for i, v in enumerate(xt.grad.tolist())]
    items += [(f"retain_graph_first_grad_{i}", v) for i, v in enumerate(first.tolist())]
    items += [("create_graph_first", d1.item()), ("create_graph_second", d2.item())]
    storage, stale = silent_stale_gradient(x, shift)
    items += [(f"mutated_storage_{i}", v) for i, v in enumerate(storage)]
    items += [(f"stale_grad_{i}", v) for i, v in enumerate(stale)]
    return {"values": values_table("L5", items), "errors": errors, "inplace": inplace_cases(x, shift),
            "higher_order": higher_order_table(cube_at), "versions": version_table(x, shift),
            "saved_by": saved_by_table(x), "lifetime": lifetime_table(x)}


def silent_stale_gradient(x: list[float], shift: float) -> tuple[list[float], list[float]]:
    """What backward would return if it silently read the edited storage: (storage, gradient).

    Identity saved-tensor hooks keep a reference instead of a versioned copy, so the version check
    that raises in `measure_l5` is bypassed and MulBackward reads the mutated values.
    """
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = (xt * xt).sum()
    with torch.no_grad():
        xt.add_(shift)
    y.backward()
    return xt.detach().tolist(), xt.grad.tolist()
