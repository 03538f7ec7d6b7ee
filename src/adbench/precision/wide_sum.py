"""16-bit storage, wider accumulation (the CPU half): torch.sum over a float16 or bfloat16 tensor
accumulates in a wider format and rounds once at the end, while a loop that stores its running sum in
the 16-bit format rounds after every addition and stops growing once the spacing of the format
reaches 2, where sum + 1 lies half-way and ties to the even neighbour, the sum itself."""

from __future__ import annotations

import pandas as pd
import torch

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def stepwise(count: int, dtype: torch.dtype) -> tuple[float, int | None]:
    """(running sum of `count` ones, each addition stored in `dtype`; the sum it stops at, None if it never does)."""
    acc, one = torch.zeros((), dtype=dtype), torch.ones((), dtype=dtype)
    stall = None
    for _ in range(count):
        new = acc + one  # rounded to `dtype`: the loop's accumulator is the 16-bit value itself
        if stall is None and new == acc:
            stall = int(acc.item())
        acc = new
    return acc.item(), stall


def reduction(count: int, dtype: torch.dtype) -> tuple[float, str]:
    """(torch.sum of `count` ones stored in `dtype`, the dtype torch returns that sum in)."""
    total = torch.ones(count, dtype=dtype).sum()
    return total.item(), str(total.dtype).removeprefix("torch.")


def wide_sum_table(count: int, dtypes: list[str]) -> pd.DataFrame:
    """Per dtype: torch.sum against the step-by-step loop, beside the exact count."""
    rows = []
    for name in dtypes:
        dt = DTYPES[name]
        total, stall = stepwise(count, dt)
        summed, summed_dtype = reduction(count, dt)
        rows.append({"dtype": name, "count": count, "torch_sum": summed, "torch_sum_dtype": summed_dtype,
                     "stepwise_sum": total, "stepwise_stalls_at": float("nan") if stall is None else stall,
                     "torch_sum_exact": summed == count, "stepwise_exact": total == count,
                     "gap_above_1": torch.finfo(dt).eps})
    return pd.DataFrame(rows)
