"""A small, honest timing harness shared by every timing row.

Protocol: calibrate a loop count once (so every process times the same work), warm
up, then `rounds` rounds that each time both candidates back to back in a balanced
random order (seeded and logged). One process run = one Snakemake job. The summary
reports per-process medians, IQR/median (flagged at >= 10 %), the ratio range across
processes and a bootstrap CI of the paired log ratio. As in `timeit`, the cyclic garbage
collector is paused inside each timed loop and run between samples, so a collection
triggered by one candidate's garbage is not billed to whichever sample happens to be running.
A process whose rounds come out noisy is re-measured up to `retries` times; every attempt is
kept (column `attempt`) with the CPU time other processes took meanwhile (adbench.machine_load),
and the one reported (`reported`) is the first quiet attempt, else the last.
"""

from __future__ import annotations

import functools
import gc
import logging
import math
import random
import time
from typing import Callable

import numpy as np
import pandas as pd

from . import machine_load

log = logging.getLogger(__name__)
NOISY_IQR = 0.10


def no_sync() -> None:
    """A CPU runs each call to its end before returning: nothing to wait for."""


def device_sync(device: object, backend: object = None) -> Callable[[], None]:
    """The call that waits for `device`'s queued kernels (torch.cuda.synchronize on CUDA, torch.mps's on MPS), else
    `no_sync`. `backend`: a stand-in for torch.cuda / torch.mps, so a test can record the calls without a GPU."""
    kind = str(getattr(device, "type", device)).split(":")[0]
    if kind not in ("cuda", "mps"):
        return no_sync
    if backend is None:
        import torch  # only a device run gets here; the CPU timings never import torch for this
        backend = getattr(torch, kind)
    if kind == "mps":
        return backend.synchronize  # one device, no argument
    return functools.partial(backend.synchronize, device)


def _timed(fn: Callable[[], object], loops: int, clock: Callable[[], float] = time.perf_counter,
           sync: Callable[[], None] = no_sync) -> float:
    """Seconds for `loops` calls, with the cyclic GC collected before and paused during.

    `sync` runs before each clock reading: a GPU call returns once its kernels are queued, so without waiting
    for them the clock would time the launches, and the previous sample's tail would be billed to this one."""
    gc.collect()
    gc.disable()
    try:
        sync()
        t0 = clock()
        for _ in range(loops):
            fn()
        sync()
        return clock() - t0
    finally:
        gc.enable()


def calibrate(fn: Callable[[], object], target_s: float, max_loops: int = 1 << 24,
              clock: Callable[[], float] = time.perf_counter, sync: Callable[[], None] = no_sync) -> int:
    """Loop count whose run takes about `target_s`, from the per-call time of a doubling probe.
    `clock` is injectable so the arithmetic can be tested without a stopwatch; `sync`: device_sync's."""
    fn()  # first call pays one-off costs (allocations, lazy init)
    loops = 1
    while loops < max_loops:
        dt = _timed(fn, loops, clock, sync)
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
               warmup: int, seed: int, sync: Callable[[], None] = no_sync) -> pd.DataFrame:
    """Raw samples: one row per (round, candidate) with the per-call time in microseconds (`sync`: device_sync's)."""
    for name, fn in candidates.items():
        for _ in range(warmup):
            fn()
    rows = []
    for r, order in enumerate(balanced_orders(list(candidates), rounds, seed)):
        for pos, name in enumerate(order):
            n = loops[name]
            dt = _timed(candidates[name], n, sync=sync)
            rows.append({"round": r, "position": pos, "candidate": name, "loops": n,
                         "total_s": dt, "per_call_us": dt / n * 1e6})
        log.info("round %d/%d done", r + 1, rounds)
    return pd.DataFrame(rows)


def iqr_over_median(t) -> float:
    """Spread of a sample: interquartile range over median."""
    q1, med, q3 = np.percentile(t, [25, 50, 75])
    return float((q3 - q1) / med)


def noise_figures(samples: pd.DataFrame) -> dict[str, float]:
    """IQR/median of the per-call times of each candidate in one attempt's samples."""
    return {name: iqr_over_median(g.per_call_us) for name, g in samples.groupby("candidate", sort=False)}


def timed_attempts(candidates: dict[str, Callable[[], object]], loops: dict[str, int], rounds: int, warmup: int,
                   seed: int, retries: int, probe: Callable[[], object] = machine_load.snapshot,
                   load: Callable[[object, object], dict] = machine_load.between,
                   rounds_fn: Callable[..., pd.DataFrame] | None = None,
                   sync: Callable[[], None] = no_sync) -> tuple[pd.DataFrame, dict]:
    """Rounds, measured again while either candidate is noisy (at most `retries` more times).

    Returns every attempt's samples (columns attempt, reported, other_cpu_s added) and the
    meta.json record: each attempt's noise figures and machine load, retries, stayed_noisy.
    `sync`: device_sync(device) when the candidates run on a GPU (run_rounds waits for it around each sample)."""
    rounds_fn = rounds_fn or functools.partial(run_rounds, sync=sync)
    frames, attempts = [], []
    for attempt in range(retries + 1):
        before = probe()
        s = rounds_fn(candidates, loops, rounds, warmup, seed=seed)
        busy = load(before, probe())
        spread = noise_figures(s)
        noisy = any(v >= NOISY_IQR for v in spread.values())
        attempts.append({"attempt": attempt, **{f"{n}_iqr_over_median": round(v, 6) for n, v in spread.items()},
                         "noisy": noisy, **busy})
        frames.append(s.assign(attempt=attempt, other_cpu_s=busy.get("other_cpu_s")))
        log.info("attempt %d: IQR/median %s, other processes %s CPU-s%s", attempt,
                 {n: round(v, 3) for n, v in spread.items()}, busy.get("other_cpu_s"),
                 "; noisy, measuring again" if noisy and attempt < retries else "")
        if not noisy:
            break
    samples = pd.concat(frames, ignore_index=True)
    samples["reported"] = samples.attempt == attempts[-1]["attempt"]
    meta = {"timing_retries": len(attempts) - 1, "timing_stayed_noisy": attempts[-1]["noisy"],
            "timing_attempts": attempts}
    return samples, meta


