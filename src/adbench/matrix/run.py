"""Run the measurement pipeline inside one entry's environment, then archive what it produced."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import time
from datetime import date
from pathlib import Path

import yaml

from ..history.archive import default_label, snapshot
from ..provenance import LOCK_ENV

log = logging.getLogger(__name__)
_EXC = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Exit)\b.*)$")


def run_error_line(output: str) -> str:
    """Why an inner run failed: the last exception line of a job's traceback, else Snakemake's 'Error in rule'."""
    lines = output.splitlines()
    exc = [m.group(1).strip() for m in map(_EXC.match, lines) if m and "WorkflowError" not in m.group(1)]
    rules = [ln.strip() for ln in lines if ln.startswith("Error in rule")]
    other = [ln.strip() for ln in lines if ln.strip()]
    return " — ".join(filter(None, [rules[0] if rules else "", exc[-1] if exc else ""])) or \
        (other[-1] if other else "snakemake failed without output")


def inner_config(config: dict) -> dict:
    """The outer config for an inner run: no matrix of its own, no compare_to (archives live outside it), not
    strict (a failed strict check would fail the entry; the history page shows its claims and rows)."""
    return {**config, "matrix": [], "matrix_targets": [], "compare_to": [], "strict": False}


def inner_command(python: str, root: Path, rundir: Path, cores: int, mem_mb, targets: list[str]) -> list[str]:
    """`<env python> -m snakemake` on the project's Snakefile, results under `rundir`, each measurement its own job."""
    cmd = [python, "-m", "snakemake", "--snakefile", str(root / "Snakefile"), "--directory", str(rundir),
           "--configfile", str(rundir / "config.yaml"), "--cores", str(cores)]
    if mem_mb:
        # --resources (like --configfile) takes every word up to the next option: just before the
        # targets it read them as resources ("dictionary update sequence element #1 has length 1")
        cmd += ["--resources", f"mem_mb={int(mem_mb)}"]
    return cmd + ["--keep-going", "--rerun-incomplete", "--nolock"] + list(targets)


def summary(statuses: list[dict]) -> tuple[bool, str]:
    """Whether any entry succeeded, and one line naming the failed ones with their errors:
    '0 of 2 entries succeeded: a: <error>; b: <error>', '1 of 2 entries succeeded; failed: b: <error>'."""
    failed = [f"{s['entry']}: {' '.join(str(s.get('error') or 'no error recorded').split())}"
              for s in statuses if not s.get("ok")]
    head = f"{len(statuses) - len(failed)} of {len(statuses)} entries succeeded"
    if not failed:
        return True, head
    if len(failed) == len(statuses):
        return False, f"{head}: {'; '.join(failed)}"
    return True, f"{head}; failed: {'; '.join(failed)}"


