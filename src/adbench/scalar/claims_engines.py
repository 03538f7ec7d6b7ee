"""The S family's conclusions about what the engine runs (issue 28): a sort without its visited set (S4), backward
from a vector output (S8) and an engine that counts dependencies (S10). Listed in family.py's `claims`, which the
registry reads.
"""

from __future__ import annotations

import re

from ..claims import (EPS64, FAR, ROUNDING64, Flip, flag, g, judged, qv, relation, row, same_float, sources,
                      times_at_least, ulps_away)

sources("S4/dedup_calls", {"expression": "input", "engine": "input", "node": "input", "op": "input",
                           "consumers": "graph walk", "closure_calls": "closure call counter"})
sources("S4/dedup_grads", {"expression": "input", "engine": "input", "dL_da": "tape", "dL_db": "tape",
                           "closures_run": "tape", "order_length": "tape", "distinct_nodes": "graph walk",
                           "torch_dL_da": "torch float64", "torch_dL_db": "torch float64",
                           "abs_diff_da": "tape, torch float64", "abs_diff_db": "tape, torch float64"})
sources("S8/nonscalar", {"y.backward()": "torch backward without a vector", "y.backward(v)": "torch backward(v)",
                         "jacobian(f, x)": "torch jacobian"}, by="call")
sources("S8/vjp", {"input": "input", "x": "input", "v": "input", "backward_v": "torch backward(v)",
                   "v_at_jacobian": "torch jacobian", "abs_diff": "torch backward(v), torch jacobian",
                   "backward_ones": "torch backward(ones)", "ones_abs_diff": "torch backward(ones), torch jacobian"})
# one name per engine (a comma would count as two computations): the tape's closures, scheduled two ways
sources("S10/reuse_steps", {"counted": "tape closures under a dependency-counted engine",
                            "eager": "tape closures run on their first contribution"}, by="mode")


# ---- S4: the visited set ------------------------------------------------------------------------------------
def _dedup(t):
    """(grads, calls, the expressions whose reused node has a closure, those where only a leaf is reused)."""
    grads, calls = t["S4/dedup_grads"], t["S4/dedup_calls"]
    reused = calls[calls.consumers >= 2]
    interior = sorted(set(reused.loc[reused.op != "leaf", "expression"]))
    leaf_only = sorted(set(reused.expression) - set(interior))
    return grads, calls, interior, leaf_only


def _engine(d, expression: str, engine: str):
    return d[(d.expression == expression) & (d.engine == engine)]


def _tape_vs_torch(r, what: str) -> list:
    return [same_float(r.dL_da, r.torch_dL_da, 64, EPS64, f"{what}: dL/da vs torch64"),
            same_float(r.dL_db, r.torch_dL_db, 64, EPS64, f"{what}: dL/db vs torch64")]


def _interior_row(t):
    grads, _, interior, _ = _dedup(t)
    return _engine(grads, interior[0], "no visited set").iloc[0]


@relation("S4/dedup_grads", "S4/dedup_calls",
          edge=Flip("S4/dedup_grads", lambda t: {"expression": _dedup(t)[2][0], "engine": "no visited set"}, "dL_da",
                    holding=lambda t: _interior_row(t).dL_da, failing=lambda t: _interior_row(t).torch_dL_da))
