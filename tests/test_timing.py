"""The timing harness: balanced order, summaries, a CI that covers the truth, refusal to time wrong code."""

import numpy as np
import pandas as pd
import pytest

from adbench import timing
from adbench.scalar import speed


def test_balanced_orders_are_balanced_and_seeded():
    o = timing.balanced_orders(["a", "b"], 11, seed=1)
    firsts = [x[0] for x in o]
    assert abs(firsts.count("a") - firsts.count("b")) == 1
    assert o == timing.balanced_orders(["a", "b"], 11, seed=1) != timing.balanced_orders(["a", "b"], 11, seed=2)


def _synthetic(ratio, procs=3, rounds=11, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(procs):
        for r in range(rounds):
            base = 10 * np.exp(rng.normal(0, 0.03))
            rows += [{"process": p, "round": r, "candidate": "slow", "per_call_us": base * ratio * np.exp(rng.normal(0, 0.03))},
                     {"process": p, "round": r, "candidate": "fast", "per_call_us": base}]
    return pd.DataFrame(rows)


def test_summary_recovers_a_known_ratio():
    s = _synthetic(50.0)
    proc = timing.per_process(s, "slow", "fast")
    assert len(proc) == 3 and proc.ratio.between(45, 55).all()
    point, lo, hi = timing.bootstrap_ratio_ci(timing.paired_log_ratios(s, "slow", "fast"), 500, 0)
    assert lo <= 50.0 <= hi and lo < point < hi


def test_noisy_flag():
    s = _synthetic(2.0)
    s.loc[(s.candidate == "slow") & (s["round"] % 2 == 0), "per_call_us"] *= 1.5
    assert timing.per_process(s, "slow", "fast")["slow_noisy"].all()


def test_calibrate_reaches_target():
    # A simulated clock: each call costs exactly 1 ms, so the arithmetic is checked without a stopwatch.
    now = [0.0]

    def call():
        now[0] += 1e-3

    assert timing.calibrate(call, 0.008, clock=lambda: now[0]) == 8
    assert timing.calibrate(call, 0.5, clock=lambda: now[0]) == 500
    assert timing.calibrate(call, 10.0, max_loops=64, clock=lambda: now[0]) == 64


def test_candidates_agree_and_a_broken_one_is_refused():
    c = speed.make_candidates(50, 0)
    speed.check_agreement(c)
    c["torch"] = lambda: (0.0, 0.0)
    with pytest.raises(AssertionError):
        speed.check_agreement(c)
