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


def _rounds_from(spreads):
    """A stand-in for run_rounds: attempt k gives 'slow' samples whose IQR/median is spreads[k]."""
    calls = []

    def rounds_fn(candidates, loops, rounds, warmup, seed):
        k = len(calls)
        calls.append(seed)
        # five evenly spaced values around 100: IQR/median = 2*step/100 with step = spread*50
        step = spreads[k] * 50
        slow = [100 + step * i for i in (-2, -1, 0, 1, 2)]
        rows = [{"round": r, "position": 0, "candidate": "slow", "loops": 1, "total_s": v / 1e6, "per_call_us": v}
                for r, v in enumerate(slow)]
        rows += [{"round": r, "position": 1, "candidate": "fast", "loops": 1, "total_s": 1e-6, "per_call_us": 1.0}
                 for r in range(5)]
        return pd.DataFrame(rows)

    return rounds_fn, calls


def _busy(before, after):
    return {"wall_s": 1.0, "other_cpu_s": 0.7, "loadavg_1m_before": 2.0, "loadavg_1m_after": 3.0}


@pytest.mark.parametrize("spreads, retries, attempts, stayed", [
    ([0.02], 2, 1, False),              # quiet at once: no retry (negative control)
    ([0.5, 0.02, 0.9], 2, 2, False),    # noisy, then quiet: one retry, the quiet one reported
    ([0.5, 0.4, 0.3], 2, 3, True),      # noisy throughout: two retries, the last reported
    ([0.5], 0, 1, True),                # retries: 0 never re-measures
])
def test_noisy_process_is_measured_again_and_every_attempt_recorded(spreads, retries, attempts, stayed):
    rounds_fn, calls = _rounds_from(spreads)
    samples, meta = timing.timed_attempts({"slow": None, "fast": None}, {"slow": 1, "fast": 1}, 5, 0, seed=7,
                                          retries=retries, probe=lambda: None, load=_busy, rounds_fn=rounds_fn)
    assert len(calls) == attempts and meta["timing_retries"] == attempts - 1
    assert meta["timing_stayed_noisy"] is stayed
    assert [a["noisy"] for a in meta["timing_attempts"]] == [s >= timing.NOISY_IQR for s in spreads[:attempts]]
    for a, s in zip(meta["timing_attempts"], spreads):
        assert a["slow_iqr_over_median"] == pytest.approx(s) and a["other_cpu_s"] == 0.7
    assert sorted(samples.attempt.unique()) == list(range(attempts))
    assert set(samples[samples.reported].attempt) == {attempts - 1}


def test_summary_reports_only_the_reported_attempt():
    s = _synthetic(50.0, procs=2)
    retry = s[s.process == 0].assign(attempt=0, reported=False)
    retry.loc[retry.candidate == "slow", "per_call_us"] *= 10  # a wild first attempt of process 0
    s = pd.concat([retry, s.assign(attempt=np.where(s.process == 0, 1, 0), reported=True)], ignore_index=True)
    proc, head = timing.summarize([s], "slow", "fast", 200, 0)
    assert len(proc) == 3 and head["retries"] == 1
    assert 45 < head["ratio_min"] <= head["ratio_max"] < 55  # the 500x attempt is recorded, not reported
    assert proc.loc[~proc.reported.astype(bool), "ratio"].iloc[0] > 400
    assert set(head["samples"].attempt) == {0, 1} and len(head["samples"]) == len(s) - len(retry)


def test_unjudged_reason_only_when_a_process_stayed_noisy():
    assert timing.unjudged_reason(0, 3, 0) == ""
    reason = timing.unjudged_reason(2, 3, 4)
    assert "2 of 3" in reason and "4" in reason
    vals = pd.DataFrame({"quantity": ["tape_median_min_us", "ratio_min", "ratio_ci_low"], "value": [1, 2, 3]})
    out = timing.mark_unjudged(vals, reason)
    assert list(out.unjudged_reason) == ["", reason, reason]
    assert (timing.mark_unjudged(vals, "").unjudged_reason == "").all()


# --- a GPU's queued kernels: the timer waits for them before each clock reading ------------------------------
class _Recorder:
    """A stand-in clock and device that log every call, in order (the clock advances 1 s per reading)."""

    def __init__(self):
        self.calls, self.now = [], 0.0

    def clock(self):
        self.calls.append("clock")
        self.now += 1.0
        return self.now

    def synchronize(self, *device):
        self.calls.append(("sync", *map(str, device)))


def test_timed_waits_for_the_device_before_reading_the_clock_at_start_and_end():
    rec = _Recorder()
    sync = timing.device_sync("cuda:1", backend=rec)
    dt = timing._timed(lambda: rec.calls.append("work"), 2, rec.clock, sync)
    assert rec.calls == [("sync", "cuda:1"), "clock", "work", "work", ("sync", "cuda:1"), "clock"]
    assert dt == 1.0  # two clock readings, one second apart
    rec.calls.clear()  # negative control: on the CPU nothing but the clock and the work is called
    timing._timed(lambda: rec.calls.append("work"), 2, rec.clock, timing.device_sync("cpu", backend=rec))
    assert rec.calls == ["clock", "work", "work", "clock"]


def test_device_sync_picks_the_device_kind_from_a_string_or_a_torch_device():
    import torch

    rec = _Recorder()
    timing.device_sync(torch.device("cuda", 0), backend=rec)()
    timing.device_sync("mps", backend=rec)()
    assert rec.calls == [("sync", "cuda:0"), ("sync",)]
    assert timing.device_sync(torch.device("cpu")) is timing.no_sync is timing.device_sync("cpu")


def test_every_timed_sample_of_the_rounds_is_synchronised():
    rec = _Recorder()
    sync = timing.device_sync("cuda", backend=rec)
    cands = {"a": lambda: rec.calls.append("a"), "b": lambda: rec.calls.append("b")}
    samples, _ = timing.timed_attempts(cands, {"a": 1, "b": 1}, 3, 1, 0, 0, probe=lambda: None,
                                       load=lambda a, b: {}, sync=sync)
    assert len(samples) == 6
    timed = rec.calls[2:]  # after one warm-up call of each candidate
    assert rec.calls[:2] == ["a", "b"] and timed.count(("sync", "cuda")) == 12  # before and after each sample
    for i in range(0, len(timed), 3):  # sync, work, sync for every sample, in that order
        assert timed[i] == ("sync", "cuda") and timed[i + 1] in ("a", "b") and timed[i + 2] == ("sync", "cuda")


def test_the_gpt2_timed_step_waits_for_a_cuda_device_and_not_for_the_cpu(monkeypatch):
    import torch

    from adbench.gpt2 import saved

    log = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append(("sync", str(device))))

    class Net(torch.nn.Module):
        """A one-weight stand-in: the step runs forward, backward, zero_grad on it."""

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1, dtype=torch.float64))
            self.transformer = torch.nn.Module()
            self.transformer.h = torch.nn.ModuleList()

        def next_token_loss(self, ids):
            log.append("forward")
            out = self.w * 2
            out.register_hook(lambda g: log.append("backward"))
            return out.sum()

    class Ids:
        """Token ids that live on a (pretend) device."""

        def __init__(self, device):
            self.device = torch.device(device)

    net = Net()
    saved.step(net, Ids("cuda:0"), False)
    assert log == ["forward", "backward", ("sync", "cuda:0")] and net.w.grad is None
    log.clear()
    saved.step(net, Ids("cpu"), False)  # negative control: the CPU step calls no synchronize
    assert log == ["forward", "backward"]
