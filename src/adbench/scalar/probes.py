"""S1-S4 and S10: the opening comparison, nudges, chain rule by hand, the bugs, micrograd.

torch is imported inside the functions that use it: S2 and S3 jobs then skip its 1.3 s import.
"""

from __future__ import annotations

import math
import random

import pandas as pd

from ..tables import values_table
from . import dedup, reuse
from .numdiff import central_difference, opening_loss
from .tape import Tape, Value, graph_size, topological


def tape_gradients(a: float, b: float, *, overwrite: bool = False, order: str = "reverse"):
    """(L, dL/da, dL/db) of tanh(a*b + a) on the tape, optionally with an S4 bug."""
    with Tape(overwrite=overwrite):
        va, vb = Value(a), Value(b)
        loss = (va * vb + va).tanh()
        loss.backward(order=order)
    return loss.data, va.grad, vb.grad


def torch_gradients(a: float, b: float, dtype):
    """(L, dL/da, dL/db) from torch autograd in `dtype` (a torch.dtype)."""
    import torch

    ta = torch.tensor(a, dtype=dtype, requires_grad=True)
    tb = torch.tensor(b, dtype=dtype, requires_grad=True)
    loss = torch.tanh(ta * tb + ta)
    loss.backward()
    return loss.item(), ta.grad.item(), tb.grad.item()


# measurement-level controls (claims/bugs.py): the tape's documented `=` switch; the float32 path's dtype dropped
S1_BUGS = ("tape: = for +=", "torch float32 run in float64")


def measure_s1(a: float, b: float, reference_h: float, bug: str | None = None) -> dict:
    """S1: tape vs torch float64/float32 vs a central difference. `bug`: a measurement-level control (S1_BUGS);
    None in every real run."""
    L, ga, gb = tape_gradients(a, b, overwrite=bug == S1_BUGS[0])
    import torch

    _, t64a, t64b = torch_gradients(a, b, torch.float64)
    _, t32a, t32b = torch_gradients(a, b, torch.float64 if bug == S1_BUGS[1] else torch.float32)
    cd = central_difference(lambda x: opening_loss(x, b), a, reference_h)
    # method names are fixed; the step the central difference used is a column (NaN for the exact paths)
    rows = [("tape", math.nan, L, ga, gb), ("torch float64", math.nan, L, t64a, t64b),
            ("torch float32", math.nan, L, t32a, t32b), ("central difference", reference_h, L, cd, math.nan)]
    table = pd.DataFrame(rows, columns=["method", "h", "L", "dL_da", "dL_db"])
    table["abs_diff_da_vs_tape"] = (table["dL_da"] - ga).abs()
    items = [("forward_L", L), ("tape_dL_da", ga), ("tape_dL_db", gb), ("torch64_dL_da", t64a),
             ("torch64_dL_db", t64b), ("central_dL_da", cd), ("central_abs_diff", abs(cd - ga)),
             ("torch32_dL_da", t32a), ("torch32_abs_diff", abs(t32a - ga))]
    return {"values": values_table("S1", items), "gradients": table}


S2_BUGS = ("forward ratio over 2h",)  # a measurement-level control: a central difference's width on a forward one


def measure_s2(nudge_x: float, nudges: list[float], bug: str | None = None) -> dict:
    """S2: (f(x+h) - f(x)) / h for f = x^2 approaches 2x. `bug`: a measurement-level control (S2_BUGS); None in
    every real run."""
    f = lambda x: x * x  # noqa: E731
    width = 2.0 if bug == S2_BUGS[0] else 1.0
    rows = [{"nudge": h, "f_x": f(nudge_x), "f_x_plus_h": f(nudge_x + h),
             "ratio": (f(nudge_x + h) - f(nudge_x)) / (width * h), "exact_2x_plus_h": 2 * nudge_x + h}
            for h in nudges]
    table = pd.DataFrame(rows)
    # quantity names are fixed (the nudges' positions in the configured list); the values are the table's columns
    items = [(f"ratio_nudge{i}", r["ratio"]) for i, r in enumerate(rows, 1)]
    items.append(("f_at_x_plus_nudge1", rows[0]["f_x_plus_h"]))
    with Tape():   # the limit of the ratios: the tape's derivative of x² at x ("At x=3, it is 6")
        vx = Value(nudge_x)
        (vx ** 2).backward()
    items += [("derivative_at_x", vx.grad)]
    items += [("f_at_x", rows[0]["f_x"]),  # "At x=3, the output is 9"
              ("change_nudge1", rows[0]["f_x_plus_h"] - rows[0]["f_x"])]  # "the output changed by 0.61"
    return {"values": values_table("S2", items), "nudges": table}


