"""A small, honest timing harness shared by every timing row.

Protocol: calibrate a loop count once (so every process times the same work), warm
up, then `rounds` rounds that each time both candidates back to back in a balanced
random order (seeded and logged). One process run = one Snakemake job. The summary
reports per-process medians, IQR/median (flagged at >= 10 %), the ratio range across
processes and a bootstrap CI of the paired log ratio. As in `timeit`, the cyclic garbage
collector is paused inside each timed loop and run between samples, so a collection
triggered by one candidate's garbage is not billed to whichever sample happens to be running.
"""

from __future__ import annotations

import gc
import logging
import math
import random
import time
from typing import Callable

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)
NOISY_IQR = 0.10


def _timed(fn: Callable[[], object], loops: int, clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds for `loops` calls, with the cyclic GC collected before and paused during."""
    gc.collect()
    gc.disable()
    try:
        t0 = clock()
        for _ in range(loops):
            fn()
        return clock() - t0
    finally:
        gc.enable()


def calibrate(fn: Callable[[], object], target_s: float, max_loops: int = 1 << 24,
              clock: Callable[[], float] = time.perf_counter) -> int:
    """Loop count whose run takes about `target_s`, from the per-call time of a doubling probe.
    `clock` is injectable so the arithmetic can be tested without a stopwatch."""
    fn()  # first call pays one-off costs (allocations, lazy init)
    loops = 1
    while loops < max_loops:
        dt = _timed(fn, loops, clock)
        if dt >= target_s / 8:
            return max(1, min(max_loops, round(loops * target_s / dt)))
        loops *= 2
    return max_loops


def balanced_orders(names: list[str], rounds: int, seed: int) -> list[list[str]]:
    """Per-round candidate order: each order used equally often (±1), shuffled."""
    a, b = names
    orders = [[a, b] if i % 2 == 0 else [b, a] for i in range(rounds)]
    random.Random(seed).shuffle(orders)
    return orders


def run_rounds(candidates: dict[str, Callable[[], object]], loops: dict[str, int], rounds: int,
               warmup: int, seed: int) -> pd.DataFrame:
    """Raw samples: one row per (round, candidate) with the per-call time in microseconds."""
    for name, fn in candidates.items():
        for _ in range(warmup):
            fn()
    rows = []
    for r, order in enumerate(balanced_orders(list(candidates), rounds, seed)):
        for pos, name in enumerate(order):
            n = loops[name]
            dt = _timed(candidates[name], n)
            rows.append({"round": r, "position": pos, "candidate": name, "loops": n,
                         "total_s": dt, "per_call_us": dt / n * 1e6})
        log.info("round %d/%d done", r + 1, rounds)
    return pd.DataFrame(rows)


def per_process(samples: pd.DataFrame, slow: str, fast: str) -> pd.DataFrame:
    """Median, IQR/median and the slow/fast median ratio for each process run."""
    out = []
    for proc, g in samples.groupby("process", sort=True):
        row = {"process": proc}
        for name in (slow, fast):
            t = g.loc[g.candidate == name, "per_call_us"]
            q1, med, q3 = np.percentile(t, [25, 50, 75])
            row |= {f"{name}_median_us": med, f"{name}_iqr_over_median": (q3 - q1) / med,
                    f"{name}_noisy": bool((q3 - q1) / med >= NOISY_IQR)}
        row["ratio"] = row[f"{slow}_median_us"] / row[f"{fast}_median_us"]
        out.append(row)
    return pd.DataFrame(out)


def paired_log_ratios(samples: pd.DataFrame, slow: str, fast: str) -> pd.DataFrame:
    """log(slow/fast) for each round, pairing the two candidates timed back to back."""
    wide = samples.pivot_table(index=["process", "round"], columns="candidate", values="per_call_us")
    return pd.DataFrame({"log_ratio": np.log(wide[slow] / wide[fast])}).reset_index()


def bootstrap_ratio_ci(pairs: pd.DataFrame, n_boot: int, seed: int, level: float = 0.95) -> tuple[float, float, float]:
    """Point estimate and CI of exp(median paired log ratio); resamples processes, then rounds."""
    rng = np.random.default_rng(seed)
    groups = [g.to_numpy() for _, g in pairs.groupby("process")["log_ratio"]]
    point = math.exp(float(np.median(np.concatenate(groups))))
    stats = np.empty(n_boot)
    for i in range(n_boot):
        picked = [groups[j] for j in rng.integers(0, len(groups), len(groups))]
        stats[i] = np.median(np.concatenate([rng.choice(g, len(g)) for g in picked]))
    lo, hi = np.quantile(stats, [(1 - level) / 2, 1 - (1 - level) / 2])
    return point, math.exp(lo), math.exp(hi)


def summarize(samples: list[pd.DataFrame], slow: str, fast: str, n_boot: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """Per-process table and the headline numbers: median ranges (µs), ratio range, CI, noisy runs."""
    allraw = pd.concat(samples, ignore_index=True)
    proc = per_process(allraw, slow, fast)
    point, lo, hi = bootstrap_ratio_ci(paired_log_ratios(allraw, slow, fast), n_boot, seed)
    head = {f"{name}_median_{end}_us": getattr(proc[f"{name}_median_us"], end)()
            for name in (slow, fast) for end in ("min", "max")}
    head |= {"ratio_min": proc.ratio.min(), "ratio_max": proc.ratio.max(), "ratio_ci_point": point,
             "ratio_ci_low": lo, "ratio_ci_high": hi,
             "noisy_processes": int(proc[[f"{slow}_noisy", f"{fast}_noisy"]].any(axis=1).sum()),
             "samples": allraw}
    return proc, head
