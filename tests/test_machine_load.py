"""adbench.machine_load: psutil's figures on fixed tuples, the other-process arithmetic, live runs with and
without /proc, and negative controls."""

import os
import subprocess
import sys
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from adbench import machine_load as ml
from noproc import block_proc

PSUTIL = os.path.dirname(psutil.__file__)
LINUX = sys.platform.startswith("linux")

LinuxTimes = namedtuple("scputimes", "user nice system idle iowait irq softirq steal guest guest_nice")
MacTimes = namedtuple("scputimes", "user nice system idle")
WinTimes = namedtuple("scputimes", "user system idle interrupt dpc")
ProcTimes = namedtuple("pcputimes", "user system children_user children_system")


@pytest.fixture(params=["proc", "no-proc"])
def view(request, monkeypatch):
    """The live tests run twice: as the machine is, and with /proc hidden from everything but psutil."""
    return block_proc(monkeypatch, allow=(PSUTIL,)) if request.param == "no-proc" else []


def test_busy_seconds_leave_out_idle_iowait_and_guest():
    # user+nice+system+irq+softirq+steal; idle, iowait and guest (already inside user) excluded
    linux = LinuxTimes(1.00, 0.05, 0.40, 9.00, 0.07, 0.03, 0.02, 0.01, 0.20, 0.0)
    assert ml.busy_seconds(linux) == pytest.approx(1.51)
    assert ml.busy_seconds(MacTimes(1.0, 0.05, 0.4, 9.0)) == pytest.approx(1.45)
    assert ml.busy_seconds(WinTimes(1.0, 0.4, 9.0, 0.02, 0.01)) == pytest.approx(1.4)  # irq/dpc inside system


def test_own_seconds_are_user_plus_system_not_the_children():
    assert ml.own_seconds(ProcTimes(0.37, 0.11, 0.02, 0.03)) == pytest.approx(0.48)


def test_between_subtracts_own_time_and_clamps_tick_jitter():
    before = ml.Snapshot(10.0, busy_s=10.0, own_s=1.0, loadavg=(1.0, 1.0, 1.0))
    after = ml.Snapshot(12.0, busy_s=10.0 + 3.5, own_s=1.0 + 2.0, loadavg=(2.5, 1.2, 1.0))
    out = ml.between(before, after, cpus=2)
    # 3.5 busy CPU-s in 2 s, 2.0 of them ours: others took 1.5 of the 2*2-2 = 2 CPU-s left
    assert out["own_cpu_s"] == 2.0 and out["other_cpu_s"] == 1.5 and out["other_cpu_share"] == 0.75
    assert (out["loadavg_1m_before"], out["loadavg_1m_after"]) == (1.0, 2.5)
    jitter = ml.Snapshot(12.0, busy_s=10.0 + 1.98, own_s=1.0 + 2.0, loadavg=None)
    assert ml.between(before, jitter, cpus=2)["other_cpu_s"] == 0.0


def test_between_without_figures_gives_none():
    blind = ml.Snapshot(0.0, None, None, None)
    out = ml.between(blind, ml.Snapshot(1.0, None, None, None), cpus=2)
    assert out["other_cpu_s"] is None and out["loadavg_1m_before"] is None and out["wall_s"] == 1.0


def test_snapshot_where_psutil_cannot_read_is_blind(monkeypatch):
    def denied(*_):
        raise psutil.AccessDenied()
    monkeypatch.setattr(psutil, "cpu_times", denied)
    monkeypatch.setattr(psutil, "Process", denied)
    monkeypatch.delattr(psutil, "getloadavg")  # a platform without it
    s = ml.snapshot()
    assert (s.busy_s, s.own_s, s.loadavg) == (None, None, None)


class FakeMacPsutil:
    """psutil as on macOS: its figures come from sysctl/libproc, not from /proc; each call moves time on."""
    Error = psutil.Error

    def __init__(self):
        self.calls = 0

    def cpu_times(self):
        self.calls += 1
        return MacTimes(user=10.0 * self.calls, nice=0.0, system=2.0 * self.calls, idle=100.0 * self.calls)

    def Process(self):  # noqa: N802 - psutil's name
        return SimpleNamespace(cpu_times=lambda: ProcTimes(3.0 * self.calls, 1.0 * self.calls, 50.0, 50.0))

    def getloadavg(self):
        return (0.5 * self.calls, 0.25, 0.125)


def test_no_proc_at_all_macos_shaped_psutil_gives_every_figure(monkeypatch):
    blocked = block_proc(monkeypatch)  # nobody, psutil included, may read /proc
    monkeypatch.setattr(ml, "psutil", FakeMacPsutil())
    out = ml.between(ml.snapshot(clock=lambda: 0.0), ml.snapshot(clock=lambda: 10.0), cpus=4)
    # busy +12 CPU-s, own +4 (not the 100 s of children): others 8 of the 4*10-4 = 36 left
    assert (out["loadavg_1m_before"], out["loadavg_1m_after"]) == (0.5, 1.0)
    assert (out["own_cpu_s"], out["other_cpu_s"], out["other_cpu_share"]) == (4.0, 8.0, round(8 / 36, 4))
    assert blocked == []
    with pytest.raises(FileNotFoundError):  # negative control: the fake machine really has no /proc
        Path("/proc/self/stat").read_text()
    assert blocked and "/proc/self/stat" in blocked[0]


@pytest.mark.skipif(not LINUX, reason="on Linux psutil itself reads /proc")
def test_negative_control_psutil_denied_proc_leaves_the_figures_none(monkeypatch):
    # The no-proc view below only lets psutil's own files through; deny psutil as well and the
    # machine-wide and own CPU times go blind, so the live test could fail if the view leaked.
    blocked = block_proc(monkeypatch)
    s = ml.snapshot()
    assert (s.busy_s, s.own_s) == (None, None)
    assert any(f"{os.sep}psutil{os.sep}" in b for b in blocked), blocked


def test_live_busy_child_is_counted_as_other_and_own_work_is_not(view):
    # Negative control first: our own spinning must not show up as other processes' time.
    before = ml.snapshot()
    assert None not in (before.busy_s, before.own_s, before.loadavg), before
    x = 0
    while ml.snapshot().own_s - before.own_s < 0.2:  # ~0.2 CPU-s of our own work
        x += 1
    own_only = ml.between(before, ml.snapshot())
    assert own_only["own_cpu_s"] >= 0.2
    # A child burning CPU for a while is someone else's time (it is not our user/system time).
    before = ml.snapshot()
    subprocess.run([sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.5: pass"],
                   check=True, timeout=60)
    after = ml.snapshot()
    with_child = ml.between(before, after)
    assert with_child["other_cpu_s"] >= 0.3, with_child
    assert with_child["own_cpu_s"] < 0.3, with_child
    # the load average is read live and passed on as the 1-minute figures
    assert None not in (before.loadavg, after.loadavg), (before, after)
    assert (with_child["loadavg_1m_before"], with_child["loadavg_1m_after"]) == (before.loadavg[0], after.loadavg[0])
    assert view == []  # with /proc hidden, adbench never even asked for it
