"""16-bit storage, wider accumulation (the CPU half).

Two probes per dtype. Ones: a loop that stores its running sum in the 16-bit format rounds after every addition and
stops growing once the format's spacing reaches 2 (sum + 1 lies half-way and ties to the even neighbour, the sum
itself). Mixed values 1, 1 + gap, 1 + 2 gaps, repeated (gap: the format's gap above 1; every value exact in the
format): their partial sums round in 16 bits, so a pairwise 16-bit sum and the 16-bit loop miss the total, and only an operator that accumulates wider and rounds once lands on the float64 sum
(exact here: multiples of the gap, far below 2^53 of them) rounded once to the dtype. A sum of ones cannot tell
these apart: a 16-bit pairwise sum of 4,096 ones is exact too.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
# the mixed values cycle through 1 + 0, 1, 2 gaps: the smallest cycle whose 16-bit pairwise sum misses the total
# rounded once, in fp16 and in bf16 (two or four equal values sum exactly pairwise; a tie rounds alike both ways)
CYCLE = 3
WIDE_SUM_BUGS = ("summed-as-float32", "pairwise-accumulates-float32")


def stepwise(values: torch.Tensor) -> tuple[float, float | None]:
    """(running sum of `values`, each addition stored in their dtype; the first sum an addition left unchanged)."""
    acc = torch.zeros((), dtype=values.dtype)
    stall = None
    for v in values:
        new = acc + v  # rounded to the dtype: the loop's accumulator is the 16-bit value itself
        if stall is None and new == acc:
            stall = acc.item()
        acc = new
    return acc.item(), stall


def pairwise(values: torch.Tensor, bug: str | None = None) -> float:
    """A pairwise (tree) sum whose every partial sum is stored in the values' dtype: 16-bit accumulation."""
    level = values.float() if bug == "pairwise-accumulates-float32" else values  # bug: the partials kept wide
    while level.numel() > 1:
        if level.numel() % 2:
            level = torch.cat([level, level.new_zeros(1)])
        level = level[0::2] + level[1::2]  # one rounding to the dtype per addition
    return level.item()


def mixed_values(count: int, dtype: torch.dtype) -> torch.Tensor:
    """`count` values 1 + (i mod CYCLE) gaps above 1, each exact in `dtype`: their partial sums need rounding."""
    i = torch.arange(count, dtype=torch.float64)
    return (1 + torch.remainder(i, CYCLE) * torch.finfo(dtype).eps).to(dtype)


def reduction(values: torch.Tensor, bug: str | None = None) -> tuple[float, str]:
    """(torch.sum of `values`, the dtype torch returns that sum in)."""
    total = values.float().sum() if bug == "summed-as-float32" else values.sum()  # bug: a cast before the sum
    return total.item(), str(total.dtype).removeprefix("torch.")


def gap_at(x: float, dtype: torch.dtype) -> float:
    """The spacing of `dtype` just above |x|."""
    a = torch.tensor(abs(x), dtype=dtype)
    return (torch.nextafter(a, torch.tensor(math.inf, dtype=dtype)) - a).double().item()


def mixed_row(count: int, dt: torch.dtype, bug: str | None = None) -> dict:
    """The mixed-values probe of one dtype: torch.sum, 16-bit pairwise and loop sums, the float64 sum rounded once."""
    x = mixed_values(count, dt)
    exact = x.double().sum().item()  # exact: multiples of the dtype's gap at 1, far below float64's 53 bits
    once = torch.tensor(exact, dtype=torch.float64).to(dt).double().item()
    summed, summed_dtype = reduction(x, bug)
    loop, _ = stepwise(x)
    return {"mixed_exact": exact, "mixed_rounded_once": once, "mixed_torch_sum": summed,
            "mixed_torch_sum_dtype": summed_dtype, "mixed_pairwise16": pairwise(x, bug), "mixed_stepwise16": loop,
            "mixed_gap_at_sum": gap_at(once, dt)}


def wide_sum_table(count: int, dtypes: list[str], bug: str | None = None) -> pd.DataFrame:
    """Per dtype: torch.sum of ones against the step-by-step loop, and the mixed-values probe."""
    if bug not in (None, *WIDE_SUM_BUGS):
        raise ValueError(f"bug {bug!r} not in {WIDE_SUM_BUGS}")
    rows = []
    for name in dtypes:
        dt = DTYPES[name]
        ones = torch.ones(count, dtype=dt)
        total, stall = stepwise(ones)
        summed, summed_dtype = reduction(ones)
        rows.append({"dtype": name, "count": count, "torch_sum": summed, "torch_sum_dtype": summed_dtype,
                     "stepwise_sum": total, "stepwise_stalls_at": math.nan if stall is None else stall,
                     "torch_sum_exact": summed == count, "stepwise_exact": total == count,
                     "gap_above_1": torch.finfo(dt).eps, **mixed_row(count, dt, bug)})
    return pd.DataFrame(rows)
