"""L5's saved-value mechanics, read from two sides: the version counter (`tensor._version` against the versions the
engine's error names), what a saved-tensor hook is handed (the op's output or its input), and how long the packed
values live after backward (weak references to what the pack hook returned).
"""

from __future__ import annotations

import gc
import re
import weakref

import pandas as pd
import torch

F64 = torch.float64
# Measurement-level controls (claims/bugs.py): every in-place edit applied to a copy (x.clone().add_) instead of the
# tensor; the retained case's backward called without retain_graph. None in every real run.
L5_BUGS = ("edit made on a copy", "retain_graph dropped")
VERSIONS = re.compile(r"is at version (\d+); expected version (\d+)")


def edit(t: torch.Tensor, shift: float, bug: str | None = None) -> torch.Tensor:
    """t.add_(shift); with the copy bug, the write lands in a clone and t is untouched."""
    return (t.clone() if bug == L5_BUGS[0] else t).add_(shift)


def _version_case(x: list[float], shift: float, leaf: bool, grad_mode: bool, writes: int, in_place: bool,
                  bug: str | None) -> dict:
    """One edit of a tensor y = sum(t * t) saved: versions before and after, and what backward then says."""
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    t = xt if leaf else xt * 1.0  # a non-leaf can be edited in place with grad mode on; a leaf cannot
    y = (t * t).sum()  # MulBackward saves t at its current version
    before = t._version
    with torch.set_grad_enabled(grad_mode):
        for _ in range(writes):
            if in_place:
                edit(t, shift, bug)
            else:
                _ = t + shift  # a new tensor: t's storage untouched
    after = t._version
    try:
        y.backward()
        message = "no error"
    except RuntimeError as err:
        message = " ".join(str(err).split())
    found = VERSIONS.search(message)
    return {"tensor": "leaf x" if leaf else "non-leaf h = x * 1", "grad_mode": "enabled" if grad_mode else "no_grad",
            "write": "in place (add_)" if in_place else "out of place (+)", "writes": writes,
            "version_before": before, "version_after": after, "raised": message != "no error",
            "error_at_version": int(found.group(1)) if found else -1,
            "error_expected_version": int(found.group(2)) if found else -1}


def version_table(x: list[float], shift: float, bug: str | None = None) -> pd.DataFrame:
    """`versions`: in-place writes with and without grad mode, one and two of them, and an out-of-place control."""
    cases = [(True, False, 1, True), (True, False, 2, True), (False, True, 1, True), (False, False, 1, True),
             (True, False, 1, False)]
    return pd.DataFrame([_version_case(x, shift, *c, bug=bug) for c in cases])


OPS = {"exp(x)": torch.exp, "sigmoid(x)": torch.sigmoid, "sin(x)": torch.sin, "x * x": lambda t: t * t}


def saved_by_table(x: list[float]) -> pd.DataFrame:
    """`saved_by`: for each op, how many of the tensors its backward saves are its output, and how many its input
    (by storage and shape: a saved output is handed to the pack hook as the result tensor itself)."""
    rows = []
    for name, op in OPS.items():
        xt = torch.tensor(x, dtype=F64, requires_grad=True)
        packed = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
            out = op(xt)

        def same(a: torch.Tensor, b: torch.Tensor) -> bool:
            return a.data_ptr() == b.data_ptr() and a.shape == b.shape

        rows.append({"op": name, "saves": len(packed), "saves_output": sum(same(p, out) for p in packed),
                     "saves_input": sum(same(p, xt) for p in packed)})
    return pd.DataFrame(rows)


class _Packed:
    """What the pack hook returns: the saved tensor, behind an object a weak reference can watch."""
    def __init__(self, t: torch.Tensor):
        self.t = t


def _lifetime_case(x: list[float], retain: bool, drop_graph: bool, bug: str | None) -> dict:
    """Saved values of y = sum(exp(x * x)) packed at forward, and how many are still alive after backward."""
    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    refs = []

    def pack(t: torch.Tensor) -> _Packed:
        p = _Packed(t.detach())  # a saved output holding its own grad_fn would be a cycle gc cannot see through
        refs.append((weakref.ref(p), t.nelement() * t.element_size()))
        return p

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda p: p.t):
        y = torch.exp(xt * xt).sum()
    y.backward(retain_graph=retain and bug != L5_BUGS[1])
    if drop_graph:
        del y  # the last reference to the retained graph
    gc.collect()
    alive = [n for r, n in refs if r() is not None]
    case = ("backward(retain_graph=True), then the graph dropped" if drop_graph
            else "backward(retain_graph=True)" if retain else "backward()")
    return {"case": case, "saved_at_forward": len(refs), "saved_bytes_at_forward": sum(n for _, n in refs),
            "alive_after": len(alive), "alive_bytes_after": sum(alive)}


def lifetime_table(x: list[float], bug: str | None = None) -> pd.DataFrame:
    """`lifetime`: saved values alive after a plain backward, a retaining one, and once the retained graph goes."""
    return pd.DataFrame([_lifetime_case(x, r, d, bug) for r, d in ((False, False), (True, False), (True, True))])
