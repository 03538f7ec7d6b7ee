"""The L family's conclusions, tested: accumulation, microbatch and rank weighting, leaves, saved values (L1-L5).

Each relation reads this family's tables (results/L*/) and returns an Outcome whose checks carry their margins;
each declares its two boundary controls (`edge`). `sources` says which computation produced each cell. Scheme
and reduction names are fixed strings; the configured sizes (examples, microbatches, divisors) are columns.
The checkpoint and activation-shape claims (L6, L7) live in claims_memory.py, the conditions of issue 28 (L2's
batch-dependent layers, L3's real all-reduce, L5's create_graph) in claims_conditions.py, both imported at the end.
"""

from __future__ import annotations

import numpy as np

from ..claims import (EPS64, Edge, Flip, Move, at_most, flag, g, is_none, judged, near, qv, relation, row, same_float,
                      sources, times_at_least, truthy, ulps_away)

# A mis-weighted gradient is wrong by a share of the gradient, not by rounding: the documents' rank weights are
# off by 1/42 and 1/56 (12-17 % of 1/7), their unweighted sum by a whole gradient. At least 1 % of the gradient
# norm separates that from float64 rounding (10^-16) by fourteen orders of magnitude.
WRONG = 0.01
# Rounding of a few float64 reductions over a handful of examples, in ulps of the gradient norm.
ROUND_ULPS = 16

sources("L1/values", {"max_abs_g2_minus_2g1": "torch, two backward calls on one retained graph",
                      "max_abs_g2_minus_g1": "torch, two backward calls on one retained graph",
                      "grad_after_zero_grad": "torch zero_grad(set_to_none=True)"}, by="quantity")
sources("L1/zero_grad", {"grad_after_zero_grad": "torch zero_grad(set_to_none=True)"}, by="parameter")
SCHEMES = {"full batch": "torch full batch", "means weighted by size": "torch microbatches weighted by size",
           "unweighted sum of means": "torch microbatches unweighted",
           "nanoGPT, loss / microbatches": "torch nanoGPT loop, loss / microbatches",
           "nanoGPT without the division": "torch nanoGPT loop without the division",
           "means / microbatch count": "torch microbatch means / count",
           "equal sizes, means / microbatch count": "torch equal microbatch means / count"}
# each row's gradient, and its distance from the full-batch gradient of the same examples (80 for nanoGPT's)
sources("L2/schemes", {"examples": "input", "microbatches": "input", "loss_weights": "input",
                       **{f"{s}:grad_norm": src for s, src in SCHEMES.items()},
                       **{f"{s}:max_abs_diff_vs_full": f"{src}, torch full batch" for s, src in SCHEMES.items()}},
        by="scheme")
REDUCTIONS = {"average of rank means": "torch rank means averaged", "rank means weighted by count":
              "torch rank means weighted by count", "sum of rank sums / loss elements": "torch rank sums / elements",
              "sum of rank sums / examples": "torch rank sums / examples"}
sources("L3/ranks", {"divisor": "input", **{f"{r}:grad_norm": src for r, src in REDUCTIONS.items()},
                     **{f"{r}:max_abs_diff_vs_single_process": f"{src}, torch single process"
                        for r, src in REDUCTIONS.items()}}, by="reduction")
sources("L3/equal", {"split": "input", **{f"{r}:grad_norm": f"{src}, equal ranks" for r, src in REDUCTIONS.items()},
                     **{f"{r}:max_abs_diff_vs_single_process": f"{src}, equal ranks, torch single process"
                        for r, src in REDUCTIONS.items()}}, by="reduction")
sources("L4/tensors", {"is_leaf": "torch autograd", "grad_fn": "torch autograd", "grad": "torch autograd"}, by="tensor")
sources("L4/branches", {"input": "input", "parameter": "input", "branch_taken": "forward branch (Python if)",
                        "in_taken_branch": "forward branch (Python if)", "grad_is_none": "torch backward",
                        "grad": "torch backward"})
sources("L5/errors", {"message": "torch saved-tensor checks"}, by="case")
sources("L5/values", {**{f"retain_graph_grad_{i}": "torch second traversal of a retained graph" for i in range(8)},
                      **{f"retain_graph_first_grad_{i}": "torch first traversal" for i in range(8)}}, by="quantity")
sources("L5/inplace", {"kind": "input", "edits_saved_storage": "case analysis: what each backward saves",
                       "raised": "torch version check", "message": "torch version check",
                       "grad_equals_unedited": "torch edited run, torch unedited run"}, by="case")


