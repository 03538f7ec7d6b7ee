"""The L family's reductions of issue 36 (L1-L3): clearing with zeros, dividing by the microbatch count, the global
element count, the global token count; and the family's measurement-level controls for L1-L3 (BUGS). Imported by
lifetimes/claims.py, whose WRONG and rounding scales they share."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from ..claims import EPS64, Flip, flag, g, judged, relation, row, sources, truthy
from ..claims.bugs import Bug
from .claims import WRONG, _rounding, _wrong

SECOND = "torch second-batch backward after clearing, torch fresh model"
sources("L1/clearing", {"grad_before_second_backward": "input", "max_abs_diff_vs_fresh": SECOND,
                        "bitwise_equal": SECOND, "fresh_grad_norm": "torch fresh model"}, by="clearing")
sources("L3/wide", {"divisor": "input", "split": "input",
                    **{f"{r}:{c}": f"torch simulated ranks ({r}), torch single process" for r in
                       ("average of rank means", "rank means weighted by count", "sum of rank sums / loss elements",
                        "sum of rank sums / examples") for c in ("grad_norm", "max_abs_diff_vs_single_process")}},
        by="reduction")
TOKENS = {"average of rank token means": "torch rank token means averaged",
          "summed token-loss numerators / summed valid tokens": "torch token numerators / global token count"}
sources("L3/tokens", {"valid_tokens": "input", "tokens_per_rank": "input", "divisor": "input",
                      "single_process_grad_norm": "torch single process",
                      **{f"{r}:grad_norm": src for r, src in TOKENS.items()},
                      **{f"{r}:max_abs_diff_vs_single_process": f"{src}, torch single process"
                         for r, src in TOKENS.items()}}, by="reduction")


# ---- L1: zero fill ------------------------------------------------------------------------------------------------
def _clearing(t, how: str):
    return row(t["L1/clearing"], "clearing", how)


ZERO_FILL, TO_NONE, NOT_CLEARED = "zero_grad(set_to_none=False)", "zero_grad(set_to_none=True)", "not cleared"


# the exact halves (bit-identical) are exercised by the measurement-level control below; the boundary controls move
# the not-cleared row, whose distance from the fresh gradient is what the comparison must be able to see
@relation("L1/clearing", edge=Flip("L1/clearing", {"clearing": NOT_CLEARED}, "max_abs_diff_vs_fresh",
                                   holding=lambda t: _clearing(t, NOT_CLEARED).max_abs_diff_vs_fresh,
                                   failing=lambda t: WRONG / 10 * _clearing(t, TO_NONE).fresh_grad_norm, log=True))
def zero_fill_equivalent(t):
    """After a first batch's backward, clearing to None and filling with zeros both give exactly the second batch's
    gradient of a fresh model; not clearing misses it by the first batch's gradient (at least 1 % of its norm)."""
    none, zero, kept = (_clearing(t, h) for h in (TO_NONE, ZERO_FILL, NOT_CLEARED))
    norm = float(none.fresh_grad_norm)
    return judged(f"second-batch gradient vs a fresh model's: set_to_none {g(none.max_abs_diff_vs_fresh)}, zero fill "
                  f"{g(zero.max_abs_diff_vs_fresh)}, not cleared {g(kept.max_abs_diff_vs_fresh)} (norm {g(norm)})",
                  flag(none.max_abs_diff_vs_fresh == 0 and truthy(none.bitwise_equal), "set_to_none: bit-identical"),
                  flag(zero.max_abs_diff_vs_fresh == 0 and truthy(zero.bitwise_equal), "zero fill: bit-identical"),
                  _wrong(kept.max_abs_diff_vs_fresh, norm, "not cleared: off by at least 1 % of the gradient norm"))


# ---- L2: dividing by the microbatch count ---------------------------------------------------------------------------
def _scheme(t, name: str):
    return row(t["L2/schemes"], "scheme", name)