def torch_route(a: float, b: float, keep: str) -> float:
    """torch float64's dL/da through one route only: the other use of a is detached (`keep`: 'm' or 'direct')."""
    import torch

    ta = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    via_m, direct = (ta, ta.detach()) if keep == "m" else (ta.detach(), ta)
    torch.tanh(via_m * b + direct).backward()
    return ta.grad.item()


S3_BUGS = ("product rule swapped",)  # a measurement-level control: dm/da = a and dm/db = b (claims/bugs.py)


def measure_s3(a: float, b: float, bug: str | None = None) -> dict:
    """S3: the chain rule by hand, route by route; beside each route, torch's gradient through that route alone
    (an independent path: autograd with the other route cut). `bug`: a measurement-level control (S3_BUGS)."""
    m = a * b
    z = m + a
    L = math.tanh(z)
    dL_dz = 1 - L * L
    dm_da, dm_db = (a, b) if bug == S3_BUGS[0] else (b, a)   # m = a*b: each factor's rate is the other factor
    route_m = dL_dz * 1 * dm_da  # a -> m -> z -> L
    route_direct = dL_dz * 1     # a -> z -> L
    items = [("m", m), ("z", z), ("dL_dz", dL_dz), ("dL_db", dL_dz * 1 * dm_db),
             ("route_through_m", route_m), ("route_direct", route_direct),
             ("route_sum", route_m + route_direct)]
    t_m, t_direct = torch_route(a, b, "m"), torch_route(a, b, "direct")
    routes = pd.DataFrame([
        {"route": "a -> m -> z -> L", "factors": "dL/dz * dz/dm * dm/da", "value": route_m, "torch": t_m, "b": b},
        {"route": "a -> z -> L", "factors": "dL/dz * dz/da", "value": route_direct, "torch": t_direct, "b": b},
        {"route": "sum", "factors": "", "value": route_m + route_direct, "torch": t_m + t_direct, "b": b}])
    return {"values": values_table("S3", items), "routes": routes}


def overwrite_factor(a: float, bs: list[float], overwrite: bool = True) -> pd.DataFrame:
    """Per b: the overwrite bug's dL/da against the correct tape's (both on the tape, at the same a).

    The overwrite keeps the route through m (dL/dz * b), the correct tape adds the direct route
    (dL/dz * (b + 1)); their ratio is a property of b, not of the bug. `overwrite`: False only as a
    measurement-level control (the switch not reaching the tape)."""
    rows = []
    for b in bs:
        _, correct, _ = tape_gradients(a, b)
        _, bugged, _ = tape_gradients(a, b, overwrite=overwrite)
        rows.append({"a": a, "b": b, "correct_dL_da": correct, "overwrite_dL_da": bugged,
                     "overwrite_over_correct": bugged / correct if correct != 0 else math.nan})
    return pd.DataFrame(rows)


# measurement-level controls (claims/bugs.py): a switch that never reaches the tape it is meant for
S4_BUGS = ("overwrite switch not passed to the tape", "visited-set switch not passed to the tape")