def _rounding(diff: float, norm: float, what: str):
    """diff at float64 rounding: at most ROUND_ULPS ulps of the gradient norm."""
    return at_most(float(diff) / (EPS64 * max(float(norm), 1.0)), ROUND_ULPS, what, "ulps", ROUND_ULPS / 4)


def _wrong(diff: float, norm: float, what: str):
    """diff is a real error: at least WRONG of the gradient norm (margin in decades)."""
    return times_at_least(float(diff), WRONG * float(norm), 1, what)


# ---- L1 -----------------------------------------------------------------------------------------------------
@relation("L1/values", single=True,
          edge=Edge(Move("L1/values", {"quantity": "max_abs_g2_minus_2g1"}, "value", 0.0),
                    Move("L1/values", {"quantity": "max_abs_g2_minus_2g1"}, "value", 5e-324)))  # smallest nonzero
def backward_twice_doubles(t):
    v = t["L1/values"]
    twice, once = float(qv(v, "max_abs_g2_minus_2g1")), float(qv(v, "max_abs_g2_minus_g1"))
    return judged(f"max|g2 - 2 g1| = {twice:g}; max|g2 - g1| = {g(once)} (the second call added a gradient)",
                  flag(twice == 0, "two calls leave exactly twice one call's gradient (the documents: 0)"),
                  flag(once > 0, "the gradient added is not zero"))


@relation("L1/zero_grad", single=True,
          edge=Edge(Move("L1/zero_grad", {"parameter": "weight"}, "grad_after_zero_grad", "None"),
                    Move("L1/zero_grad", {"parameter": "weight"}, "grad_after_zero_grad", "tensor([[0., 0., 0.]])")))
def zero_grad_sets_none(t):
    vals = t["L1/zero_grad"]["grad_after_zero_grad"]
    return judged(f"after zero_grad(set_to_none=True): {', '.join('None' if is_none(v) else str(v) for v in vals)}",
                  flag(len(vals) > 0 and all(map(is_none, vals)), "every parameter's .grad is None"))


# ---- L2 -----------------------------------------------------------------------------------------------------
def _scheme(t, name: str):
    return row(t["L2/schemes"], "scheme", name)


@relation("L2/schemes", edge=Flip("L2/schemes", {"scheme": "means weighted by size"}, "max_abs_diff_vs_full",
                                  holding=lambda t: _scheme(t, "means weighted by size").max_abs_diff_vs_full,
                                  failing=lambda t: 1e3 * EPS64 * max(_scheme(t, "full batch").grad_norm, 1.0),
                                  log=True))
def weighted_microbatches_match(t):
    full = float(_scheme(t, "full batch").grad_norm)
    w, u = _scheme(t, "means weighted by size"), _scheme(t, "unweighted sum of means")
    return judged(f"max diff vs the full batch: weighted ({w.loss_weights}) {g(w.max_abs_diff_vs_full)}, "
                  f"unweighted {g(u.max_abs_diff_vs_full)} (full-batch norm {g(full)})",
                  _rounding(w.max_abs_diff_vs_full, full, "weighted microbatches vs the full batch, ulps of its norm"),
                  _wrong(u.max_abs_diff_vs_full, full, "unweighted sum off the full batch by at least 1 % of its norm"))


@relation("L2/schemes", edge=Flip("L2/schemes", {"scheme": "unweighted sum of means"}, "grad_norm",
                                  holding=lambda t: 2 * _scheme(t, "full batch").grad_norm,
                                  failing=lambda t: 3 * _scheme(t, "full batch").grad_norm))
def unweighted_roughly_doubles(t):
    u = _scheme(t, "unweighted sum of means")
    ratio, k = float(u.grad_norm / _scheme(t, "full batch").grad_norm), int(u.microbatches)
    # "roughly doubles" because two means are summed: the ratio within a quarter of the microbatch count (2)
    return judged(f"unweighted / full gradient norm = {g(ratio)} over {k} microbatch means",
                  near(ratio, k, k / 4, f"ratio vs the {k} means summed", "x", k / 40))


@relation("L2/schemes", edge=Flip("L2/schemes", {"scheme": "nanoGPT without the division"}, "grad_norm",
                                  holding=lambda t: _nanogpt(t)[2] * _nanogpt(t)[0].grad_norm,
                                  failing=lambda t: ulps_away(_nanogpt(t)[2] * _nanogpt(t)[0].grad_norm, 1024)))
