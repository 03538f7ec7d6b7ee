"""Check that an environment of the user's own (`make report BIN=<dir>`) holds what the pipeline runs on.

usage: <dir>/python envs/check_bin.py BIN RUNTIME-LOCK

It must hold every package of the runtime lock (by name, where the line's marker applies here), the
project itself (`pip install --no-deps -e .`: the jobs import adbench) and Snakemake's command. What
is missing is named in one line and the exit status is 1. Versions other than the lock's do not stop
a run; one line says how many differ, and every meta.json then records lock_sha256 null with the
packages that differ (adbench.provenance.lock_record). Run by that environment's own python.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # this checkout's provenance module, whatever the environment holds
from adbench.provenance import installed_packages, lock_pins, lock_record, marker_applies  # noqa: E402

sys.path.remove(str(ROOT / "src"))  # src/ may hold adbench.egg-info: the environment's own packages only


def missing(lock: dict, installed: dict[str, str], bin_dir: Path) -> list[str]:
    """What the environment lacks: lock packages (by name), the project, Snakemake's command."""
    gone = [n for n, (_, mk) in lock.items() if marker_applies(mk) and n not in installed]
    if "adbench" not in installed:
        gone.append("adbench")
    if not (bin_dir / "snakemake").exists() and "snakemake" not in gone:
        gone.append(f"{bin_dir / 'snakemake'}")
    return gone


def message(bin_arg: str, lock_name: str, gone: list[str]) -> str:
    """The one line that names what is missing and the two ways out."""
    how = f"versions in {lock_name}"
    if "adbench" in gone:
        how += f"; adbench: {bin_arg}/python -m pip install --no-deps -e {ROOT}"
    return f"BIN={bin_arg} lacks: {', '.join(gone)}; install them ({how}) or drop BIN="


def main(argv: list[str]) -> int:
    bin_arg, lock_path = argv
    lock = lock_pins(Path(lock_path).read_text())
    installed = installed_packages()
    gone = missing(lock, installed, Path(bin_arg))
    if gone:
        print(message(bin_arg, lock_path, gone), file=sys.stderr)
        return 1
    runtime = Path(lock_path)
    full = runtime.with_name(runtime.name.replace("requirements", "lock"))  # the test extra is allowed too
    differs = lock_record(installed, [(full, runtime)]).get("lock_differs")
    if differs:
        names = differs["packages"]
        print(f"BIN={bin_arg}: {len(names)} package(s) differ from {lock_path} ({', '.join(names[:8])}"
              f"{', ...' if len(names) > 8 else ''}); each meta.json records lock_sha256 null and names them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
