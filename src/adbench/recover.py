"""Recover a working directory after a killed run, before Snakemake starts again.

A SIGKILL leaves Snakemake's lock in .snakemake/locks (the next run stops with a
LockException) and, when it lands inside a write, an adbench.io temp file beside the output.
When no live Snakemake holds this directory, `python -m adbench.recover` runs
`snakemake --unlock` and removes those temp files, printing one line for each. It never
signals any process; `snakemake --rerun-incomplete` then reruns the interrupted jobs.
"""

from __future__ import annotations

import argparse
import shlex
import os
import re
import subprocess
import sys
from pathlib import Path

# adbench.io's temp names: tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp") beside the output
TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
TEMP_DIRS = ("results", "report", "archive")


def lock_files(workdir: Path) -> list[Path]:
    """Snakemake's lock files for this directory (empty when it is not locked)."""
    return sorted((workdir / ".snakemake" / "locks").glob("*.lock"))


def is_snakemake(argv: list[str]) -> bool:
    """A Snakemake process (`snakemake ...`, `python -m snakemake ...`) or one of its script jobs."""
    heads = [os.path.basename(a) for a in argv[:3]]
    return "snakemake" in heads or any("/.snakemake/scripts/" in a or a.startswith(".snakemake/scripts/")
                                       for a in argv)


def _ancestors() -> set[int]:
    """This process and its parents (make, the recipe's shell): never counted as holders."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # field 4 (ppid), after the "(comm)" field
    return pids


def holders(workdir: Path, proc: Path = Path("/proc")) -> list[int]:
    """PIDs of live Snakemake processes whose working directory is `workdir`."""
    found, mine, target = [], _ancestors(), workdir.resolve()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone, a zombie, or another user's process
            continue
        if cwd == target and is_snakemake([a for a in argv if a]):
            found.append(int(entry.name))
    return sorted(found)


def stale_temp_files(workdir: Path) -> list[Path]:
    """adbench.io temp files left under the output folders by a killed write."""
    return sorted(p for d in TEMP_DIRS if (workdir / d).is_dir()
                  for p in (workdir / d).rglob(".*.tmp") if p.is_file() and TEMP_NAME.match(p.name))


def recover(workdir: Path, snakemake: list[str], extra: list[str]) -> int:
    """Unlock and clean `workdir` when it is locked and no live Snakemake holds it."""
    locks = lock_files(workdir)
    if not locks:
        return 0
    live = holders(workdir)
    if live:
        print(f"adbench.recover: Snakemake is running in {workdir} (pid {', '.join(map(str, live))}); "
              "leaving its lock alone")
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
