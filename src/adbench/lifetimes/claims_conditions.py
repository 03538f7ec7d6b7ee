"""The L family's conditions (issue 28): microbatch accumulation with batch-dependent layers (L2), a real
all-reduce across processes (L3) and what retain_graph and create_graph each give (L5). Listed in
lifetimes/family.py; shares lifetimes/claims.py's WRONG and rounding scales (a one-way import).
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from ..claims import EPS64, Flip, flag, g, judged, relation, row, same_float, sources, truthy, ulps_away
from ..claims.bugs import Bug
from .claims import WRONG, _rounding, _wrong

FULL, MICRO = "torch full batch", "torch size-weighted microbatches"
sources("L2/layers", {"layer": "input", "mode": "input", "reseeded": "input", "masks": "dropout mask hook",
                      "full_grad_norm": FULL, "weighted_grad_norm": MICRO, "max_abs_diff_vs_full": f"{MICRO}, {FULL}",
                      "rel_diff_vs_full": f"{MICRO}, {FULL}"})
GLOO, SINGLE = "gloo all_reduce across processes", "torch single process"
sources("L3/allreduce/reductions", {"case": "input", "split": "input", "world_size": "input", "reduction": "input",
                                    "max_abs_diff_vs_single_process": f"{GLOO}, {SINGLE}", "grad_norm": GLOO,
                                    "norm_ratio_vs_single_process": f"{GLOO}, {SINGLE}",
                                    "max_abs_diff_between_ranks": GLOO})
sources("L5/higher_order", {"neither": "torch autograd.grad without flags",
                            "retain_graph": "torch autograd.grad with retain_graph",
                            "create_graph": "torch autograd.grad with create_graph", "x": "input"}, by="flag")


# ---- L2: batch-dependent layers -----------------------------------------------------------------------------
def _layer(t, layer: str, mode: str = "train", reseeded: bool = False):
    d = t["L2/layers"]
    hit = d[(d.layer == layer) & (d["mode"] == mode) & (d.reseeded.map(truthy) == reseeded)]
    if hit.empty:
        raise KeyError(f"L2/layers: no row {layer}, {mode}, reseeded {reseeded}")
    return hit.iloc[0]


def _rel_rounding(r, what: str):
    """rel_diff_vs_full (a difference over the full gradient's largest entry) at float64 rounding."""
    return _rounding(r.rel_diff_vs_full, 1.0, what)


@relation("L2/layers", edge=Flip("L2/layers", {"layer": "BatchNorm1d", "mode": "train", "reseeded": False},
                                 "rel_diff_vs_full", holding=lambda t: _layer(t, "BatchNorm1d").rel_diff_vs_full,
                                 failing=WRONG / 10, log=True))
def batch_dependent_layers_break_accumulation(t):
    """Size-weighted microbatch means equal the full batch through a plain linear layer (and BatchNorm on running
    statistics) but miss it by at least 1 % through BatchNorm on batch statistics and through fresh dropout
    masks; re-seeded masks that come out equal bring the equality back."""
    lin, bn, bn_eval, drop = (_layer(t, "linear only"), _layer(t, "BatchNorm1d"), _layer(t, "BatchNorm1d", "eval"),
                              _layer(t, "dropout"))
    if drop.masks != "differ":
        raise ValueError("the fresh dropout masks came out equal: lifetimes.microbatch_dropout draws nothing")
    d = t["L2/layers"]
    equal_masks = d[d.reseeded.map(truthy) & (d.masks == "equal")]
    return judged("microbatches vs the full batch, max diff / largest entry: " + ", ".join(
        f"{r.layer} ({r.mode}{', re-seeded' if truthy(r.reseeded) else ''}, masks {r.masks}) {g(r.rel_diff_vs_full)}"
        for r in d.itertuples()),
        _rel_rounding(lin, "linear layer: equal to rounding"),
        _rel_rounding(bn_eval, "BatchNorm on running statistics: equal to rounding"),
        _wrong(bn.rel_diff_vs_full, 1.0, "BatchNorm on batch statistics: off by at least 1 %"),
        _wrong(drop.rel_diff_vs_full, 1.0, "fresh dropout masks: off by at least 1 %"),
        *(_rel_rounding(r, "re-seeded, equal masks: equal to rounding") for r in equal_masks.itertuples()))


# ---- L3: a real all-reduce --------------------------------------------------------------------------------------
MEANS = "all_reduce(sum) of local means"
MEAN_OF_MEANS = "all_reduce(sum) of local means / world_size"
COUNTED = ("all_reduce(sum) of count-weighted local means / all_reduce(sum) of counts",
           "all_reduce(sum) of local sums / all_reduce(sum) of loss elements")


def _real(t, case: str, reduction: str):
    d = t["L3/allreduce/reductions"]
    hit = d[(d.case == case) & (d.reduction == reduction)]
    if hit.empty:
        raise KeyError(f"L3/allreduce/reductions: no row {case}, {reduction}")
    return hit.iloc[0]


def _sizes(t, case: str) -> list[int]:
    return [int(s) for s in str(_real(t, case, MEANS).split).split("+")]


def _global_norm(t, case: str) -> float:
    """The single-process gradient's norm: the count-weighted reduction's norm over its ratio to it."""
    r = _real(t, case, COUNTED[0])
    return float(r.grad_norm / r.norm_ratio_vs_single_process)


@relation("L3/allreduce/reductions",
          edge=Flip("L3/allreduce/reductions", {"case": "split", "reduction": MEAN_OF_MEANS},
                    "max_abs_diff_vs_single_process",
                    holding=lambda t: _real(t, "split", MEAN_OF_MEANS).max_abs_diff_vs_single_process,
                    failing=lambda t: WRONG / 10 * _global_norm(t, "split"), log=True))
def real_allreduce_needs_matching_reduction(t):
    """Over gloo, the world-size average of rank means misses the global mean on unequal ranks (at least 1 % of the
    gradient norm) and hits it on equal ones; the count-normalised reductions hit it on both; the undivided sum
    of means misses on both; every rank ends with the same gradient."""
    sizes = _sizes(t, "split")
    if len(set(sizes)) == 1:
        raise ValueError("lifetimes.split gives every rank as many examples: the unequal case is not measured")
    d = t["L3/allreduce/reductions"]
    checks = [flag(len(set(_sizes(t, "equal_split"))) == 1, "the control split is equal")]
    for case in ("split", "equal_split"):
        norm = _global_norm(t, case)
        checks += [_rounding(_real(t, case, c).max_abs_diff_vs_single_process, norm, f"{case}: {c} vs one process")
                   for c in COUNTED]
        checks.append(_wrong(_real(t, case, MEANS).max_abs_diff_vs_single_process, norm,
                             f"{case}: the undivided sum of means off by at least 1 %"))
    mean_of_means = _real(t, "split", MEAN_OF_MEANS).max_abs_diff_vs_single_process
    checks += [_wrong(mean_of_means, _global_norm(t, "split"), "unequal ranks: means / world size off by at least 1 %"),
               _rounding(_real(t, "equal_split", MEAN_OF_MEANS).max_abs_diff_vs_single_process,
                         _global_norm(t, "equal_split"), "equal ranks: means / world size vs one process"),
               flag(bool((d.max_abs_diff_between_ranks == 0).all()), "every rank holds the same gradient")]
    return judged("; ".join(f"{r.case} {r.split}: {r.reduction} off by {g(r.max_abs_diff_vs_single_process)}"
                            for r in d.itertuples()), *checks)


SIMULATED = {MEAN_OF_MEANS: "average of rank means", COUNTED[0]: "rank means weighted by count",
             COUNTED[1]: "sum of rank sums / loss elements"}
# gloo against the in-process sums: equal to rounding, not necessarily bitwise (the documents: "floating point
# differences caused by another reduction tree"). A few additions in another order move a float64 result by a few
# ulps; 64 ulps of the norm still sits fourteen orders of magnitude below a mis-weighting (WRONG).
TREE_ULPS = 64
SIM_TABLES = {"split": "L3/ranks", "wide_split": "L3/wide"}


@relation("L3/allreduce/reductions", "L3/ranks", "L3/wide",
          edge=Flip("L3/allreduce/reductions", {"case": "wide_split", "reduction": COUNTED[0]}, "grad_norm",
                    holding=lambda t: row(t["L3/wide"], "reduction", SIMULATED[COUNTED[0]]).grad_norm,
                    failing=lambda t: ulps_away(row(t["L3/wide"], "reduction", SIMULATED[COUNTED[0]]).grad_norm, 4 * TREE_ULPS)))
def real_allreduce_equals_simulation(t):
    """gloo processes give, reduction by reduction, the gradient the in-process arithmetic of L3 gives on the same
    split, to rounding (not necessarily bitwise): on the documents' two ranks and on three or more, where a SUM
    all-reduce adds in an order of its own."""
    checks, said = [], []
    for case, table in SIM_TABLES.items():
        sizes, sim = _sizes(t, case), t[table]
        if case == "wide_split" and len(sizes) < 3:
            raise ValueError("lifetimes.allreduce.wide_split holds fewer than three ranks: a SUM over two is one "
                             "addition, the reduction order cannot show")
        checks += [flag(int(_real(t, case, MEANS).world_size) == len(sizes) == int(row(sim, "reduction", SIMULATED[
                        MEAN_OF_MEANS]).divisor), f"{case}: as many ranks as the simulation's"),
                   flag(sum(sizes) == int(row(sim, "reduction", SIMULATED[COUNTED[0]]).divisor),
                        f"{case}: as many examples as the simulation's")]
        bitwise = 0
        for real_name, sim_name in SIMULATED.items():
            r, s = _real(t, case, real_name), row(sim, "reduction", sim_name)
            bitwise += int(r.grad_norm == s.grad_norm and r.max_abs_diff_vs_single_process
                           == s.max_abs_diff_vs_single_process)
            checks += [same_float(r.grad_norm, s.grad_norm, TREE_ULPS, EPS64,
                                  f"{case} ({len(sizes)} ranks), {sim_name}: gradient norm, gloo vs simulated"),
                       same_float(r.max_abs_diff_vs_single_process, s.max_abs_diff_vs_single_process, TREE_ULPS, EPS64,
                                  f"{case} ({len(sizes)} ranks), {sim_name}: error against one process")]
        said.append(f"{case} {'+'.join(map(str, sizes))} ({len(sizes)} ranks): {bitwise} of {len(SIMULATED)} "
                    f"reductions bit-identical, largest norm gap "
                    + g(max(abs(_real(t, case, rn).grad_norm - row(sim, 'reduction', sn).grad_norm)
                            for rn, sn in SIMULATED.items())))
    return judged("gloo vs simulated: " + "; ".join(said), *checks)


@lru_cache(maxsize=None)  # the clean run is shared with tests/test_lifetimes_allreduce.py
def measure_gloo(bug: str | None) -> dict[str, pd.DataFrame]:
    """The real all-reduce job at the default layout (3 + 4, control 4 + 4, wide 2 + 2 + 3 examples)."""
    from .allreduce import measure_l3_allreduce

    return {"L3/allreduce/reductions": measure_l3_allreduce([3, 4], [4, 4], 3, 2, 0, "gloo", 60, wide_split=[2, 2, 3],
                                                            bug=bug)["reductions"]}


@lru_cache(maxsize=None)
def _layers(bug: str | None) -> dict[str, pd.DataFrame]:
    """The real L2 layers table at the documents' 3 + 4 split."""
    from .batch_layers import layer_table

    return {"L2/layers": layer_table(7, [3, 4], 3, 2, 0, 0.5, bug)}


BUGS = [Bug("BatchNorm left in eval mode", "the BatchNorm case run without net.train(), on running statistics",
            ("batch_dependent_layers_break_accumulation",), _layers),
        Bug("count weight dropped before the all-reduce", "each rank all-reduces its plain mean where the count-"
            "weighted reduction needs n_r x mean", ("real_allreduce_needs_matching_reduction",
                                                    "real_allreduce_equals_simulation"), measure_gloo)]


# ---- L5: retain_graph against create_graph -----------------------------------------------------------------------
def _flag(t, name: str):
    return row(t["L5/higher_order"], "flag", name)


def _six_x(t) -> float:
    return 6 * float(_flag(t, "create_graph").x)


@relation("L5/higher_order", edge=Flip("L5/higher_order", {"flag": "create_graph"}, "second_derivative",
                                       holding=_six_x, failing=lambda t: ulps_away(_six_x(t), 16)))
def retain_graph_is_not_create_graph(t):
    """retain_graph keeps y's graph walkable, but its derivative has no graph of its own and a second grad
    raises; create_graph's derivative requires grad and its derivative is 6x (f = x^3); with neither flag y's
    graph is freed."""
    neither, retain, create = (_flag(t, f) for f in ("neither", "retain_graph", "create_graph"))
    x = float(create.x)
    return judged(f"retain_graph: y's graph kept {retain.graph_of_y_kept}, first derivative's grad_fn "
                  f"{retain.first_grad_fn}, second grad: {str(retain.second_grad_error)[:60]}; create_graph: grad_fn "
                  f"{create.first_grad_fn}, second derivative {float(create.second_derivative)!r} at x = {x:g}",
                  flag(truthy(retain.graph_of_y_kept), "retain_graph: y's graph still walkable"),
                  flag(not truthy(retain.first_requires_grad) and str(retain.first_grad_fn).startswith("None"),
                       "retain_graph: the derivative is a plain tensor"),
                  flag(str(retain.second_grad_error) != "no error", "retain_graph: a second derivative raises"),
                  flag(not truthy(neither.graph_of_y_kept), "control, no flag: y's graph freed"),
                  flag(truthy(create.first_requires_grad), "create_graph: the derivative requires grad"),
                  *(same_float(r.first_derivative, 3 * x * x, 4, EPS64, f"{r.flag}: first derivative vs 3x^2")
                    for r in (neither, retain, create)),
                  same_float(create.second_derivative, 6 * x, 4, EPS64, "create_graph: second derivative vs 6x"))