def nanogpt_division_by_microbatches(t):
    """The loop with loss / n matches the full batch of the same examples; without the division its gradient is
    n times larger (n, the microbatch count, read from the table: 40 in the documents)."""
    with_div, without, n = _nanogpt(t)
    ratio = float(without.grad_norm / with_div.grad_norm)
    return judged(f"with loss/{n}: diff vs the full batch of {with_div.examples} examples "
                  f"{g(with_div.max_abs_diff_vs_full)}; without: norm x{ratio!r}",
                  _rounding(with_div.max_abs_diff_vs_full, with_div.grad_norm, "loop with loss / n vs the full batch"),
                  # two accumulations of n microbatches, each rounding n additions: n x 4 ulps of n
                  same_float(ratio, n, 4 * n, EPS64, "without / with the division vs the microbatch count"),
                  flag(n > 1 and int(without.microbatches) == n, "both loops over the same n > 1 microbatches"))


def _nanogpt(t):
    with_div, without = _scheme(t, "nanoGPT, loss / microbatches"), _scheme(t, "nanoGPT without the division")
    return with_div, without, int(with_div.microbatches)


# ---- L3 -----------------------------------------------------------------------------------------------------
def _reduction(t, table: str, name: str):
    return row(t[table], "reduction", name)


def _single_norm(t) -> float:
    """The single-process gradient's norm, as the count-weighted reduction (equal to it to rounding) gives it."""
    return float(_reduction(t, "L3/ranks", "rank means weighted by count").grad_norm)


@relation("L3/ranks", edge=Flip("L3/ranks", {"reduction": "average of rank means"}, "max_abs_diff_vs_single_process",
                                holding=lambda t: _reduction(t, "L3/ranks", "average of rank means")
                                .max_abs_diff_vs_single_process,
                                failing=lambda t: WRONG / 10 * _single_norm(t), log=True))
def rank_means_need_weights(t):
    d, norm = t["L3/ranks"], _single_norm(t)
    naive = _reduction(t, "L3/ranks", "average of rank means")
    good = d[d["reduction"].isin(("rank means weighted by count", "sum of rank sums / loss elements"))]
    return judged(f"average of rank means errs by {g(naive.max_abs_diff_vs_single_process)}; weighted reductions "
                  + ", ".join(f"{r.reduction} (/{r.divisor}) {g(r.max_abs_diff_vs_single_process)}"
                              for r in good.itertuples()) + f" (gradient norm {g(norm)})",
                  _wrong(naive.max_abs_diff_vs_single_process, norm, "rank means averaged: off by at least 1 %"),
                  flag(len(good) == 2, "both weighted reductions measured"),
                  *(_rounding(r.max_abs_diff_vs_single_process, norm, f"{r.reduction} vs the single process")
                    for r in good.itertuples()))


@relation("L3/equal", "L3/ranks",
          edge=Flip("L3/equal", {"reduction": "average of rank means"}, "max_abs_diff_vs_single_process",
                    holding=lambda t: _reduction(t, "L3/equal", "average of rank means").max_abs_diff_vs_single_process,
                    failing=lambda t: 1e3 * EPS64 * max(_reduction(t, "L3/equal", "average of rank means").grad_norm,
                                                        1.0), log=True))
def equal_ranks_average_exact(t):
    e, u = _reduction(t, "L3/equal", "average of rank means"), _reduction(t, "L3/ranks", "average of rank means")
    return judged(f"average of rank means vs the single process: equal ranks {e.split} "
                  f"{g(e.max_abs_diff_vs_single_process)}, unequal ranks {g(u.max_abs_diff_vs_single_process)}",
                  _rounding(e.max_abs_diff_vs_single_process, e.grad_norm, "equal ranks: the plain average is exact"),
                  _wrong(u.max_abs_diff_vs_single_process, _single_norm(t), "unequal ranks: off by at least 1 %"))


# ---- L4 -----------------------------------------------------------------------------------------------------
@relation("L4/tensors", single=True, edge=Edge(Move("L4/tensors", {"tensor": "y = x*x"}, "grad", "None"),
                                               Move("L4/tensors", {"tensor": "y = x*x"}, "grad", "[1.0, 1.0]")))
def leaf_keeps_grad_nonleaf_only_on_request(t):
    d = t["L4/tensors"]
    x, y, yr = row(d, "tensor", "x"), row(d, "tensor", "y = x*x"), row(d, "tensor", "y after retain_grad()")
    return judged(f"x leaf {x.is_leaf}, grad_fn {x.grad_fn}, grad {x.grad}; y leaf {y.is_leaf}, grad {y.grad}; "
                  f"with retain_grad {yr.grad}",
                  flag(truthy(x.is_leaf) and is_none(x.grad_fn) and not is_none(x.grad), "the leaf keeps .grad"),
                  flag(not truthy(y.is_leaf) and is_none(y.grad), "the non-leaf's .grad is None by default"),
                  flag(not truthy(yr.is_leaf) and not is_none(yr.grad), "retain_grad() keeps it"))