def measure_s4(a: float, b: float, factor_b: list[float], bug: str | None = None) -> dict:
    """S4: the correct tape, the overwrite bug and the wrong-order bug; count exceptions;
    the overwrite/correct ratio over the b values `factor_b`; the sort without its visited set. `bug`: a
    measurement-level control (S4_BUGS); None in every real run."""
    rows, raised = [], 0
    overwrite = bug != S4_BUGS[0]
    for name, kw in [("correct +=", {}), ("BUG = (overwrite)", {"overwrite": overwrite}),
                     ("BUG wrong order", {"order": "forward"})]:
        try:
            _, ga, gb = tape_gradients(a, b, **kw)
        except Exception:  # noqa: BLE001 - the probe's point is that nothing raises
            raised += 1
            ga = gb = math.nan
        rows.append({"variant": name, "dL_da": ga, "dL_db": gb})
    exact_da = (1 - math.tanh(a * b + a) ** 2) * (b + 1)
    exact_db = (1 - math.tanh(a * b + a) ** 2) * a
    rows.insert(0, {"variant": "analytic", "dL_da": exact_da, "dL_db": exact_db})
    table = pd.DataFrame(rows)
    items = [("overwrite_dL_da", rows[2]["dL_da"]), ("overwrite_dL_db", rows[2]["dL_db"]),
             ("wrong_order_dL_da", rows[3]["dL_da"]), ("wrong_order_dL_db", rows[3]["dL_db"]),
             ("exceptions_raised", raised)]
    return {"values": values_table("S4", items), "variants": table,
            "factor": overwrite_factor(a, factor_b, overwrite), **dedup.dedup_tables(a, b, bug == S4_BUGS[1])}


class Neuron:
    """micrograd's neuron: sum(w_i x_i, b) then ReLU unless it is the output layer."""

    def __init__(self, n_in: int, rng: random.Random, nonlin: bool):
        self.w = [Value(rng.uniform(-1, 1)) for _ in range(n_in)]
        self.b = Value(0.0)
        self.nonlin = nonlin

    def __call__(self, x):
        act = sum((wi * xi for wi, xi in zip(self.w, x)), self.b)
        return act.relu() if self.nonlin else act

    def parameters(self):
        return self.w + [self.b]


def build_mlp(sizes: list[int], seed: int) -> list[list[Neuron]]:
    """Layers of Neurons; the last layer is linear, as in micrograd."""
    rng = random.Random(seed)
    return [[Neuron(sizes[i], rng, nonlin=i != len(sizes) - 2) for _ in range(sizes[i + 1])]
            for i in range(len(sizes) - 1)]


def mlp_forward(layers, x):
    """Output Value (or list of Values) of the MLP on one example."""
    for layer in layers:
        x = [n(x) for n in layer]
    return x[0] if len(x) == 1 else x


def torch_mlp_grads(layers, inputs, targets) -> list[float]:
    """Gradients of the same loss from torch float32, same weights, same order."""
    import torch

    params = [torch.tensor([n.w[i].data for i in range(len(n.w))] + [n.b.data], dtype=torch.float32,
                           requires_grad=True) for layer in layers for n in layer]
    loss = torch.zeros((), dtype=torch.float32)
    for x, y in zip(inputs, targets):
        h = torch.tensor(x, dtype=torch.float32)
        k = 0
        for li, layer in enumerate(layers):
            outs = []
            for _ in layer:
                p = params[k]
                k += 1
                act = (p[:-1] * h).sum() + p[-1]
                outs.append(torch.relu(act) if li != len(layers) - 1 else act)
            h = torch.stack(outs)
        loss = loss + (h[0] - y) ** 2
    loss.backward()
    return [g for p in params for g in p.grad.tolist()]


