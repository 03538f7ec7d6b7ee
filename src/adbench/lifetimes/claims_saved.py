"""The L family's saved-value mechanics of issue 36 (L5), and the measurement-level controls of L4 and L5 (BUGS): the version counter, with and without grad mode; exp saving
its output; a retained graph keeping its saved values alive. Each sets one reading (tensor._version, a pack hook, weak
references) against another (the engine's version check, the edits it refuses). Imported by lifetimes/claims.py."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from ..claims import Edge, Move, flag, judged, relation, row, sources, truthy
from ..claims.bugs import Bug

PY, ENGINE = "tensor._version", "torch version check (error text)"
sources("L5/versions", {"tensor": "input", "grad_mode": "input", "write": "input", "writes": "input",
                        "version_before": PY, "version_after": PY, "raised": ENGINE, "error_at_version": ENGINE,
                        "error_expected_version": ENGINE})
sources("L5/saved_by", {"op": "input", "saves": "saved-tensor pack hook", "saves_output": "saved-tensor pack hook",
                        "saves_input": "saved-tensor pack hook"}, by="op")
sources("L5/lifetime", {"case": "input", "saved_at_forward": "saved-tensor pack hook at forward",
                        "saved_bytes_at_forward": "saved-tensor pack hook at forward",
                        "alive_after": "weak references after backward",
                        "alive_bytes_after": "weak references after backward"})


def _writes(t) -> pd.DataFrame:
    d = t["L5/versions"]
    return d[d["write"].str.startswith("in place")]


def _row(t, tensor: str, grad_mode: str, writes: int = 1, write: str = "in place (add_)"):
    d = t["L5/versions"]
    hit = d[(d.tensor == tensor) & (d.grad_mode == grad_mode) & (d.writes == writes) & (d["write"] == write)]
    if hit.empty:
        raise KeyError(f"L5/versions: no row {tensor}, {grad_mode}, {writes} x {write}")
    return hit.iloc[0]


def _bumped(r) -> list:
    """The counter rose by one per write, and the engine's error names the versions the counter read."""
    what = f"{r.tensor}, {r.grad_mode}, {r.writes} x {r.write}"
    return [flag(int(r.version_after) - int(r.version_before) == int(r.writes), f"{what}: +1 per write"),
            flag(truthy(r.raised) and int(r.error_at_version) == int(r.version_after)
                 and int(r.error_expected_version) == int(r.version_before),
                 f"{what}: backward refuses, naming the version now and the version saved")]


TWO = {"tensor": "leaf x", "grad_mode": "no_grad", "writes": 2, "write": "in place (add_)"}


@relation("L5/versions", edge=Edge(
    Move("L5/versions", TWO, "version_after", lambda t: int(_row(t, "leaf x", "no_grad", 2).version_before) + 2),
    Move("L5/versions", TWO, "version_after", lambda t: int(_row(t, "leaf x", "no_grad", 2).version_before) + 1)))
def inplace_bumps_version(t):
    """Every in-place write raises the tensor's version by one; backward compares the version saved with the one now
    and refuses, naming both as tensor._version read them; an out-of-place write moves nothing and runs."""
    d = t["L5/versions"]
    out = d[~d["write"].str.startswith("in place")]
    return judged("; ".join(f"{r.tensor}, {r.grad_mode}, {r.writes} x {r.write}: version {r.version_before} -> "
                            f"{r.version_after}, " + (f"refused (at {r.error_at_version}, expected "
                                                      f"{r.error_expected_version})" if truthy(r.raised) else "ran")
                            for r in d.itertuples()),
                  flag(len(_writes(t)) > 0 and len(out) > 0, "in-place writes and an out-of-place control"),
                  *(c for r in _writes(t).itertuples() for c in _bumped(r)),
                  *(flag(r.version_after == r.version_before and not truthy(r.raised),
                         f"{r.tensor}, {r.write}: no version change, backward runs") for r in out.itertuples()))


NO_GRAD = {"tensor": "non-leaf h = x * 1", "grad_mode": "no_grad", "writes": 1, "write": "in place (add_)"}


@relation("L5/versions", edge=Edge(
    Move("L5/versions", NO_GRAD, "version_after", lambda t: int(_row(t, "non-leaf h = x * 1", "no_grad").version_before) + 1),
    Move("L5/versions", NO_GRAD, "version_after", lambda t: int(_row(t, "non-leaf h = x * 1", "no_grad").version_before))))
def no_grad_still_bumps_version(t):
    """The same in-place write of a saved non-leaf bumps its version by the same one under no_grad as with grad mode
    on, and backward refuses both: grad mode decides what is recorded, not whether storage changes."""
    on, off = _row(t, "non-leaf h = x * 1", "enabled"), _row(t, "non-leaf h = x * 1", "no_grad")
    bump_on, bump_off = int(on.version_after - on.version_before), int(off.version_after - off.version_before)
    return judged(f"h.add_ with grad mode on: version +{bump_on}, {'refused' if truthy(on.raised) else 'ran'}; "
                  f"under no_grad: +{bump_off}, {'refused' if truthy(off.raised) else 'ran'}",
                  flag(bump_off == bump_on == 1, "no_grad bumps the version as grad mode does: +1"),
                  *_bumped(on), *_bumped(off))


