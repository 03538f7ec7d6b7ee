"""Build one virtual environment per matrix entry: a thin layer holding only the entry's overrides,
stacked on a base environment that holds the project's pins (a .pth file adds the base's site-packages)."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..io import write_json

log = logging.getLogger(__name__)
STAMP = "adbench-env.json"  # inside the venv, not a Snakemake output, so it survives a job re-run
_QUERY = ("import importlib.metadata as m, json, sys, sysconfig\n"
          "def v(p):\n"
          "    try: return m.version(p)\n"
          "    except m.PackageNotFoundError: return 'not installed'\n"
          "print(json.dumps({'python': '%d.%d.%d' % sys.version_info[:3], 'purelib': sysconfig.get_paths()['purelib'],"
          " 'versions': {p: v(p) for p in sys.argv[1:]}}))")


def query(python: str, packages: list[str]) -> dict:
    """Python version, site-packages and installed versions of `packages`, as seen by `python`."""
    out = subprocess.run([python, "-c", _QUERY, *packages], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def same_version(installed: str, pinned: str) -> bool:
    """'2.13.0+cpu' satisfies '2.13.0' (PEP 440: a local label matches the public pin)."""
    return installed.split("+")[0] == pinned.split("+")[0]


def unmet(versions: dict[str, str], pins: dict[str, str]) -> list[str]:
    """'torch 2.12.0 (pinned 2.13.0)' for each pin the versions do not satisfy."""
    return [f"{p} {versions.get(p, 'not installed')} (pinned {v})" for p, v in pins.items()
            if not same_version(versions.get(p, "not installed"), v)]


def error_line(output: str) -> str:
    """The line that says why pip failed: its first 'ERROR:' line, else the last non-empty line."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR:") and "dependency resolver" not in ln]
    line = (errors or lines or ["pip failed without output"])[0]
    # pip lists every release it found; keep the last few so the line stays readable
    return re.sub(r"\(from versions: ([^)]{60,})\)",
                  lambda m: f"(from versions: …, {', '.join(m.group(1).split(', ')[-3:])})", line)


def _pip(python: str, target: str, *args: str, logfile: Path) -> subprocess.CompletedProcess:
    """Run `python -m pip --python target ...`, appending its output to `logfile`."""
    cmd = [python, "-m", "pip", "--python", target, "--disable-pip-version-check", *args]
    res = subprocess.run(cmd, capture_output=True, text=True)
    with logfile.open("a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n{res.stdout}{res.stderr}\n")
    return res


def _pip_check(python: str, target: str, logfile: Path) -> list[str]:
    """pip check problems, leaving out adbench's own pins (an override contradicts them by design)."""
    res = _pip(python, target, "check", logfile=logfile)
    return [] if res.returncode == 0 else [ln for ln in res.stdout.splitlines()
                                           if ln.strip() and not ln.startswith("adbench ")]


def build(dest: Path, base_python: str, base_purelib: str | None, requirements: dict[str, str],
          pins: dict[str, str], digest: str, logfile: Path) -> dict:
    """Create (or reuse, when its stamp has `digest`) the environment at `dest`; a record, never raises on pip.

    With `base_purelib`, `dest` is a layer: only `requirements` (the overrides) are installed in it.
    Without, `dest` is a full environment from `requirements` (the base built from the pins).
    """
    dest = Path(dest).resolve()
    stamp = dest / STAMP
    if stamp.exists():
        old = json.loads(stamp.read_text())
        if old.get("digest") == digest and old.get("ok"):
            log.info("reusing %s (pins unchanged, digest %s)", dest, digest)
            return {**old, "reused": True}
    t0 = time.perf_counter()
    logfile.parent.mkdir(parents=True, exist_ok=True)
    logfile.write_text("")
    shutil.rmtree(dest, ignore_errors=True)
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = str(dest / "bin" / "python")
    if base_purelib:
        purelib = query(python, [])["purelib"]
        # addsitedir (not a bare path line) also runs the base's own .pth files.
        Path(purelib, "_adbench_base.pth").write_text(f"import site; site.addsitedir({base_purelib!r})\n")
    record = {"digest": digest, "path": str(dest), "python": python, "base": base_purelib,
              "requirements": requirements, "ok": True, "error": "", "reused": False}
    reqs = [f"{k}=={v}" for k, v in requirements.items()]
    res = _pip(base_python, python, "install", *reqs, logfile=logfile) if reqs else None
    if res is not None and res.returncode != 0:
        record |= {"ok": False, "error": error_line(res.stdout + res.stderr)}
    else:
        problems = _pip_check(base_python, python, logfile)
        inside = query(python, list(pins))
        wrong = unmet(inside["versions"], pins)
        record |= {"versions": {"python": inside["python"], **inside["versions"]}, "purelib": inside["purelib"]}
        if problems or wrong:
            record |= {"ok": False, "error": "pip check: " + problems[0] if problems
                       else "installed versions differ from the pins: " + "; ".join(wrong)}
    record["build_s"] = round(time.perf_counter() - t0, 1)
    write_json(record, stamp)
    if not record["ok"]:
        log.warning("environment %s failed: %s", dest.name, record["error"])
    return record


def current_base(pins: dict[str, str]) -> dict:
    """The running interpreter as base when it holds every pin, with what it lacks otherwise."""
    inside = query(sys.executable, list(pins))
    return {"python": sys.executable, "purelib": inside["purelib"], "python_version": inside["python"],
            "unmet": unmet(inside["versions"], pins)}
