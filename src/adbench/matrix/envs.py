"""Build one full virtual environment per matrix entry, from a lock of its own.

An entry's lock is the runtime lock (envs/requirements.txt) re-resolved with the entry's versions:
`uv pip compile pyproject.toml --override <entry>.overrides.txt --generate-hashes`, seeded with the
runtime lock so every package the overrides do not move keeps its locked version, while what an
overridden package requires follows it. The environment is `uv venv` + `uv pip sync --require-hashes`
of exactly that lock (uv hard-links the files from its cache), then an unfiltered `uv pip check`.
Files, beside the environment `.matrix/envs/<entry>/`:

    .matrix/envs/<entry>.overrides.txt   the --override file ('matplotlib==3.10.9')
    .matrix/envs/<entry>.lock.txt        the entry's hashed lock (archived with its results as lock.txt)
    .matrix/envs/<entry>.uv.log          every uv command and its output
    .matrix/envs/<entry>/adbench-env.json  the stamp: digests of the inputs and of the lock

adbench itself is not installed in the environment: the inner runs import it from the checkout
(PYTHONPATH=<root>/src, see run.py), and an installed adbench would declare the project's pins
(matplotlib==3.11.2) that every override contradicts, so `uv pip check` could never pass unfiltered.
"""

from __future__ import annotations

import json
import logging
import os
import re
import runpy
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from ..io import write_bytes, write_json
from .locks import env_digest, inputs_digest, override_text, sha256

log = logging.getLogger(__name__)
STAMP = "adbench-env.json"  # inside the venv, not a Snakemake output, so it survives a job re-run
UV_ENV = "ADBENCH_UV"       # an explicit uv binary; else the one `make setup` bootstraps (envs/uv.txt)
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


def find_uv(environ: dict[str, str], prefix: str, root: str, which=shutil.which) -> tuple[str | None, list[str]]:
    """(uv binary or None, the places looked in): $ADBENCH_UV, then the uv `make setup` bootstraps into
    the venv running the matrix (<prefix>/.uv) or into the checkout's .venv, then uv on PATH."""
    places = [environ.get(UV_ENV, ""), str(Path(prefix) / ".uv/bin/uv"), str(Path(root) / ".venv/.uv/bin/uv")]
    places = [p for p in dict.fromkeys(places) if p]
    for p in places:
        if os.access(p, os.X_OK) and Path(p).is_file():
            return str(Path(p).resolve()), places
    found = which("uv")
    return (found, places) if found else (None, places + ["uv on PATH"])


