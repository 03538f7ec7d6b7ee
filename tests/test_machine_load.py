"""adbench.machine_load: /proc parsing on fixed texts, the other-process arithmetic, a live negative control."""

import os
import subprocess
import sys

import pytest

from adbench import machine_load as ml

STAT = """cpu  100 5 40 900 7 3 2 1 20 0
cpu0 50 2 20 450 3 1 1 0 10 0
cpu1 50 3 20 450 4 2 1 1 10 0
intr 12345
"""
# comm with a space and a ')' inside: fields must be counted after the last ')'
SELF_STAT = "4242 (py thon) x) R 1 4242 4242 0 -1 4194304 100 0 0 0 37 11 2 3 20 0 1 0 500 0 0"


def test_parse_loadavg():
    assert ml.parse_loadavg("0.52 1.07 2.00 3/456 7890\n") == (0.52, 1.07, 2.0)


def test_busy_ticks_leave_out_idle_iowait_and_guest():
    # user+nice+system+irq+softirq+steal = 100+5+40+3+2+1; idle 900, iowait 7 and guest 20 (inside user) excluded
    assert ml.parse_busy_ticks(STAT) == 151


def test_busy_ticks_needs_the_aggregate_line():
    with pytest.raises(ValueError, match="cpu"):
        ml.parse_busy_ticks("cpu0 1 2 3 4\n")


def test_own_ticks_are_utime_plus_stime_despite_odd_comm():
    assert ml.parse_own_ticks(SELF_STAT) == 37 + 11  # not the children's 2 + 3


def test_between_subtracts_own_time_and_clamps_tick_jitter():
    before = ml.Snapshot(10.0, busy_ticks=1000, own_ticks=100, loadavg=(1.0, 1.0, 1.0))
    after = ml.Snapshot(12.0, busy_ticks=1000 + 350, own_ticks=100 + 200, loadavg=(2.5, 1.2, 1.0))
    out = ml.between(before, after, hz=100, cpus=2)
    # 3.5 busy CPU-s in 2 s, 2.0 of them ours: others took 1.5 of the 2*2-2 = 2 CPU-s left
    assert out["own_cpu_s"] == 2.0 and out["other_cpu_s"] == 1.5 and out["other_cpu_share"] == 0.75
    assert (out["loadavg_1m_before"], out["loadavg_1m_after"]) == (1.0, 2.5)
    jitter = ml.Snapshot(12.0, busy_ticks=1000 + 198, own_ticks=100 + 200, loadavg=None)
    assert ml.between(before, jitter, hz=100, cpus=2)["other_cpu_s"] == 0.0


def test_between_without_proc_gives_none():
    blind = ml.Snapshot(0.0, None, None, None)
    out = ml.between(blind, ml.Snapshot(1.0, None, None, None), hz=100, cpus=2)
    assert out["other_cpu_s"] is None and out["loadavg_1m_before"] is None and out["wall_s"] == 1.0


def test_snapshot_of_a_missing_proc_is_blind(tmp_path):
    s = ml.snapshot(proc=str(tmp_path))
    assert (s.busy_ticks, s.own_ticks, s.loadavg) == (None, None, None)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux /proc")
def test_live_busy_child_is_counted_as_other_and_own_work_is_not():
    # Negative control first: our own spinning must not show up as other processes' time.
    before = ml.snapshot()
    x = 0
    while ml.snapshot().own_ticks - before.own_ticks < 20:  # ~0.2 CPU-s of our own work
        x += 1
    own_only = ml.between(before, ml.snapshot())
    assert own_only["own_cpu_s"] >= 0.2
    # A child burning CPU for a while is someone else's time (it is not our utime/stime).
    before = ml.snapshot()
    subprocess.run([sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.5: pass"],
                   check=True, timeout=60)
    with_child = ml.between(before, ml.snapshot())
    assert with_child["other_cpu_s"] >= 0.3, with_child
    assert with_child["own_cpu_s"] < 0.3, with_child
