"""S10, second step-through: a value used twice, run by an engine that counts dependencies.

Doc 000's diagram (section "the leaf was a different kind of node"): x -> square, the square feeds
branch A and branch B, both meet in an add that is the loss. torch's engine counts each node's
unresolved consumers and runs a node's backward only when that count reaches zero; the tape's
reversed topological list gives the same guarantee. The "eager" engine runs a node as soon as one
contribution arrives (once), which is the failure the documents describe: x gets an incomplete gradient.
"""

from __future__ import annotations

from collections import deque

import pandas as pd

from .tape import Tape, Value, topological

LABELS = ("x", "square", "branch A", "branch B", "add → loss")


def build(x: float) -> tuple[Value, dict[int, str]]:
    """loss = relu(x²) + tanh(x²) on the tape; returns the loss and node labels by id."""
    vx = Value(x)
    sq = vx ** 2
    a, b = sq.relu(), sq.tanh()   # branch A, branch B: two consumers of one value
    loss = a + b
    return loss, dict(zip(map(id, (vx, sq, a, b, loss)), LABELS))


def consumer_counts(root: Value) -> dict[int, int]:
    """Number of incoming backward edges (consumers) of every node reachable from root."""
    counts = {id(n): 0 for n in topological(root)}
    for n in topological(root):
        for p in n.parents:
            counts[id(p)] += 1
    return counts


EARLY = "counted engine: released at one pending"   # a measurement-level control (probes.S10_BUGS)


def dependency_trace(x: float, mode: str, early: bool = False) -> pd.DataFrame:
    """Every node's value, gradient and pending count after each backward closure.

    mode 'counted': a ready queue, a node runs when all its consumers have contributed (torch's engine).
    mode 'eager': a node runs the moment its first contribution arrives, and only once (the bug).
    `early`: a measurement-level control only, the counted engine's release test off by one (pending <= 1).
    """
    if mode not in ("counted", "eager"):
        raise ValueError(f"mode must be 'counted' or 'eager', got {mode!r}")
    with Tape():
        loss, labels = build(x)
        nodes = topological(loss)
        pending = consumer_counts(loss)
        loss.grad = 1.0
        rows: list[dict] = []

        def snapshot(step: int, active: str) -> None:
            rows.extend({"mode": mode, "step": step, "active": active, "node": labels[id(n)], "op": n.op or "leaf",
                         "value": n.data, "grad": n.grad, "pending": pending[id(n)],
                         "parents": "|".join(labels[id(p)] for p in n.parents)} for n in nodes)

        snapshot(0, "seed dL/dL = 1")
        if mode == "counted":
            ready, step = deque([loss]), 0
            while ready:
                node = ready.popleft()
                node._backward()
                step += 1
                for p in node.parents:
                    pending[id(p)] -= 1
                    if pending[id(p)] <= int(early) and p._backward is not None:
                        ready.append(p)
                snapshot(step, labels[id(node)])
        else:
            fired: set[int] = set()
            counter = [0]

            def fire(node: Value) -> None:   # depth first: push the contribution on immediately
                fired.add(id(node))
                node._backward()
                counter[0] += 1
                for p in node.parents:
                    pending[id(p)] -= 1
                snapshot(counter[0], labels[id(node)])
                for p in node.parents:
                    if p._backward is not None and id(p) not in fired:
                        fire(p)
            fire(loss)
    return pd.DataFrame(rows)


def torch_x_grad(x: float) -> float:
    """d/dx [relu(x²) + tanh(x²)] from torch float64 autograd."""
    import torch

    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    s = t ** 2
    (torch.relu(s) + torch.tanh(s)).backward()
    return t.grad.item()


def reuse_items(trace: pd.DataFrame, x_grad_torch: float) -> list[tuple[str, object]]:
    """The values rows of the reused-value example, read off the two traces."""
    def final(mode: str, node: str) -> float:
        t = trace[(trace["mode"] == mode) & (trace.node == node)]
        return float(t.loc[t.step.idxmax(), "grad"])

    counted = trace[trace["mode"] == "counted"]
    runs = counted.drop_duplicates("step").groupby("active").step.min()   # a node's first run (a bug may rerun it)
    waits = runs["square"] > max(runs["branch A"], runs["branch B"])
    consumers = int(counted[(counted.step == 0) & (counted.node == "square")].pending.iloc[0])
    full, early = final("counted", "x"), final("eager", "x")
    return [("reuse_square_consumers", consumers),
            ("reuse_square_waits_for_both", "true" if waits else "false"),
            ("reuse_early_x_grad_incomplete", "true" if early != full else "false"),
            ("reuse_x_grad_counted", full), ("reuse_x_grad_eager", early), ("reuse_x_grad_torch", x_grad_torch)]
