"""Version matrix, end to end: docs/comparing.md's `make matrix` smoke command builds a full environment per entry
from its own lock, runs the pipeline in each, archives both runs with their locks and writes the history."""

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from adbench.matrix.locks import changed, versions
from testing_tools import unexplained
from conftest import MEASURED, ROOT, SMOKE, copy_project, snakemake

pytestmark = [pytest.mark.slow, pytest.mark.dag]


def readme_matrix_command() -> list[str]:
    """The smoke-matrix command exactly as docs/comparing.md types it."""
    section = (ROOT / "docs" / "comparing.md").read_text()
    lines = [ln.split("#", 1)[0].strip() for ln in section.splitlines() if ln.startswith("make matrix MATRIX_CONFIG=")]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def project_with_this_venv(dest: Path) -> Path:
    """A project copy whose .venv is the environment running the tests (a `make setup`/`make test` venv),
    so `make` finds set-up done and installs nothing: the copy's lock files get the venv stamp's mtime."""
    venv = Path(sys.prefix)
    if shutil.which("make") is None or not (venv / ".installed").exists():
        pytest.skip("`make matrix` needs make and a .venv made by `make setup` (.installed stamp) running the tests")
    project = copy_project(dest)
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, project / name)
    (project / ".venv").symlink_to(venv, target_is_directory=True)
    stamp = (venv / ".installed").stat().st_mtime
    for name in ("pyproject.toml", "envs/requirements.txt"):
        os.utime(project / name, (stamp - 1, stamp - 1))
    assert subprocess.run(["make", "-q", "setup"], cwd=project).returncode == 0   # nothing to install
    return project


def test_readme_types_the_smoke_matrix_command():
    assert readme_matrix_command() == ["make", "matrix", "MATRIX_CONFIG=.test/config.yaml .test/matrix.yaml"]