def reported(samples: pd.DataFrame) -> pd.DataFrame:
    """The samples of each process's reported attempt (all of them for files without attempts)."""
    return samples[samples["reported"].astype(bool)] if "reported" in samples else samples


def per_process(samples: pd.DataFrame, slow: str, fast: str) -> pd.DataFrame:
    """Median, IQR/median and the slow/fast median ratio for each process run (and attempt)."""
    keys = [k for k in ("process", "attempt") if k in samples]
    out = []
    for key, g in samples.groupby(keys, sort=True):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        for name in (slow, fast):
            t = g.loc[g.candidate == name, "per_call_us"]
            spread = iqr_over_median(t)
            row |= {f"{name}_median_us": float(np.median(t)), f"{name}_iqr_over_median": spread,
                    f"{name}_noisy": bool(spread >= NOISY_IQR)}
        row["ratio"] = row[f"{slow}_median_us"] / row[f"{fast}_median_us"]
        for col in ("other_cpu_s", "reported"):
            if col in g:
                row[col] = g[col].iloc[0]
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
    """Per-process table (every attempt) and the headline numbers from the reported attempts:
    median ranges (µs), ratio range, CI, noisy runs, retries."""
    allraw = pd.concat(samples, ignore_index=True)
    proc = per_process(allraw, slow, fast)
    raw = reported(allraw).reset_index(drop=True)
    rep = proc[proc["reported"].astype(bool)] if "reported" in proc else proc
    point, lo, hi = bootstrap_ratio_ci(paired_log_ratios(raw, slow, fast), n_boot, seed)
    head = {f"{name}_median_{end}_us": getattr(rep[f"{name}_median_us"], end)()
            for name in (slow, fast) for end in ("min", "max")}
    head |= {"ratio_min": rep.ratio.min(), "ratio_max": rep.ratio.max(), "ratio_ci_point": point,
             "ratio_ci_low": lo, "ratio_ci_high": hi,
             "noisy_processes": int(rep[[f"{slow}_noisy", f"{fast}_noisy"]].any(axis=1).sum()),
             "retries": int(len(proc) - len(rep)), "samples": raw.drop(columns=["reported"], errors="ignore")}
    return proc, head


def unjudged_reason(noisy_processes: int, processes: int, retries: int) -> str:
    """values.csv `unjudged_reason` for a timed ratio: empty unless some process stayed noisy."""
    if noisy_processes == 0:
        return ""
    return (f"{noisy_processes} of {processes} process runs stayed noisy (IQR/median >= {NOISY_IQR:.0%}) "
            f"after {retries} re-measurement(s) in all: the machine was busy, the ratio is not judged")


def mark_unjudged(values: pd.DataFrame, reason: str, prefix: str = "ratio") -> pd.DataFrame:
    """values.csv with `unjudged_reason` set on the rows whose quantity starts with `prefix`."""
    out = values.copy()
    out["unjudged_reason"] = np.where(out.quantity.str.startswith(prefix), reason, "")
    return out


# ---- the timing chain's steps, written once: a family supplies its candidates and its summary rows ---------------
def calibration_table(candidates: dict[str, Callable[[], object]], target_ms: float, check: dict | None = None
                      ) -> pd.DataFrame:
    """The calibrate step: loop counts per candidate, fixed once for every process run (`check`: columns of the
    agreement check the candidates passed, repeated on each row)."""
    loops = {n: calibrate(fn, target_ms / 1e3) for n, fn in candidates.items()}
    return pd.DataFrame([{"candidate": n, "loops": k, **(check or {})} for n, k in loops.items()])


def process_run(candidates: dict[str, Callable[[], object]], calibration: pd.DataFrame, rounds: int, warmup: int,
                seed: int, process: int, retries: int = 0) -> dict:
    """The run step: one process run (warm-up, balanced randomized rounds, again while noisy), raw samples out."""
    loops = dict(zip(calibration.candidate, calibration.loops.astype(int)))
    samples, load = timed_attempts(candidates, loops, rounds, warmup, seed * 1000 + process, retries)
    samples.insert(0, "process", process)
    samples["order_seed"] = seed * 1000 + process
    import torch  # the candidates imported it already; the summary step never does

    return {"samples": samples, "_meta": {"torch_threads_at_run": torch.get_num_threads(), **load}}


def summary_tables(samples: list[pd.DataFrame], slow: str, fast: str, bootstrap: int, seed: int,
                   values: Callable[[dict, pd.DataFrame], pd.DataFrame]) -> dict:
    """The summary step: per-process medians, the ratio range and its bootstrap CI; `values(head, per_process)`
    builds the family's values.csv from the headline numbers, its ratio rows withheld while a process stayed noisy."""
    proc, head = summarize(samples, slow, fast, bootstrap, seed)
    reason = unjudged_reason(head["noisy_processes"], len(samples), head["retries"])
    return {"values": mark_unjudged(values(head, proc), reason), "per_process": proc, "samples": head["samples"]}