UNEQUAL, EQUAL = "means / microbatch count", "equal sizes, means / microbatch count"


@relation("L2/schemes", edge=Flip("L2/schemes", {"scheme": EQUAL}, "max_abs_diff_vs_full",
                                  holding=lambda t: _scheme(t, EQUAL).max_abs_diff_vs_full,
                                  failing=lambda t: 1e3 * EPS64 * max(_scheme(t, EQUAL).grad_norm, 1.0), log=True))
def divide_by_count_needs_equal_sizes(t):
    """Microbatch means summed and divided by their count give the full-batch gradient to rounding when the
    microbatches are equal, and miss it by at least 1 % of its norm on the unequal split."""
    unequal, equal = _scheme(t, UNEQUAL), _scheme(t, EQUAL)
    full = float(_scheme(t, "full batch").grad_norm)
    sizes = [int(s.split("/")[0]) for s in str(_scheme(t, "means weighted by size").loss_weights).split(" + ")]
    if len(set(sizes)) == 1:
        raise ValueError("lifetimes.split gives every microbatch as many examples: the unequal case is not measured")
    return judged(f"means / {unequal.microbatches} vs the full batch: split {'+'.join(map(str, sizes))} off by "
                  f"{g(unequal.max_abs_diff_vs_full)} (norm {g(full)}); equal microbatches of {equal.examples} "
                  f"examples off by {g(equal.max_abs_diff_vs_full)}",
                  _rounding(equal.max_abs_diff_vs_full, equal.grad_norm, "equal microbatches: means / count exact"),
                  _wrong(unequal.max_abs_diff_vs_full, full, "unequal microbatches: off by at least 1 % of the norm"))


# ---- L3: the global element count, the global token count -----------------------------------------------------------
def _ranks(t, name: str):
    return row(t["L3/ranks"], "reduction", name)


ELEMENTS, EXAMPLES = "sum of rank sums / loss elements", "sum of rank sums / examples"


def _single_norm(t) -> float:
    return float(_ranks(t, "rank means weighted by count").grad_norm)


@relation("L3/ranks", edge=Flip("L3/ranks", {"reduction": ELEMENTS}, "max_abs_diff_vs_single_process",
                                holding=lambda t: _ranks(t, ELEMENTS).max_abs_diff_vs_single_process,
                                failing=lambda t: 1e3 * EPS64 * max(_single_norm(t), 1.0), log=True))
def sum_then_global_count(t):
    """Rank loss sums added and divided by the global number of loss elements (examples x outputs) give the single
    process's gradient to rounding; divided by the example count instead they miss it by a whole factor."""
    right, wrong = _ranks(t, ELEMENTS), _ranks(t, EXAMPLES)
    norm = _single_norm(t)
    return judged(f"sum of rank sums / {right.divisor} loss elements off by {g(right.max_abs_diff_vs_single_process)}; "
                  f"/ {wrong.divisor} examples off by {g(wrong.max_abs_diff_vs_single_process)} (norm {g(norm)})",
                  flag(int(right.divisor) > int(wrong.divisor), "more loss elements than examples (several outputs)"),
                  _rounding(right.max_abs_diff_vs_single_process, norm, "/ loss elements vs the single process"),
                  _wrong(wrong.max_abs_diff_vs_single_process, norm, "/ examples: off by at least 1 % of the norm"))


def _token(t, name: str):
    return row(t["L3/tokens"], "reduction", name)


AVERAGED, GLOBAL = TOKENS


@relation("L3/tokens", edge=Flip("L3/tokens", {"reduction": AVERAGED}, "max_abs_diff_vs_single_process",
                                 holding=lambda t: _token(t, AVERAGED).max_abs_diff_vs_single_process,
                                 failing=lambda t: WRONG / 10 * _token(t, AVERAGED).single_process_grad_norm, log=True))