def test_readme_smoke_matrix_builds_full_envs_from_their_locks_runs_archives_and_writes_history(tmp_path):
    project = project_with_this_venv(tmp_path / "project")  # skips, before any check, without a `make setup` venv
    cmd = readme_matrix_command()  # as README types it (test_readme_types_the_smoke_matrix_command)
    env = {**os.environ, "PYTHONPATH": str(project / "src"), "CORES": "2", "MEM_MB": "8000"}  # CORES ?= / MEM_MB ?=
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=1200)
    MEASURED["make matrix (smoke, 2 entries, 2 cores)"] = time.perf_counter() - t0
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert "matrix: 2 of 2 entries succeeded" in res.stderr

    envs, good = project / ".matrix/envs", {"matplotlib3.10.9": "3.10.9", "matplotlib3.11.2": "3.11.2"}
    records = {n: json.loads((envs / f"{n}.json").read_text()) for n in good}
    locks = {n: (envs / f"{n}.lock.txt").read_text() for n in good}
    for name, version in good.items():
        rec = records[name]
        assert rec["ok"] and rec["versions"]["matplotlib"] == version, rec
        assert rec["lock"] == str(envs / f"{name}.lock.txt")
        assert rec["lock_sha256"] == hashlib.sha256(locks[name].encode()).hexdigest()
        assert versions(locks[name])["matplotlib"] == version and "--hash=sha256:" in locks[name]
        seen = subprocess.run([rec["python"], "-c", "import matplotlib; print(matplotlib.__version__)"],
                              capture_output=True, text=True, check=True).stdout.strip()
        assert seen == version                               # the entry's interpreter really imports it
        purelib = Path(rec["purelib"])                       # its own site-packages: no base stacked behind
        assert (purelib / "torch").is_dir() and not any("addsitedir" in p.read_text() for p in purelib.glob("*.pth"))
        assert list(purelib.glob("torch/__pycache__/*.pyc"))  # the inner jobs wrote torch's bytecode, once
    # the pinned entry's lock is the runtime lock; the other differs in matplotlib and what it requires only
    runtime = (project / "envs/requirements.txt").read_text()
    assert versions(locks["matplotlib3.11.2"]) == versions(runtime)
    diff = changed(versions(locks["matplotlib3.11.2"]), versions(locks["matplotlib3.10.9"]))
    assert diff["matplotlib"] == ("3.11.2", "3.10.9")
    assert unexplained(locks["matplotlib3.11.2"], locks["matplotlib3.10.9"], {"matplotlib": "3.10.9"}) == []
    assert not re.search(r"(/tmp/|/work/|/root/|/home/)", "".join(locks.values()))  # no host path in the locks

    labels = {n: json.loads((project / f".matrix/runs/{n}/status.json").read_text())["label"] for n in good}
    for name, label in labels.items():
        archive = project / "archive" / label
        manifest = json.loads((archive / "MANIFEST.json").read_text())
        assert f"matplotlib{good[name]}" in label and (archive / "S9/samples.csv").exists()
        assert (archive / "lock.txt").read_text() == locks[name]
        assert manifest["lock_sha256"] == records[name]["lock_sha256"]
        metas = [json.loads(p.read_text()) for p in (archive).rglob("meta.json")]
        assert metas and {m["lock_sha256"] for m in metas} == {records[name]["lock_sha256"]}   # the jobs saw it
    hist = pd.read_csv(project / "results/history.csv", dtype=str, keep_default_na=False).set_index(["id", "quantity"])
    # The real difference between the entries: the matplotlib the jobs ran with, first changed at entry 2.
    assert hist.loc[("env", "matplotlib"), "first_moved_at"] == labels["matplotlib3.11.2"]
    assert hist.loc[("env", "matplotlib"), labels["matplotlib3.10.9"]] == "3.10.9"
    s5 = hist.loc["S5"]
    assert (s5[labels["matplotlib3.10.9"]] != "").any() and (s5.first_moved_at == "").all()
    s9 = hist.loc["S9"]      # 3 vs 3 smoke samples can never reach p < 0.05: no timing moved
    assert (s9[labels["matplotlib3.11.2"]] != "").all() and (s9.first_moved_at == "").all()
    html = (project / "report/history.html").read_text()
    assert "<svg" in html and all(f"lock {r['lock_sha256'][:12]}" in html for r in records.values())
    assert f"History written to {project}/report/history.html" in res.stdout

    # the same command again: environments, runs and archives are reused (a no-op, a few seconds)
    stamps = {p: p.stat().st_mtime_ns for p in [*envs.glob("*/adbench-env.json"), *envs.glob("*.lock.txt"),
                                                 *project.glob(".matrix/runs/*/status.json")]}
    res = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "Nothing to be done" in res.stdout + res.stderr, res.stderr[-3000:]
    assert stamps == {p: p.stat().st_mtime_ns for p in stamps} and len(stamps) == 6


def test_a_matrix_where_no_entry_succeeds_fails_with_the_summary(tmp_path):
    project = copy_project(tmp_path / "project")
    shutil.copy2(ROOT / "pyproject.toml", project / "pyproject.toml")
    (project / "none.yaml").write_text('matrix:\n  - {matplotlib: "0.0.404"}\n  - {matplotlib: "0.0.405"}\n')
    res = snakemake(project, "-s", str(project / "workflow/matrix/Snakefile"), "--cores", "1", *SMOKE,
                    ".test/matrix.yaml", "none.yaml", timeout=900)
    assert res.returncode != 0, res.stderr[-3000:]
    line = next(ln for ln in res.stderr.splitlines() if ln.startswith("matrix: "))
    assert line.startswith("matrix: 0 of 2 entries succeeded: matplotlib0.0.404: no version 0.0.404 of matplotlib (") \
        and "; matplotlib0.0.405: no version 0.0.405 of matplotlib (" in line \
        and line.endswith("(see report/history.html)"), line
    assert not list((project / ".matrix/envs").glob("*.lock.txt"))      # a failed resolution leaves no lock
    html = (project / "report/history.html").read_text()                 # the page with both failures is still written
    assert "no version 0.0.404 of matplotlib" in html and "failed" in html
