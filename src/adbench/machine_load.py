"""How busy the machine was around a timed block, read from /proc (Linux).

Other processes' CPU time = (machine-wide busy CPU time from /proc/stat) minus (this process's
own utime + stime from /proc/self/stat), both as deltas over the block. Unlike a scan of
/proc/<pid>/stat, this also counts processes that start and exit during the block (Snakemake's
short jobs, compilers), and it cannot miss a PID. /proc/stat counts every CPU the kernel sees;
in a container without lxcfs that is the host's. Both counters tick at USER_HZ (10 ms), and
the kernel samples them differently, so on an idle machine the difference can sit a tick or
two below zero: it is clamped at 0. Where /proc is missing, every figure is None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# /proc/stat "cpu" fields: user nice system idle iowait irq softirq steal guest guest_nice.
# Busy = all but idle and iowait; guest and guest_nice are already inside user and nice.
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def parse_loadavg(text: str) -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages from the text of /proc/loadavg."""
    one, five, fifteen = (float(x) for x in text.split()[:3])
    return one, five, fifteen


def parse_busy_ticks(text: str) -> int:
    """Machine-wide busy CPU ticks (all CPUs) from the aggregate 'cpu' line of /proc/stat."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            values = [int(v) for v in fields[1:]]
            return sum(values[i] for i in _BUSY_FIELDS if i < len(values))
    raise ValueError("/proc/stat has no aggregate 'cpu' line")


def parse_own_ticks(text: str) -> int:
    """utime + stime (ticks, every thread of the process) from the text of /proc/<pid>/stat."""
    # comm (field 2) may hold spaces and ')': fields are counted after its last ')'.
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[11]) + int(rest[12])  # fields 14 and 15 of proc(5), counted from 'state' = 3


@dataclass(frozen=True)
class Snapshot:
    """Counters at one instant; None where /proc could not be read."""
    wall_s: float
    busy_ticks: int | None
    own_ticks: int | None
    loadavg: tuple[float, float, float] | None


def _read(path: str, parse: Callable[[str], object]):
    try:
        return parse(Path(path).read_text())
    except (OSError, ValueError, IndexError):
        return None


def snapshot(proc: str = "/proc", clock: Callable[[], float] = time.monotonic) -> Snapshot:
    """Read the machine's busy ticks, this process's ticks and the load average now."""
    return Snapshot(clock(), _read(f"{proc}/stat", parse_busy_ticks),
                    _read(f"{proc}/self/stat", parse_own_ticks), _read(f"{proc}/loadavg", parse_loadavg))


def between(before: Snapshot, after: Snapshot, hz: int | None = None, cpus: int | None = None) -> dict:
    """Load figures over the block between two snapshots (seconds of CPU time, load averages)."""
    hz = hz or os.sysconf("SC_CLK_TCK")
    cpus = cpus or os.cpu_count() or 1
    wall = after.wall_s - before.wall_s
    out = {"wall_s": round(wall, 6), "cpus": cpus,
           "loadavg_1m_before": before.loadavg[0] if before.loadavg else None,
           "loadavg_1m_after": after.loadavg[0] if after.loadavg else None,
           "own_cpu_s": None, "other_cpu_s": None, "other_cpu_share": None}
    if None in (before.busy_ticks, after.busy_ticks, before.own_ticks, after.own_ticks):
        return out
    own = (after.own_ticks - before.own_ticks) / hz
    other = max(0.0, (after.busy_ticks - before.busy_ticks) / hz - own)
    # share of the CPU time the machine could have given everyone else while this block ran
    free = wall * cpus - own
    out |= {"own_cpu_s": round(own, 3), "other_cpu_s": round(other, 3),
            "other_cpu_share": round(min(1.0, other / free), 4) if free > 0 else None}
    return out
