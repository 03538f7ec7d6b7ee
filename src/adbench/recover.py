"""Recover a working directory after a killed run, before Snakemake starts again.

A SIGKILL leaves Snakemake's lock in .snakemake/locks (the next run stops with a
LockException) and, when it lands inside a write, an adbench.io temp file beside the output.
When no live Snakemake holds this directory, `python -m adbench.recover` runs
`snakemake --unlock` and removes those temp files, printing one line for each. While one does,
it exits 1 with a line naming that run's PID, so `make report` stops before starting a second
Snakemake beside it. It never signals any process; `snakemake --rerun-incomplete` then reruns
the interrupted jobs.
Processes are read through psutil, so this also works where there is no /proc (macOS).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil

# adbench.io's temp names: tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp") beside the output
TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
TEMP_DIRS = ("results", "report", "archive")
BUSY = 1  # exit status while another run holds the directory: the Makefile's report recipe stops there


def lock_files(workdir: Path) -> list[Path]:
    """Snakemake's lock files for this directory (empty when it is not locked)."""
    return sorted((workdir / ".snakemake" / "locks").glob("*.lock"))


def is_snakemake(argv: list[str]) -> bool:
    """A Snakemake process (`snakemake ...`, `python -m snakemake ...`) or one of its script jobs."""
    heads = [os.path.basename(a) for a in argv[:3]]
    return "snakemake" in heads or any("/.snakemake/scripts/" in a or a.startswith(".snakemake/scripts/")
                                       for a in argv)


@dataclass(frozen=True)
class Proc:
    """What recover needs to know about one process."""
    pid: int
    ppid: int
    argv: list[str]
    cwd: str | None  # None when it cannot be read (another user's process, a zombie)


def processes() -> list[Proc]:
    """Every process psutil can see, from /proc on Linux, sysctl/libproc on macOS, the Win32 API on Windows."""
    out = []
    for p in psutil.process_iter(["pid", "ppid", "cmdline", "cwd"]):  # denied fields come back as None
        info = p.info
        out.append(Proc(info["pid"], info["ppid"] or 0, info["cmdline"] or [], info["cwd"]))
    return out


def ancestors(pid: int, parent: dict[int, int]) -> set[int]:
    """`pid` and its parents by the pid -> ppid map (make, the recipe's shell): never counted as holders."""
    pids = set()
    while pid > 1 and pid not in pids:  # init ends the chain; the second test stops a cycle (pid reuse)
        pids.add(pid)
        pid = parent.get(pid, 0)
    return pids


def holders_among(procs: list[Proc], workdir: Path, me: int) -> list[int]:
    """PIDs of the Snakemake processes in `procs` working in `workdir`, leaving out `me` and its ancestors."""
    mine, target = ancestors(me, {p.pid: p.ppid for p in procs}), workdir.resolve()
    return sorted(p.pid for p in procs if p.pid not in mine and p.cwd is not None
                  and Path(p.cwd) == target and is_snakemake([a for a in p.argv if a]))


def holders(workdir: Path) -> list[int]:
    """PIDs of live Snakemake processes whose working directory is `workdir`."""
    return holders_among(processes(), workdir, os.getpid())


def main_pids(live: list[int], procs: list[Proc]) -> list[int]:
    """The holders no other holder started: the Snakemake a user would wait for or stop, not its jobs."""
    parent, held = {p.pid: p.ppid for p in procs}, set(live)
    return [pid for pid in live if not ancestors(parent.get(pid, 0), parent) & held]


def busy_message(workdir: Path, pids: list[int]) -> str:
    """The refusal of a second run (Snakemake's own LockException text suggests --unlock, harmful here)."""
    return (f"adbench.recover: another run is in progress in {workdir} "
            f"(snakemake PID{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))}); wait for it or stop it")


def stale_temp_files(workdir: Path) -> list[Path]:
    """adbench.io temp files left under the output folders by a killed write."""
    return sorted(p for d in TEMP_DIRS if (workdir / d).is_dir()
                  for p in (workdir / d).rglob(".*.tmp") if p.is_file() and TEMP_NAME.match(p.name))


def recover(workdir: Path, snakemake: list[str], extra: list[str]) -> int:
    """Unlock and clean `workdir` when it is locked and no live Snakemake holds it; BUSY while one does.

    Holders are looked for even without a lock: a run still building its DAG has not taken one yet."""
    procs = processes()
    live = holders_among(procs, workdir, os.getpid())
    if live:
        print(busy_message(workdir, main_pids(live, procs)), file=sys.stderr)
        return BUSY
    if not lock_files(workdir):
        return 0
    # --cores 1: rules with `threads: workflow.cores` need a core count even to unlock
    res = subprocess.run([*snakemake, "--unlock", "--cores", "1", *extra], cwd=workdir,
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stdout + res.stderr)
        return res.returncode
    print(f"adbench.recover: removed a stale Snakemake lock in {workdir} (no Snakemake process holds it; "
          "the last run was interrupted); incomplete jobs will be rerun")
    temps = stale_temp_files(workdir)
    for path in temps:
        path.unlink()
    if temps:
        print(f"adbench.recover: removed {len(temps)} temporary file(s) of interrupted writes, e.g. "
              f"{temps[0].relative_to(workdir)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI: python -m adbench.recover [--snakemake PATH] [-- extra snakemake args]."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snakemake", default=f"{sys.executable} -m snakemake",
                        help="how to call Snakemake (default: this Python's snakemake module)")
    parser.add_argument("--workdir", type=Path, default=Path.cwd())
    parser.add_argument("extra", nargs="*", help="arguments passed on to `snakemake --unlock` (e.g. --configfile)")
    args = parser.parse_args(argv)
    return recover(args.workdir, shlex.split(args.snakemake), args.extra)


if __name__ == "__main__":
    sys.exit(main())