def token_mean_needs_global_count(t):
    """Ranks with as many sequences but different valid-token counts: the average of rank token means misses the
    global token mean by at least 1 % of its gradient norm; the summed numerators over the summed valid-token
    count give it to rounding."""
    avg, glob = _token(t, AVERAGED), _token(t, GLOBAL)
    valid = [int(v) for v in str(avg.valid_tokens).split("+")]
    if len(set(valid)) == 1:
        raise ValueError("lifetimes.tokens.valid gives every rank as many valid tokens: the case is not measured")
    norm = float(avg.single_process_grad_norm)
    return judged(f"valid tokens {avg.valid_tokens} ({avg.tokens_per_rank} positions per rank): average of rank "
                  f"token means off by {g(avg.max_abs_diff_vs_single_process)}; numerators / {glob.divisor:g} tokens "
                  f"off by {g(glob.max_abs_diff_vs_single_process)} (norm {g(norm)})",
                  _wrong(avg.max_abs_diff_vs_single_process, norm, "rank token means averaged: off by at least 1 %"),
                  _rounding(glob.max_abs_diff_vs_single_process, norm, "global numerator / global count vs one process"))


# ---- measurement-level controls (claims/bugs.py) --------------------------------------------------------------------
DATA = dict(in_features=3, out_features=2, seed=0)


@lru_cache(maxsize=None)
def _l1(bug: str | None) -> dict[str, pd.DataFrame]:
    from .clearing import clearing_table

    return {"L1/clearing": clearing_table(7, bug=bug, **DATA)}


@lru_cache(maxsize=None)
def _l2(bug: str | None) -> dict[str, pd.DataFrame]:
    from .accumulation import measure_l2

    return {"L2/schemes": measure_l2(7, [3, 4], nanogpt_steps=40, nanogpt_micro=2, equal_split=[4, 4], bug=bug,
                                     **DATA)["schemes"]}


@lru_cache(maxsize=None)
def _l3(bug: str | None) -> dict[str, pd.DataFrame]:
    from .accumulation import measure_l3

    out = measure_l3([3, 4], equal_split=[4, 4], wide_split=[2, 2, 3], bug=bug, **DATA)
    return {"L3/ranks": out["ranks"], "L3/wide": out["wide"], "L3/equal": out["equal"]}


@lru_cache(maxsize=None)
def _tokens(bug: str | None) -> dict[str, pd.DataFrame]:
    from .tokens import token_table

    return {"L3/tokens": token_table(2, 4, [8, 5], bug=bug, **DATA)}


BUGS = [
    Bug("zero_grad forgotten", "the zero-fill way never calls zero_grad", ("zero_fill_equivalent",), _l1),
    Bug("microbatch weight dropped", "each microbatch mean backpropagated with weight 1, not its share",
        ("weighted_microbatches_match",), _l2),
    Bug("= for += in the unweighted sum", "the unweighted sum keeps only the last microbatch's gradient",
        ("unweighted_roughly_doubles",), _l2),
    Bug("zero_grad inside the accumulation loop", "nanoGPT's loop clears the buffer before every microbatch",
        ("nanogpt_division_by_microbatches",), _l2),
    Bug("microbatch slices overlap", "each microbatch reaches one example into the next",
        ("weighted_microbatches_match", "divide_by_count_needs_equal_sizes"), _l2),
    Bug("rank weights dropped", "the count-weighted reduction adds plain rank means",
        ("rank_means_need_weights", "real_allreduce_equals_simulation"), _l3),
    Bug("sums divided by the example count", "rank sums divided by the examples, not the loss elements",
        ("sum_then_global_count", "rank_means_need_weights"), _l3),
    Bug("rank slices overlap", "each rank's slice reaches one example into the next rank's",
        ("equal_ranks_average_exact", "rank_means_need_weights"), _l3),
    Bug("padding counted in the global token count", "the global count includes the padding positions",
        ("token_mean_needs_global_count",), _tokens),
]