def no_visited_set_reruns_shared_node(t):
    """Without the visited set a reused node with a closure runs it once per consumer and the gradients below
    it are wrong; with the set they are torch's; a node reused only as a leaf (no closure) is unaffected."""
    grads, calls, interior, leaf_only = _dedup(t)
    checks = [flag(len(interior) > 0 and len(leaf_only) > 0, "an interior reused node and a leaf-only one measured")]
    for e in interior:
        bug, ok = _engine(grads, e, "no visited set").iloc[0], _engine(grads, e, "visited set").iloc[0]
        shared = _engine(calls, e, "no visited set")
        shared = shared[(shared.consumers >= 2) & (shared.op != "leaf")]
        checks += [flag(bool((shared.closure_calls == shared.consumers).all()),
                        f"{e}, no visited set: the reused node's closure runs once per consumer"),
                   flag(bool((_engine(calls, e, "visited set").closure_calls <= 1).all()),
                        f"{e}, visited set: every closure runs at most once"),
                   *_tape_vs_torch(ok, f"{e}, visited set")]
        checks += [times_at_least(abs(mine - torch), ROUNDING64 * max(abs(torch), 1.0), 1,
                                  f"{e}, no visited set: {leaf} off torch64 beyond 64 ulps")
                   for leaf, mine, torch in (("dL/da", bug.dL_da, bug.torch_dL_da),
                                             ("dL/db", bug.dL_db, bug.torch_dL_db))]
    for e in leaf_only:
        bug = _engine(grads, e, "no visited set").iloc[0]
        nodes = _engine(calls, e, "no visited set")
        checks += [flag(bool((nodes.loc[nodes.op != "leaf", "closure_calls"] == 1).all()),
                        f"{e}, no visited set: every closure runs once"), *_tape_vs_torch(bug, f"{e}, no visited set")]
    bad = grads[grads.engine == "no visited set"]
    return judged("no visited set: " + "; ".join(f"{r.expression}: dL/da {g(r.dL_da)} (torch {g(r.torch_dL_da)}), "
                                                 f"{r.closures_run} closures run" for r in bad.itertuples()), *checks)


# ---- S8: backward from a vector output ------------------------------------------------------------------------
def _call(t, name: str):
    return row(t["S8/nonscalar"], "call", name)


def _vjp_worst(t) -> dict:
    d = t["S8/vjp"]
    return {"input": d.loc[d.v_at_jacobian.abs().idxmax(), "input"]}


@relation("S8/nonscalar", "S8/vjp",
          edge=Flip("S8/vjp", _vjp_worst, "backward_v",
                    holding=lambda t: row(t["S8/vjp"], "input", _vjp_worst(t)["input"]).v_at_jacobian,
                    failing=lambda t: ulps_away(row(t["S8/vjp"], "input", _vjp_worst(t)["input"]).v_at_jacobian, 256)))
def nonscalar_needs_v_returns_vjp(t):
    """y.backward() on a vector refuses; y.backward(v) returns v^T J shaped like x (J from torch's jacobian, one
    backward per output row), and an all-ones vector gives something else."""
    d = t["S8/vjp"]
    bare, with_v, jac = (str(_call(t, c).outcome) for c in ("y.backward()", "y.backward(v)", "jacobian(f, x)"))
    shape, jshape = str(_call(t, "y.backward(v)").result_shape), str(_call(t, "jacobian(f, x)").result_shape)
    scale = ROUNDING64 * max(float(d.v_at_jacobian.abs().max()), 1.0)
    ones = float((d.backward_ones - d.v_at_jacobian).abs().max())
    return judged(f"y.backward(): {bare}; y.backward(v) shape {shape} (J {jshape}); max |backward(v) - v J| "
                  f"{g((d.backward_v - d.v_at_jacobian).abs().max())}, with ones {g(ones)}",
                  flag(re.match(r"^\w+(Error|Exception)\b", bare) is not None, "y.backward() raises"),
                  flag(with_v == "ok" and jac == "ok", "backward(v) and the jacobian ran"),
                  flag(shape == f"({len(d)},)" and jshape == f"({len(d)}, {len(d)})",
                       "backward(v) shaped like x, J two-dimensional"),
                  *(same_float(b, vj, 64, EPS64, f"{k}: backward(v) vs v J")
                    for k, b, vj in zip(d.input, d.backward_v, d.v_at_jacobian)),
                  times_at_least(ones, scale, FAR, "all-ones vector far off v J: v matters"))


