"""Shared fixtures: the repository root, a disposable copy of it, and a Snakemake runner."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COPY = ["Snakefile", "config.yaml", ".test", "workflow", "scripts", "src", "envs", "profiles"]


def copy_project(dest: Path) -> Path:
    """A copy of the pipeline (sources only, no results) that a test may modify."""
    dest.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "report.html")
    for name in COPY:
        src = ROOT / name
        (shutil.copytree(src, dest / name, ignore=ignore) if src.is_dir() else shutil.copy2(src, dest / name))
    return dest


def snakemake(workdir: Path, *args: str, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run Snakemake in `workdir` on that directory's own Snakefile and package sources."""
    full_env = {**os.environ, "PYTHONPATH": str(workdir / "src"), **(env or {})}
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(workdir / "Snakefile"), *args]
    return subprocess.run(cmd, cwd=workdir, env=full_env, capture_output=True, text=True, timeout=timeout)


def planned_jobs(out: str) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table of a dry run (empty when nothing to do)."""
    jobs, inside = {}, False
    for line in out.splitlines():
        if line.startswith("job ") and "count" in line:
            inside = True
            continue
        if inside:
            m = re.match(r"^(\S+)\s+(\d+)$", line.strip())
            if not m or m.group(1) == "total":
                if m:
                    break
                continue
            jobs[m.group(1)] = int(m.group(2))
    return jobs


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh copy of the project in a temporary directory."""
    return copy_project(tmp_path / "project")


SMOKE = ["--configfile", "config.yaml", ".test/config.yaml"]
# The jobs that re-run after any measurement changes: the comparison, the claims, what changed, the report.
REPORT_JOBS = {"report_compare", "report_claims", "report_changes", "render_report"}
MEASURED: dict[str, float] = {}


def pytest_terminal_summary(terminalreporter):
    """Print what the suite measured (e.g. the smoke DAG's wall time) in every run's summary."""
    for name, value in MEASURED.items():
        terminalreporter.write_line(f"{name}: {value:.1f} s")


@pytest.fixture(scope="session")
def smoke(tmp_path_factory):
    """A project copy with a completed smoke run of the whole DAG, and that run's wall time."""
    import time
    project = copy_project(tmp_path_factory.mktemp("smoke") / "project")
    t0 = time.perf_counter()
    res = snakemake(project, "--cores", "2", *SMOKE)
    elapsed = time.perf_counter() - t0
    assert res.returncode == 0, res.stderr[-4000:]
    MEASURED["smoke DAG wall time (2 cores)"] = elapsed
    return project, elapsed


def values(result):
    """A measurement's values table as quantity -> value (the unit tests' usual view of it)."""
    return result["values"].set_index("quantity")["value"]


def dry_run(project: Path, *extra: str, env: dict | None = None) -> set[str]:
    """The rules a smoke-config dry run in `project` would run (rule all left out)."""
    res = snakemake(project, "--cores", "2", "-n", *SMOKE, *extra, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = planned_jobs(res.stdout + res.stderr)
    jobs.pop("all", None)
    return set(jobs)