def fingerprint(results: Path) -> str:
    """sha256 over every CSV and JSON under `results`: a re-run job changes it, a no-op run does not."""
    h = hashlib.sha256()
    for p in sorted(results.rglob("*")):
        if p.suffix in (".csv", ".json") and p.is_file():
            h.update(str(p.relative_to(results)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def check_meta_versions(results: Path, wanted: dict[str, str]) -> str:
    """'' when every meta.json that records an overridden package records the entry's version, else the first clash."""
    for path in sorted(results.rglob("*meta.json")):
        recorded = json.loads(path.read_text()).get("versions", {})
        for pkg, ver in wanted.items():
            if pkg in recorded and recorded[pkg].split("+")[0] != ver.split("+")[0]:
                return f"{path.relative_to(results)} records {pkg} {recorded[pkg]}, the entry asked for {ver}"
    return ""


def _archive(results: Path, env: dict, overrides: dict, device: str, archive_dir: Path, marker: Path) -> str:
    """Snapshot `results` under a label from the entry's versions, unless nothing changed since the last one.
    The entry's lock goes with them (lock.txt, its sha256 in MANIFEST.json): a new lock is a new archive."""
    fp = fingerprint(results) + env.get("lock_sha256", "")[:16]
    prev = json.loads(marker.read_text()) if marker.exists() else {}
    if prev.get("fingerprint") == fp and (archive_dir / prev.get("label", "") / "MANIFEST.json").exists():
        return prev["label"]
    label = default_label(env["versions"], device, date.today(), tuple(overrides))
    dest = archive_dir / label
    manifest = dest / "MANIFEST.json"
    if manifest.exists() and not json.loads(manifest.read_text()).get("matrix_entry"):
        dest = archive_dir / (label := label + "_matrix")  # never overwrite an archive made by hand
    files = [str(p) for p in results.rglob("*") if p.suffix in (".csv", ".json") and p.is_file()]
    archive_dir.mkdir(parents=True, exist_ok=True)
    lock = {"lock": "lock.txt", "lock_sha256": env["lock_sha256"]} if env.get("lock") else {}
    snapshot(files, str(results), str(dest), True,
             {"label": label, "versions": env["versions"], "device": device, "matrix_entry": overrides, **lock},
             {"lock.txt": env["lock"]} if lock else None)
    marker.write_text(json.dumps({"fingerprint": fp, "label": label}))
    return label


def jobs_executed(inner_log: str) -> int:
    """How many jobs an inner Snakemake run executed (its 'Finished jobid' lines; 0 when nothing was to be done):
    a run job re-executed after a change runs only the jobs that change affects."""
    return len(re.findall(r"^Finished jobid: \d+", inner_log, re.M))


def run_entry(name: str, overrides: dict, env: dict, config: dict, root: str, rundir: str, archive_dir: str,
              cores: int, mem_mb=None, targets: list[str] = ()) -> dict:
    """status.json of one entry: ok with its archive label, or failed with the line that says why."""
    rundir_p, root_p = Path(rundir).resolve(), Path(root).resolve()
    status = {"entry": name, "overrides": overrides, "versions": env.get("versions", {}), "ok": False,
              "stage": "environment", "error": env.get("error", ""), "label": "", "run_s": 0.0,
              "lock_sha256": env.get("lock_sha256", "")}
    if not env.get("ok"):
        log.warning("matrix entry %s skipped: its environment failed: %s", name, status["error"])
        return {"status": status}
    rundir_p.mkdir(parents=True, exist_ok=True)
    (rundir_p / "config.yaml").write_text(yaml.safe_dump(inner_config(config), sort_keys=False))
    cmd = inner_command(env["python"], root_p, rundir_p, cores, mem_mb, targets)
    log.info("running %s", " ".join(cmd))
    t0 = time.perf_counter()
    # PYTHONDONTWRITEBYTECODE dropped: uv installs no bytecode (pip compiles it at install; uv's
    # --compile-bytecode would cost ~45 s CPU and ~320 MB per entry), so the inner jobs write the .pyc
    # of what they import into the entry's environment once, instead of each job compiling torch anew.
    environ = {k: v for k, v in os.environ.items() if k not in ("ADBENCH_VERSION_OVERRIDE", "PYTHONDONTWRITEBYTECODE")}
    if env.get("lock"):
        environ[LOCK_ENV] = str(Path(env["lock"]).resolve())  # meta.json's lock_sha256: the entry's own lock
    inner_log = rundir_p / "snakemake.log"  # streamed, so a long run can be followed with tail -f
    with inner_log.open("w", encoding="utf-8") as fh:
        res = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, text=True,
                             env={**environ, "PYTHONPATH": str(root_p / "src")})
    status |= {"stage": "run", "run_s": round(time.perf_counter() - t0, 1),
               "jobs_run": jobs_executed(inner_log.read_text(encoding="utf-8", errors="replace"))}
    if res.returncode != 0:
        status["error"] = run_error_line(inner_log.read_text(encoding="utf-8", errors="replace"))
        log.warning("matrix entry %s: run failed: %s", name, status["error"])
        return {"status": status}
    clash = check_meta_versions(rundir_p / "results", overrides)
    if clash:
        status["error"] = clash
        return {"status": status}
    status |= {"stage": "archive", "ok": True, "error": "",
               "label": _archive(rundir_p / "results", env, overrides, config["device"], Path(archive_dir),
                                 rundir_p / "archived.json")}
    return {"status": status}
