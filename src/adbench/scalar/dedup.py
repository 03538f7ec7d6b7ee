"""S4, third bug: a depth-first sort without its visited set (doc 000, "the number remembered where it came from").

Without the set, a node reached by k paths enters the order k times and its closure runs k times. Its
first run passes on a gradient that is still missing its other consumers' contributions, so its parents
receive that partial gradient on top of the full one. The bug only bites on a reused *interior* node: in
the opening expression tanh(a*b + a) only the leaf a is reused, and a leaf has no closure to repeat.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from .tape import Tape, Value, topological

ENGINES = (("visited set", True), ("no visited set", False))


# Each builder takes two leaves, tape Values or torch tensors (both have *, + and .tanh()), and returns the
# output with a label for every node.
def opening(a, b) -> tuple:
    """tanh(a*b + a): only the leaf a is reused."""
    m = a * b
    z = m + a
    out = z.tanh()
    return out, {id(a): "a", id(b): "b", id(m): "m = a·b", id(z): "m + a", id(out): "tanh(m + a)"}


def interior(a, b) -> tuple:
    """tanh(m) + m with m = a*b: the interior node m feeds two consumers."""
    m = a * b
    t = m.tanh()
    out = t + m
    return out, {id(a): "a", id(b): "b", id(m): "m = a·b", id(t): "tanh(m)", id(out): "tanh(m) + m"}


EXPRESSIONS: dict[str, Callable] = {"tanh(a·b + a)": opening, "tanh(m) + m, m = a·b": interior}


def torch_grads(build: Callable, a: float, b: float) -> tuple[float, float]:
    """(dL/da, dL/db) of the same expression from torch float64 autograd."""
    import torch

    ta, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a, b))
    build(ta, tb)[0].backward()
    return ta.grad.item(), tb.grad.item()


def _run(build: Callable, a: float, b: float, dedup: bool) -> tuple[dict, list[dict]]:
    """One backward pass; closure calls counted per node by wrapping each node's closure."""
    with Tape(dedup=dedup) as tape:
        va, vb = Value(a), Value(b)
        out, labels = build(va, vb)
        nodes = topological(out)                    # distinct nodes, for the per-node rows
        calls = {id(n): 0 for n in nodes}
        for n in nodes:
            if n._backward is not None:
                def counted(f=n._backward, k=id(n)) -> None:
                    calls[k] += 1
                    f()
                n._backward = counted
        out.backward()
    consumers = {id(n): 0 for n in nodes}
    for n in nodes:
        for p in n.parents:
            consumers[id(p)] += 1
    per_node = [{"node": labels[id(n)], "op": n.op or "leaf", "consumers": consumers[id(n)],
                 "closure_calls": calls[id(n)]} for n in nodes]
    summary = {"dL_da": va.grad, "dL_db": vb.grad, "closures_run": tape.closures_run,
               "order_length": len(topological(out, dedup=dedup)), "distinct_nodes": len(nodes)}
    return summary, per_node


def dedup_tables(a: float, b: float, always_dedup: bool = False) -> dict[str, pd.DataFrame]:
    """Gradients (vs torch float64) and closure calls per node, with and without the visited set. `always_dedup`:
    a measurement-level control only, the engine's switch not passed (both engines keep the set)."""
    grads, calls = [], []
    for expr, build in EXPRESSIONS.items():
        t_da, t_db = torch_grads(build, a, b)
        for engine, dedup in ENGINES:
            summary, per_node = _run(build, a, b, dedup or always_dedup)
            grads.append({"expression": expr, "engine": engine, **summary, "torch_dL_da": t_da,
                          "torch_dL_db": t_db, "abs_diff_da": abs(summary["dL_da"] - t_da),
                          "abs_diff_db": abs(summary["dL_db"] - t_db)})
            calls += [{"expression": expr, "engine": engine, **r} for r in per_node]
    return {"dedup_grads": pd.DataFrame(grads), "dedup_calls": pd.DataFrame(calls)}