def error_line(output: str) -> str:
    """One line that says why uv (or pip) failed.

    uv:  'error: No solution found when resolving dependencies' + '  cause: Because there is no version
         of matplotlib==0.0.404 and ...' -> 'no version 0.0.404 of matplotlib (error: No solution found ...)';
         other failures: the 'error:' line joined with its 'cause:' / 'Caused by:' lines.
    pip: its first 'ERROR:' line, with a long '(from versions: ...)' list cut to its last three.
    Else the last non-empty line."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    missing = re.search(r"there is no version of ([A-Za-z0-9._-]+)==([^\s,]+)", output)
    uv_errors = [i for i, ln in enumerate(lines) if ln.startswith("error:")]
    if uv_errors:
        head = lines[uv_errors[0]]
        if missing:
            return f"no version {missing.group(2)} of {missing.group(1)} ({head})"
        causes = [re.sub(r"^(cause:|Caused by:|[╰─▶ ]+)\s*", "", ln) for ln in lines[uv_errors[0] + 1:]
                  if ln.startswith(("cause:", "Caused by:", "╰─▶"))]
        line = ": ".join([head, *causes])
    else:
        errors = [ln for ln in lines if ln.startswith("ERROR:") and "dependency resolver" not in ln]
        line = (errors or lines[-1:] or ["uv failed without output"])[0]
    # a resolver lists every release it found; keep the last few so the line stays readable
    return re.sub(r"\(from versions: ([^)]{60,})\)",
                  lambda m: f"(from versions: …, {', '.join(m.group(1).split(', ')[-3:])})", line)


def check_problems(output: str) -> list[str]:
    """The incompatibilities `uv pip check` (or `pip check`) reported, one line each, its summary lines left out."""
    skip = ("Using Python", "Checked ", "Found ", "All installed packages are compatible", "No broken requirements")
    return [ln.strip() for ln in output.splitlines() if ln.strip() and not ln.strip().startswith(skip)]


def uv_environ(python: str, root: Path) -> dict[str, str]:
    """os.environ plus the UV_* settings envs/uvrun.py derives from `python -m pip config list`: uv then
    looks where pip looks here (mirrors, local wheels). Computed once per build, not once per uv call."""
    uvrun = runpy.run_path(str(root / "envs" / "uvrun.py"))
    listing = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    return uvrun["uv_environment"](uvrun["parse"](listing))


def _uv(uv: str, *args: str, environ: dict[str, str], logfile: Path) -> subprocess.CompletedProcess:
    """`uv ARGS` with `environ` (uv_environ), its command, output and duration appended to `logfile`."""
    t0 = time.perf_counter()
    res = subprocess.run([uv, *args], capture_output=True, text=True, env=environ)
    with logfile.open("a", encoding="utf-8") as fh:
        fh.write(f"$ {shlex.join([uv, *args])}\n{res.stdout}{res.stderr}"
                 f"(exit {res.returncode}, {time.perf_counter() - t0:.1f} s)\n")
    return res


def _imports(env_python: str, root: Path, logfile: Path) -> str:
    """'' when the environment imports adbench (from the checkout, as the inner runs do) and snakemake,
    else the line saying why not."""
    res = subprocess.run([env_python, "-c", "import adbench, snakemake"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(root / "src")})
    with logfile.open("a", encoding="utf-8") as fh:
        fh.write(f"$ PYTHONPATH={root / 'src'} {env_python} -c 'import adbench, snakemake'\n{res.stderr}\n")
    return "" if res.returncode == 0 else f"import in the environment failed: {error_line(res.stderr)}"


def lock_paths(dest: Path) -> dict[str, Path]:
    """The files kept beside the environment at `dest` (module docstring)."""
    return {"overrides": dest.with_name(f"{dest.name}.overrides.txt"), "lock": dest.with_name(f"{dest.name}.lock.txt")}


def compile_lock(uv: str, environ: dict[str, str], python: str, root: Path, runtime_lock: Path,
                 overrides: dict[str, str], dest: Path, logfile: Path) -> tuple[Path | None, str]:
    """(the entry's lock, '') or (None, error line). Written under a temporary name and renamed, so a
    failed resolution leaves no lock (an older one is removed: it no longer matches the inputs)."""
    paths = lock_paths(dest)
    paths["lock"].unlink(missing_ok=True)
    write_bytes(override_text(overrides).encode(), paths["overrides"])
    tmp = paths["lock"].with_name(paths["lock"].name + ".tmp")
    # the existing output file is uv's preference: every version the overrides leave free stays as locked
    shutil.copyfile(runtime_lock, tmp)
    # relative paths: uv writes them into the lock's annotations ('# via --override ...'), so no host path
    rel = lambda p: os.path.relpath(p)  # noqa: E731
    res = _uv(uv, "pip", "compile", "--quiet", "--generate-hashes", "--python", python,
              "--custom-compile-command", f"make matrix (entry {dest.name}: {rel(runtime_lock)} with "
              f"{', '.join(f'{k}=={v}' for k, v in overrides.items())})",
              rel(root / "pyproject.toml"), "--override", rel(paths["overrides"]), "-o", rel(tmp),
              environ=environ, logfile=logfile)
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None, error_line(res.stdout + res.stderr)
    tmp.replace(paths["lock"])
    return paths["lock"], ""


def _failed(record: dict, error: str, t0: float) -> dict:
    return record | {"ok": False, "error": error, "build_s": round(time.perf_counter() - t0, 1)}


def build(dest: Path, python: str, root: Path, runtime_lock: Path, overrides: dict[str, str], pins: dict[str, str],
          uv: str | None, logfile: Path, uv_looked: list[str] = ()) -> dict:
    """Create (or reuse) the full environment of one entry at `dest`; a record, never raises on uv.

    `python`: the interpreter the environment is made from (the matrix's own); `pins`: the versions the
    environment must hold (the project's with the overrides); `uv`: the uv binary, None when not found
    (`uv_looked`: where). Reuse: the lock when its inputs are unchanged, the environment when its stamp
    holds the digest of the lock (env_digest)."""
    t0 = time.perf_counter()
    dest, root, runtime_lock = Path(dest).resolve(), Path(root).resolve(), Path(runtime_lock).resolve()
    record = {"path": str(dest), "python": str(dest / "bin" / "python"), "overrides": overrides, "ok": False,
              "error": "", "reused": False, "lock": "", "lock_sha256": ""}
    if uv is None:
        return _failed(record, f"uv not found (looked for {', '.join(uv_looked) or 'it'}); `make setup` "
                               "bootstraps it from envs/uv.txt, or set ADBENCH_UV", t0)
    version = query(python, [])["python"]
    inputs = inputs_digest(runtime_lock.read_bytes(), (root / "pyproject.toml").read_bytes(), overrides, version)
    stamp, lock = dest / STAMP, lock_paths(dest)["lock"]
    old = json.loads(stamp.read_text()) if stamp.exists() else {}
    kept = lock.exists() and sha256(lock.read_bytes()) == old.get("lock_sha256")
    if old.get("ok") and old.get("inputs") == inputs and kept:
        log.info("reusing %s and its lock (inputs unchanged, digest %s)", dest, old["digest"])
        return {**old, "reused": True}

    logfile.parent.mkdir(parents=True, exist_ok=True)
    logfile.write_text("")
    dest.parent.mkdir(parents=True, exist_ok=True)
    environ = uv_environ(python, root)
    record["uv"] = _uv(uv, "--version", environ=environ, logfile=logfile).stdout.strip()
    lock, error = compile_lock(uv, environ, python, root, runtime_lock, overrides, dest, logfile)
    if lock is None:
        shutil.rmtree(dest, ignore_errors=True)  # no environment outlives the lock it was built from
        log.warning("environment %s failed: %s", dest.name, error)
        return _failed(record, error, t0)
    lock_sha = sha256(lock.read_bytes())
    digest = env_digest(lock_sha, version)
    record |= {"inputs": inputs, "digest": digest, "lock": str(lock), "lock_sha256": lock_sha}
    if old.get("ok") and old.get("digest") == digest and Path(record["python"]).exists():
        log.info("reusing %s (its lock re-resolved to the same file, digest %s)", dest, digest)
        record = {**old, **record, "ok": True, "error": "", "reused": True}
        write_json({**record, "reused": False}, stamp)
        return record

    shutil.rmtree(dest, ignore_errors=True)
    env_python = record["python"]
    steps = [("uv venv", ["venv", "--quiet", "--python", python, str(dest)]),
             ("uv pip sync", ["pip", "sync", "--quiet", "--require-hashes", "--python", env_python, str(lock)])]
    for what, args in steps:
        res = _uv(uv, *args, environ=environ, logfile=logfile)
        if res.returncode != 0:
            record = _failed(record, f"{what}: {error_line(res.stdout + res.stderr)}", t0)
            break
    else:
        res = _uv(uv, "pip", "check", "--python", env_python, environ=environ, logfile=logfile)
        problems = (check_problems(res.stdout + res.stderr) or ["failed without output"]) if res.returncode else []
        inside = query(env_python, list(pins))
        wrong = unmet(inside["versions"], pins)
        record |= {"versions": {"python": inside["python"], **inside["versions"]}, "purelib": inside["purelib"]}
        imports = _imports(env_python, root, logfile)
        if problems:
            record = _failed(record, f"uv pip check: {problems[0]}", t0)
        elif wrong:
            record = _failed(record, "installed versions differ from the pins: " + "; ".join(wrong), t0)
        elif imports:
            record = _failed(record, imports, t0)
        else:
            record |= {"ok": True, "build_s": round(time.perf_counter() - t0, 1)}
    write_json(record, stamp)
    if not record["ok"]:
        log.warning("environment %s failed: %s", dest.name, record["error"])
    return record