# ---- S10: an engine that counts dependencies --------------------------------------------------------------------
def _trace(t, mode: str):
    d = t["S10/reuse_steps"]
    return d[d["mode"] == mode]


def _runs_at(trace) -> dict:
    """The step at which each node's closure ran (step 0 is the seed)."""
    ran = trace[trace.step > 0].drop_duplicates("step")
    return dict(zip(ran.active, ran.step))


def _final(trace, node: str):
    d = trace[trace.node == node]
    return d.loc[d.step.idxmax()]


def _counted_x(t):
    return _final(_trace(t, "counted"), "x")


def _torch_x(t) -> float:
    return float(qv(t["S10/values"], "reuse_x_grad_torch"))


@relation("S10/reuse_steps", "S10/values",
          edge=Flip("S10/reuse_steps", lambda t: {"mode": "counted", "node": "x", "step": int(_counted_x(t).step)},
                    "grad", holding=_torch_x, failing=lambda t: ulps_away(_torch_x(t), 256)))
def counted_engine_waits_for_both(t):
    """The dependency-counted engine runs the square only after both branches contributed (its pending count
    at zero) and x gets torch's gradient; the eager control runs it between the branches and x's is wrong."""
    counted, eager, torch_x = _trace(t, "counted"), _trace(t, "eager"), _torch_x(t)
    c, e = _runs_at(counted), _runs_at(eager)
    square = counted[counted.node == "square"]
    before = square[square.step == c.get("square", 0) - 1].pending
    eager_x = float(_final(eager, "x").grad)
    return judged(f"counted engine runs branch A at step {c.get('branch A')}, branch B at {c.get('branch B')}, the "
                  f"square at {c.get('square')}: x.grad {float(_counted_x(t).grad)!r} (torch {torch_x!r}); eager runs "
                  f"the square at {e.get('square')}, x.grad {eager_x!r}",
                  flag({"square", "branch A", "branch B"} <= set(c) and c["square"] > max(c["branch A"], c["branch B"]),
                       "counted: the square runs after both branches"),
                  flag(len(before) == 1 and int(before.iloc[0]) == 0,
                       "counted: its pending count is zero when it runs"),
                  same_float(_counted_x(t).grad, torch_x, 64, EPS64, "counted: x.grad vs torch64"),
                  flag({"square", "branch B"} <= set(e) and e["square"] < e["branch B"],
                       "eager control: the square runs before branch B"),
                  times_at_least(abs(eager_x - torch_x), ROUNDING64 * max(abs(torch_x), 1.0), 1,
                                 "eager control: x.grad off torch64 beyond 64 ulps"))


# ---- S8: one reverse sweep -----------------------------------------------------------------------------------
def _full(t):
    d = t["S8/reconstruction"]
    return d[d.seeds == d.inputs].iloc[0]


@relation("S8/reconstruction", edge=Flip("S8/reconstruction", lambda t: {"seeds": int(_full(t).seeds)},
                                         "reverse_closures", holding=lambda t: _full(t).forward_ops / _full(t).inputs,
                                         failing=lambda t: _full(t).forward_ops / _full(t).inputs + 1))
def reverse_one_sweep(t):
    """Reverse mode gets every partial from one backward sweep that runs one closure per graph operation (the
    tape's count equals the dual numbers' operations per seed), where forward mode repeats those per input."""
    full = _full(t)
    per_seed = float(full.forward_ops) / float(full.inputs)
    return judged(f"reverse: {int(full.reverse_backward_passes)} backward pass, {int(full.reverse_closures)} closures; "
                  f"forward: {int(full.forward_ops)} operations for {int(full.inputs)} inputs ({g(per_seed)} per seed)",
                  flag(full.reverse_backward_passes == 1, "one backward pass"),
                  flag(float(full.reverse_closures) == per_seed, "closures = the operations of one forward pass"),
                  flag(float(full.forward_ops) == float(full.inputs) * float(full.reverse_closures) and full.inputs > 1,
                       "forward mode repeats them once per input"))
