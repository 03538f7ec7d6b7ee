"""How busy the machine was around a timed block, read through psutil (Linux, macOS, Windows).

Other processes' CPU time = (machine-wide busy CPU time, psutil.cpu_times()) minus (this
process's own user + system time, Process.cpu_times()), both as deltas over the block. Unlike a
scan of every process, this also counts processes that start and exit during the block
(Snakemake's short jobs, compilers), and it cannot miss a PID. The machine-wide figure counts
every CPU the kernel sees; in a container without lxcfs that is the host's. On Linux psutil
reads both from /proc/stat and /proc/self/stat, which tick at USER_HZ (10 ms) and are sampled
differently by the kernel, so on an idle machine the difference can sit a tick or two below
zero: it is clamped at 0. A figure psutil cannot give on this platform is None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable

import psutil

# psutil.cpu_times() fields that are not busy time. idle and iowait: the CPU did nothing.
# guest and guest_nice (Linux) are already inside user and nice; interrupt and dpc (Windows) are
# already inside system (kernel time). Every other field (user, nice, system, irq, softirq, steal)
# is busy; macOS has only user, nice, system and idle.
_NOT_BUSY = frozenset({"idle", "iowait", "guest", "guest_nice", "interrupt", "dpc"})
# What psutil raises where a figure is unavailable: AccessDenied (a psutil.Error), a missing
# function or field (AttributeError) on some platforms, or an OS error underneath.
_UNAVAILABLE = (psutil.Error, OSError, AttributeError, NotImplementedError, ValueError)


def busy_seconds(times) -> float:
    """Machine-wide busy CPU seconds (all CPUs) from a psutil.cpu_times() namedtuple."""
    return sum(v for k, v in times._asdict().items() if k not in _NOT_BUSY)


def own_seconds(times) -> float:
    """User + system seconds (every thread) from Process.cpu_times(), without the waited-for children."""
    return times.user + times.system


@dataclass(frozen=True)
class Snapshot:
    """Counters at one instant; None where psutil could not give them."""
    wall_s: float
    busy_s: float | None
    own_s: float | None
    loadavg: tuple[float, float, float] | None


def _read(get: Callable[[], object]):
    try:
        return get()
    except _UNAVAILABLE:
        return None


def snapshot(clock: Callable[[], float] = time.monotonic) -> Snapshot:
    """Read the machine's busy CPU time, this process's CPU time and the load average now."""
    return Snapshot(clock(), _read(lambda: busy_seconds(psutil.cpu_times())),
                    _read(lambda: own_seconds(psutil.Process().cpu_times())),
                    _read(lambda: tuple(float(x) for x in psutil.getloadavg())))


def between(before: Snapshot, after: Snapshot, cpus: int | None = None) -> dict:
    """Load figures over the block between two snapshots (seconds of CPU time, load averages)."""
    cpus = cpus or os.cpu_count() or 1
    wall = after.wall_s - before.wall_s
    out = {"wall_s": round(wall, 6), "cpus": cpus,
           "loadavg_1m_before": before.loadavg[0] if before.loadavg else None,
           "loadavg_1m_after": after.loadavg[0] if after.loadavg else None,
           "own_cpu_s": None, "other_cpu_s": None, "other_cpu_share": None}
    if None in (before.busy_s, after.busy_s, before.own_s, after.own_s):
        return out
    own = after.own_s - before.own_s
    other = max(0.0, after.busy_s - before.busy_s - own)
    # share of the CPU time the machine could have given everyone else while this block ran
    free = wall * cpus - own
    out |= {"own_cpu_s": round(own, 3), "other_cpu_s": round(other, 3),
            "other_cpu_share": round(min(1.0, other / free), 4) if free > 0 else None}
    return out
