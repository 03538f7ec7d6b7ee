"""L6 timing summary: plain vs checkpointed medians across process runs (no torch import)."""

from __future__ import annotations

import pandas as pd

from .. import timing
from ..tables import values_table

SLOW, FAST = "checkpointed", "plain"


def _values(head: dict, per_process: pd.DataFrame) -> pd.DataFrame:
    """L6's timing rows: the medians in ms (with their caveat) and the ratio's range and CI."""
    items = [("plain_median_min_ms", head[f"{FAST}_median_min_us"] / 1e3),
             ("plain_median_max_ms", head[f"{FAST}_median_max_us"] / 1e3),
             ("ckpt_median_min_ms", head[f"{SLOW}_median_min_us"] / 1e3),
             ("ckpt_median_max_ms", head[f"{SLOW}_median_max_us"] / 1e3)]
    items += [(k, head[k]) for k in ("ratio_min", "ratio_max", "ratio_ci_point", "ratio_ci_low", "ratio_ci_high",
                                     "noisy_processes", "retries")]
    note = (f"one torch thread here, {len(per_process)} process runs; absolute times depend on the CPU's matrix "
            "throughput, the ratio rows are the comparable ones")
    return values_table("L6", items, {q: note for q, _ in items[:4]})


def measure_summary(samples: list[pd.DataFrame], bootstrap: int, seed: int) -> dict:
    """Per-process medians (ms), the checkpointed/plain ratio range and its bootstrap CI."""
    return timing.summary_tables(samples, SLOW, FAST, bootstrap, seed, _values)
