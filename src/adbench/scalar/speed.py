"""S9: the Python tape against torch on a length-n dot product followed by tanh."""

from __future__ import annotations

import random

import pandas as pd

from .. import timing
from ..tables import values_table
from .tape import Value

SLOW, FAST = "tape", "torch"


def make_candidates(length: int, seed: int):
    """Two closures computing tanh(w·x) forward + backward; also their value and dL/dw[0]."""
    import torch  # here, so the summary job skips torch's import

    rng = random.Random(seed)
    w0 = [rng.uniform(-1, 1) / length ** 0.5 for _ in range(length)]
    x0 = [rng.uniform(-1, 1) for _ in range(length)]
    w_t = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    x_t = torch.tensor(x0, dtype=torch.float64)

    def tape_step():
        w = [Value(v) for v in w0]
        out = sum((wi * xi for wi, xi in zip(w, x0)), Value(0.0)).tanh()
        out.backward()
        return out.data, w[0].grad

    def torch_step():
        w_t.grad = None
        out = torch.tanh(w_t @ x_t)
        out.backward()
        return out.item(), w_t.grad[0].item()

    return {SLOW: tape_step, FAST: torch_step}


def check_agreement(cands) -> dict:
    """Both candidates must compute the same value and gradient before they are timed."""
    (v1, g1), (v2, g2) = cands[SLOW](), cands[FAST]()
    if abs(v1 - v2) > 1e-12 or abs(g1 - g2) > 1e-12:
        raise AssertionError(f"tape ({v1}, {g1}) and torch ({v2}, {g2}) disagree; refusing to time")
    return {"value": v1, "grad_w0": g1, "abs_diff_value": abs(v1 - v2), "abs_diff_grad": abs(g1 - g2)}


def measure_calibration(dot_length: int, target_ms: float, seed: int) -> dict:
    """Loop counts per candidate, fixed once and reused by every process run."""
    cands = make_candidates(dot_length, seed)
    return {"calibration": timing.calibration_table(cands, target_ms, check_agreement(cands))}


def measure_run(dot_length: int, rounds: int, warmup: int, seed: int, process: int,
                calibration: pd.DataFrame, retries: int = 0) -> dict:
    """One process run of the two candidates (adbench.timing.process_run), after they agree again."""
    cands = make_candidates(dot_length, seed)
    check_agreement(cands)
    return timing.process_run(cands, calibration, rounds, warmup, seed, process, retries)


def measure_summary(samples: list[pd.DataFrame], bootstrap: int, seed: int) -> dict:
    """Per-process medians, ratio range and the bootstrap CI of the paired log ratio."""
    keys = ["tape_median_min_us", "tape_median_max_us", "torch_median_min_us", "torch_median_max_us",
            "ratio_min", "ratio_max", "ratio_ci_point", "ratio_ci_low", "ratio_ci_high", "noisy_processes", "retries"]
    return timing.summary_tables(samples, SLOW, FAST, bootstrap, seed,
                                 lambda head, _: values_table("S9", [(k, head[k]) for k in keys]))