def backward_trace(expression: dict, overwrite: bool) -> pd.DataFrame:
    """Every node's value and gradient after each step of the reverse pass of relu(a*b + c)*a."""
    a, b, c = expression["a"], expression["b"], expression["c"]
    with Tape(overwrite=overwrite):
        va, vb, vc = Value(a), Value(b), Value(c)
        ab = va * vb
        z = ab + vc
        r = z.relu()
        out = r * va
        labels = {id(va): "a", id(vb): "b", id(vc): "c", id(ab): "a·b", id(z): "a·b + c",
                  id(r): "relu(a·b + c)", id(out): "relu(a·b + c)·a"}
        order = topological(out)
        out.grad = 1.0
        rows, step = [], 0

        def snapshot(active: str) -> None:
            for n in order:
                rows.append({"mode": "=" if overwrite else "+=", "step": step, "active": active,
                             "node": labels[id(n)], "op": n.op or "leaf", "value": n.data, "grad": n.grad,
                             "parents": "|".join(labels[id(p)] for p in n.parents)})
        snapshot("seed dL/dL = 1")
        for node in reversed(order):  # the engine's own order and closures, one at a time
            if node._backward is not None:
                node._backward()
                step += 1
                snapshot(labels[id(node)])
    return pd.DataFrame(rows)


# measurement-level controls (claims/bugs.py): the tape's documented `=` switch on the MLP; the expression's `=`
# switch not reaching its tape; the counted engine releasing a node one contribution early
S10_BUGS = ("MLP tape: = for +=", "expression: overwrite switch not passed", reuse.EARLY)


def measure_s10(expression: dict, mlp: dict, reuse_x: float, bug: str | None = None) -> dict:
    """S10: relu(a*b + c)*a node count and a.grad with += / = / torch; the 41-parameter MLP;
    doc 000's reused value (x -> square -> two branches -> add) under a dependency-counting engine.
    `bug`: a measurement-level control (S10_BUGS); None in every real run."""
    import torch

    a, b, c = expression["a"], expression["b"], expression["c"]
    grads = {}
    for name, overwrite in [("accumulate", False), ("overwrite", True)]:
        with Tape(overwrite=overwrite and bug != S10_BUGS[1]) as tape:
            va, vb, vc = Value(a), Value(b), Value(c)
            out = (va * vb + vc).relu() * va
            out.backward()
        grads[name] = va.grad
        nodes = graph_size(out)
        assert nodes == tape.nodes
    ta = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    (torch.relu(ta * b + c) * ta).backward()

    with Tape(overwrite=bug == S10_BUGS[0]) as tape:
        layers = build_mlp(mlp["sizes"], mlp["seed"])
        params = [p for layer in layers for n in layer for p in n.parameters()]
        loss = sum((mlp_forward(layers, x) - y) ** 2 for x, y in zip(mlp["inputs"], mlp["targets"]))
        loss.backward()
    tape_grads = [p.grad for p in params]
    torch_grads = torch_mlp_grads(layers, mlp["inputs"], mlp["targets"])
    diffs = [abs(t - g) for t, g in zip(tape_grads, torch_grads)]
    per_param = pd.DataFrame({"param": range(len(params)), "tape_grad": tape_grads,
                              "torch_float32_grad": torch_grads, "abs_diff": diffs})
    by_op = pd.Series([n.op or "leaf/constant" for n in _nodes(loss)]).value_counts()
    node_table = pd.DataFrame({"op": by_op.index, "nodes": by_op.values})
    items = [("expr_nodes", nodes), ("a_grad_accumulate", grads["accumulate"]),
             ("a_grad_torch", ta.grad.item()), ("a_grad_overwrite", grads["overwrite"]),
             ("mlp_params", len(params)), ("mlp_nodes", graph_size(loss)),
             ("mlp_max_grad_diff", max(diffs)), ("mlp_loss", loss.data)]
    trace = pd.concat([backward_trace(expression, False), backward_trace(expression, True)], ignore_index=True)
    early = bug == S10_BUGS[2]
    reuse_trace = pd.concat([reuse.dependency_trace(reuse_x, m, early) for m in ("counted", "eager")],
                            ignore_index=True)
    items += reuse.reuse_items(reuse_trace, reuse.torch_x_grad(reuse_x))
    return {"values": values_table("S10", items), "mlp_grads": per_param, "mlp_nodes_by_op": node_table,
            "backward_steps": trace, "reuse_steps": reuse_trace}


def _nodes(root: Value):
    return topological(root)