@relation("L4/branches", edge=Edge(Move("L4/branches", {"input": "x", "parameter": "w_neg"}, "grad_is_none", True),
                                   Move("L4/branches", {"input": "x", "parameter": "w_neg"}, "grad_is_none", False)))
def untaken_branch_gets_no_gradient(t):
    d = t["L4/branches"]
    taken, none = d["in_taken_branch"].map(truthy), d["grad_is_none"].map(truthy)
    both_ways = set(d.loc[taken, "parameter"]) & set(d.loc[~taken, "parameter"])  # each once on, once off the path
    return judged("; ".join(f"input {r.input}: {r.parameter} {'taken' if truthy(r.in_taken_branch) else 'untaken'}, "
                            f"grad {'None' if truthy(r.grad_is_none) else g(r.grad)}" for r in d.itertuples()),
                  flag(len(d) > 0 and bool((none == ~taken).all()), "a gradient exactly where the branch ran"),
                  flag(len(both_ways) > 0, "a parameter seen both on and off the path"))


# ---- L5 -----------------------------------------------------------------------------------------------------
SECOND = "second backward without retain_graph"
FREED = "Trying to backward through the graph a second time"


@relation("L5/errors", single=True,
          edge=Edge(Move("L5/errors", {"case": SECOND}, "message", FREED),
                    Move("L5/errors", {"case": SECOND}, "message", "no error")))
def saved_value_guards_raise(t):
    d = t["L5/errors"]
    edit, again = (str(row(d, "case", c).message) for c in ("in-place edit of a saved tensor", SECOND))
    return judged(f"in-place edit: {edit[:90]}...; second backward: {again[:90]}...",
                  flag("version" in edit, "the in-place edit raises the version-counter error"),
                  flag("second time" in again, "the second backward raises the freed-graph error"))


def _retained(t) -> tuple[list[float], list[float]]:
    v = t["L5/values"]
    n = int(v["quantity"].str.fullmatch(r"retain_graph_grad_\d+").sum())
    return ([float(qv(v, f"retain_graph_grad_{i}")) for i in range(n)],
            [float(qv(v, f"retain_graph_first_grad_{i}")) for i in range(n)])


@relation("L5/values", edge=Edge(Move("L5/values", {"quantity": "retain_graph_grad_1"}, "value",
                                      lambda t: _retained(t)[1][1]),
                                 Move("L5/values", {"quantity": "retain_graph_grad_1"}, "value",
                                      lambda t: np.nextafter(_retained(t)[1][1], np.inf))))
def retain_graph_reproduces(t):
    again, first = _retained(t)
    return judged(f"retained graph, second traversal {again} vs first {first}",
                  flag(len(again) > 0 and again == first, "bit-identical gradients"))


def _inplace_kind(t, kind: str) -> tuple[str, list]:
    """Every case of `kind` whose edit writes into saved storage is refused by the version check, every other one
    runs with the unedited graph's gradient; both sorts must be present."""
    d = t["L5/inplace"]
    d = d[d["kind"] == kind]
    saved = d["edits_saved_storage"].map(truthy)
    checks = [flag(saved.any() and (~saved).any(), f"{kind} cases of both sorts")]
    checks += [flag(truthy(r.raised) and "version" in str(r.message), f"refused: {r.case}")
               for r in d[saved].itertuples()]
    checks += [flag(not truthy(r.raised) and truthy(r.grad_equals_unedited), f"runs, unedited gradient: {r.case}")
               for r in d[~saved].itertuples()]
    reason = "; ".join(f"{r.case}: {'refused' if truthy(r.raised) else 'ran'}"
                       + ("" if truthy(r.raised) else f", gradient as unedited: {r.grad_equals_unedited}")
                       for r in d.itertuples())
    return reason, checks


ADD = "y = sum(x + w) saves no input; edit x"
ROWS = "product saves row h[0]; write through row h[1] (no shared element)"


@relation("L5/inplace", edge=Edge(Move("L5/inplace", {"case": ADD}, "grad_equals_unedited", True),
                                  Move("L5/inplace", {"case": ADD}, "grad_equals_unedited", False)))
def unsaved_edit_runs(t):
    reason, checks = _inplace_kind(t, "direct")
    return judged(reason, *checks)


@relation("L5/inplace", edge=Edge(Move("L5/inplace", {"case": ROWS}, "raised", True),
                                  Move("L5/inplace", {"case": ROWS}, "raised", False)))
def view_write_invalidates(t):
    reason, checks = _inplace_kind(t, "view")
    return judged(reason, *checks)
