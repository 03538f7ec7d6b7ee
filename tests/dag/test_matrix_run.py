"""Version matrix: entries and pins, failure records, the history table, and a real two-version matrix."""

import json
import shutil
import subprocess

import pandas as pd
import pytest

from conftest import ROOT, SMOKE, copy_project, snakemake


MATRIX = """matrix:
  - {matplotlib: "3.10.9"}
  - {matplotlib: "0.0.404"}
  - {matplotlib: "3.11.2"}
"""


@pytest.mark.slow
def test_two_version_matrix_builds_runs_archives_and_reuses(tmp_path):
    project = copy_project(tmp_path / "project")
    shutil.copy2(ROOT / "pyproject.toml", project / "pyproject.toml")
    (project / "bad.yaml").write_text(MATRIX)
    # --resources as `make matrix` passes it: the inner runs get it too, just before their targets
    args = ["-s", str(project / "workflow/matrix/Snakefile"), "--cores", "2", "--resources", "mem_mb=8000",
            *SMOKE, ".test/matrix.yaml", "bad.yaml"]
    res = snakemake(project, *args, timeout=1200)
    assert res.returncode == 0, res.stderr[-4000:]          # the bad entry does not turn the matrix red
    assert "matrix: 2 of 3 entries succeeded; failed: matplotlib0.0.404: ERROR" in res.stderr

    envs = project / ".matrix/envs"
    good = {"matplotlib3.10.9": "3.10.9", "matplotlib3.11.2": "3.11.2"}
    for name, version in good.items():
        rec = json.loads((envs / f"{name}.json").read_text())
        assert rec["ok"] and rec["versions"]["matplotlib"] == version
        seen = subprocess.run([rec["python"], "-c", "import matplotlib; print(matplotlib.__version__)"],
                              capture_output=True, text=True, check=True).stdout.strip()
        assert seen == version                               # the layer's interpreter really imports it
    bad = json.loads((project / ".matrix/runs/matplotlib0.0.404/status.json").read_text())
    assert not bad["ok"] and bad["stage"] == "environment" and "0.0.404" in bad["error"]

    labels = {n: json.loads((project / f".matrix/runs/{n}/status.json").read_text())["label"] for n in good}
    for name, label in labels.items():
        assert f"matplotlib{good[name]}" in label and (project / "archive" / label / "S9/samples.csv").exists()
    hist = pd.read_csv(project / "results/history.csv", dtype=str, keep_default_na=False).set_index(["id", "quantity"])
    # The real difference between the entries: the matplotlib the jobs ran with, first changed at entry 3.
    assert hist.loc[("env", "matplotlib"), "first_moved_at"] == labels["matplotlib3.11.2"]
    assert hist.loc[("env", "matplotlib"), labels["matplotlib3.10.9"]] == "3.10.9"
    assert hist.loc[("run", "status"), "matplotlib0.0.404"].startswith("failed (environment): ERROR")
    s5 = hist.loc["S5"]
    assert (s5[labels["matplotlib3.10.9"]] != "").any() and (s5.first_moved_at == "").all()
    s9 = hist.loc["S9"]      # 3 vs 3 smoke samples can never reach p < 0.05: no timing moved
    assert (s9[labels["matplotlib3.11.2"]] != "").all() and (s9.first_moved_at == "").all()
    html = (project / "report/history.html").read_text()
    assert "0.0.404" in html and "<svg" in html and "failed" in html

    stamps = {n: (envs / n / "adbench-env.json").stat().st_mtime for n in good}
    statuses = {n: (project / f".matrix/runs/{n}/status.json").stat().st_mtime for n in good}
    res = snakemake(project, *args, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert stamps == {n: (envs / n / "adbench-env.json").stat().st_mtime for n in good}   # environments reused
    assert statuses == {n: (project / f".matrix/runs/{n}/status.json").stat().st_mtime for n in good}
    assert "matplotlib0.0.404" in res.stdout + res.stderr                                   # the failed one retried


@pytest.mark.slow
def test_a_matrix_where_no_entry_succeeds_fails_with_the_summary(tmp_path):
    project = copy_project(tmp_path / "project")
    shutil.copy2(ROOT / "pyproject.toml", project / "pyproject.toml")
    (project / "none.yaml").write_text('matrix:\n  - {matplotlib: "0.0.404"}\n  - {matplotlib: "0.0.405"}\n')
    res = snakemake(project, "-s", str(project / "workflow/matrix/Snakefile"), "--cores", "1", *SMOKE,
                    ".test/matrix.yaml", "none.yaml", timeout=900)
    assert res.returncode != 0, res.stderr[-3000:]
    line = next(ln for ln in res.stderr.splitlines() if ln.startswith("matrix: "))
    assert line.startswith("matrix: 0 of 2 entries succeeded: matplotlib0.0.404: ERROR: ") and \
        "; matplotlib0.0.405: ERROR: " in line and line.endswith("(see report/history.html)"), line
    assert (project / "report/history.html").exists()       # the page with both failures is still written