EXP_EDIT_X = "y = sum(exp(x)) saves its output, not x; edit x"
EXP_EDIT_OUT = "y = sum(exp(x)) saves its output; edit the output"


@relation("L5/saved_by", "L5/inplace",
          edge=Edge(Move("L5/saved_by", {"op": "exp(x)"}, "saves_input", 0),
                    Move("L5/saved_by", {"op": "exp(x)"}, "saves_input", 1)))
def exp_saves_output(t):
    """The pack hook is handed exp's output and never its input (sin, whose derivative needs x, is handed x); the
    version check agrees: editing x after exp runs with the unedited gradient, editing exp's output is refused."""
    d = t["L5/saved_by"]
    exp, sin = row(d, "op", "exp(x)"), row(d, "op", "sin(x)")
    cases = t["L5/inplace"]
    edit_x, edit_out = row(cases, "case", EXP_EDIT_X), row(cases, "case", EXP_EDIT_OUT)
    return judged("pack hook: " + "; ".join(f"{r.op} saves {r.saves} ({r.saves_output} output, {r.saves_input} input)"
                                            for r in d.itertuples())
                  + f"; editing x after exp {'refused' if truthy(edit_x.raised) else 'ran'}, editing its output "
                  + ("refused" if truthy(edit_out.raised) else "ran"),
                  flag(exp.saves_output >= 1 and exp.saves_input == 0, "exp: the hook sees its output, not x"),
                  flag(sin.saves_input >= 1 and sin.saves_output == 0, "control, sin: the hook sees x"),
                  flag(not truthy(edit_x.raised) and truthy(edit_x.grad_equals_unedited),
                       "x edited after exp: backward runs with the unedited gradient"),
                  flag(truthy(edit_out.raised), "exp's output edited: backward refuses"))


RETAINED = "backward(retain_graph=True)"


def _life(t, case: str):
    return row(t["L5/lifetime"], "case", case)


@relation("L5/lifetime", edge=Edge(
    Move("L5/lifetime", {"case": RETAINED}, "alive_bytes_after", lambda t: _life(t, RETAINED).saved_bytes_at_forward),
    Move("L5/lifetime", {"case": RETAINED}, "alive_bytes_after",
         lambda t: _life(t, RETAINED).saved_bytes_at_forward - 1)))
def retain_graph_keeps_saved(t):
    """After backward(retain_graph=True) every value packed at forward is still alive (their bytes are the cost);
    after a plain backward none is; dropping the retained graph frees them."""
    d = t["L5/lifetime"]
    kept = _life(t, RETAINED)
    return judged("; ".join(f"{r.case}: {r.alive_after} of {r.saved_at_forward} saved values alive "
                            f"({r.alive_bytes_after} of {r.saved_bytes_at_forward} bytes)" for r in d.itertuples()),
                  flag(kept.saved_at_forward > 0 and kept.alive_after == kept.saved_at_forward
                       and kept.alive_bytes_after == kept.saved_bytes_at_forward,
                       "retained: every saved value and byte still alive"),
                  *(flag(r.alive_after == 0 and r.alive_bytes_after == 0, f"{r.case}: nothing alive")
                    for r in d[d.case != RETAINED].itertuples()))


@lru_cache(maxsize=None)
def _l5(bug: str | None) -> dict[str, pd.DataFrame]:
    """The real L5 saved-value measurements at the documents' x = [2, 3] and shift 1."""
    from .inplace import inplace_cases
    from .saved_values import lifetime_table, version_table

    x = [2.0, 3.0]
    return {"L5/versions": version_table(x, 1.0, bug), "L5/inplace": inplace_cases(x, 1.0, bug),
            "L5/lifetime": lifetime_table(x, bug)}


@lru_cache(maxsize=None)
def _l4(bug: str | None) -> dict[str, pd.DataFrame]:
    from .graph import branch_gradients

    return {"L4/branches": branch_gradients([2.0, 3.0], bug)}


@lru_cache(maxsize=None)
def _l5_graph(bug: str | None) -> dict[str, pd.DataFrame]:
    from .graph import measure_l5
    from .higher_order import higher_order_table

    out = measure_l5([2.0, 3.0], 1.0, 2.0, None if bug == "create_graph dropped" else bug)
    return {"L5/values": out["values"], "L5/higher_order": higher_order_table(2.0, bug)}


BUGS = [Bug("both branches through torch.where", "both branches computed and one picked by torch.where, so the "
            "untaken parameter is on the graph", ("untaken_branch_gets_no_gradient",), _l4),
        Bug("x.grad not cleared between traversals", "the retained graph's second traversal adds onto the first's "
            "gradient", ("retain_graph_reproduces",), _l5_graph),
        Bug("create_graph dropped", "autograd.grad called without create_graph in the create_graph case",
            ("retain_graph_is_not_create_graph",), _l5_graph),
        Bug("edit made on a copy", "every in-place edit writes into x.clone() instead of the tensor",
            ("inplace_bumps_version", "no_grad_still_bumps_version", "exp_saves_output", "unsaved_edit_runs",
             "view_write_invalidates"), _l5),
        Bug("retain_graph dropped", "the retained case calls backward() without retain_graph",
            ("retain_graph_keeps_saved",), _l5)]
