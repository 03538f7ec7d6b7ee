"""Version matrix: entries and pins, failure records, the history table, and a real two-version matrix."""

import json
import shutil
import subprocess

import pandas as pd
import pytest

from adbench.verdicts.documented import load
from adbench.matrix.entries import entries, pin_hash, resolved
from adbench.matrix.envs import error_line, unmet
from adbench.history.table import history, run_from_status
from adbench.matrix.run import check_meta_versions, run_error_line
from conftest import ROOT, SMOKE, copy_project, snakemake


def test_entries_are_named_from_their_versions_and_duplicates_are_refused():
    got = entries([{"torch": "2.13.0"}, {"torch": "2.14.1", "Transformers": "5.24.0"}])
    assert got == {"torch2.13.0": {"torch": "2.13.0"},
                   "torch2.14.1_transformers5.24.0": {"torch": "2.14.1", "transformers": "5.24.0"}}
    with pytest.raises(ValueError, match="'matrix' lists"):
        entries([{"numpy": "2.3.5"}, {"numpy": "2.3.5"}])


def test_pin_hash_changes_only_with_the_resolved_pins():
    pins = {"torch": "2.13.0", "numpy": "2.4.6"}
    a = pin_hash(resolved(pins, {"numpy": "2.3.5"}), "/base", "3.11.7")
    assert a == pin_hash(resolved(pins, {"numpy": "2.3.5"}), "/base", "3.11.7")
    assert a != pin_hash(resolved(pins, {"numpy": "2.3.4"}), "/base", "3.11.7")
    assert a != pin_hash(resolved(pins, {"numpy": "2.3.5"}), "/other", "3.11.7")
    assert unmet({"torch": "2.13.0+cpu", "numpy": "2.4.6"}, pins) == []   # a local label satisfies the pin
    assert unmet({"torch": "2.13.0+cpu"}, pins) == ["numpy not installed (pinned 2.4.6)"]


def test_failure_lines_name_the_cause():
    pip = ("Looking in links: /opt/wheels\nERROR: Could not find a version that satisfies the requirement "
           "matplotlib==0.0.404 (from versions: 3.10.9)\nERROR: No matching distribution found for matplotlib==0.0.404\n")
    assert error_line(pip).startswith("ERROR: Could not find a version") and "0.0.404" in error_line(pip)
    smk = ("Error in rule scalar_s9_run:\n    jobid: 4\nTraceback (most recent call last):\n"
           "  File \"x.py\", line 3\nValueError: calibration gave 0 loops\nShutting down\n")
    assert run_error_line(smk) == "Error in rule scalar_s9_run: — ValueError: calibration gave 0 loops"


def test_meta_json_must_record_the_entry_versions(tmp_path):
    (tmp_path / "S1").mkdir()
    (tmp_path / "S1/meta.json").write_text(json.dumps({"versions": {"numpy": "2.4.6", "torch": "2.13.0+cpu"}}))
    assert check_meta_versions(tmp_path, {"numpy": "2.4.6", "torch": "2.13.0", "matplotlib": "3.10.9"}) == ""
    assert check_meta_versions(tmp_path, {"numpy": "2.3.5"}) == "S1/meta.json records numpy 2.4.6, the entry asked for 2.3.5"


def _archive(root, label, values, versions):
    (root / label / "S1").mkdir(parents=True)
    rows = [{"id": i, "quantity": q, "value": v} for (i, q), v in values.items()]
    pd.DataFrame(rows).to_csv(root / label / "S1/values.csv", index=False)
    (root / label / "MANIFEST.json").write_text(json.dumps({"versions": versions, "device": "cpu"}))
    return {"entry": label, "label": label, "ok": True, "versions": versions}


def test_history_finds_the_first_run_where_a_quantity_moved(tmp_path):
    doc = load()
    s1 = doc[doc.id == "S1"].iloc[:2]
    (q0, d0), (q1, d1) = [(r.quantity, float(r.documented)) for r in s1.itertuples()]
    runs = [_archive(tmp_path, "a", {("S1", q0): d0, ("S1", q1): d1}, {"numpy": "2.3.5"}),
            _archive(tmp_path, "b", {("S1", q0): d0, ("S1", q1): d1}, {"numpy": "2.4.6"}),
            _archive(tmp_path, "c", {("S1", q0): d0 + 1e-3, ("S1", q1): d1}, {"numpy": "2.4.6"}),
            {"entry": "bad", "label": "", "ok": False, "versions": {}, "error": "ERROR: No matching distribution",
             "stage": "environment"}]
    runs = [run_from_status(s, tmp_path, "cpu") for s in runs]
    table = history(runs, doc, 0.05, 0.10).set_index(["id", "quantity"])
    assert table.loc[("S1", q0), "first_moved_at"] == "c" and table.loc[("S1", q0), "moved_from"] == "b"
    assert "numpy 2.4.6" in table.loc[("S1", q0), "to_env"]
    assert table.loc[("S1", q1), "first_moved_at"] == ""                  # negative control: never moved
    assert table.loc[("env", "numpy"), "first_moved_at"] == "b"
    assert table.loc[("run", "status"), "bad"].startswith("failed (environment): ERROR: No matching")


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
    args = ["-s", str(project / "workflow/matrix/Snakefile"), "--cores", "2", *SMOKE, ".test/matrix.yaml", "bad.yaml"]
    res = snakemake(project, *args, timeout=1200)
    assert res.returncode == 0, res.stderr[-4000:]          # the bad entry does not turn the matrix red

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


def test_history_holds_each_run_to_the_rows_declared_tolerance(tmp_path):
    # S5's central error at h=1e-5 is rounding noise the table allows to rel:2 (the verdict's "differs"):
    # a change inside that is not a move, one beyond it is (printed digits alone would flag both).
    doc = load()
    row = doc[(doc.id == "S5") & (doc.quantity == "central_err_h1e-05")].iloc[0]
    assert row.tolerance == "rel:2" and row.documented == "6.68e-12"
    key = ("S5", row.quantity)
    runs = [_archive(tmp_path, "a", {key: 6.68e-12}, {"numpy": "2.3.5"}),
            _archive(tmp_path, "b", {key: 9.9e-12}, {"numpy": "2.4.6"}),      # +3.2e-12 < 2 x 6.68e-12
            _archive(tmp_path, "c", {key: 4.883e-11}, {"numpy": "2.4.6"})]    # +3.9e-11: beyond it
    runs = [run_from_status(s, tmp_path, "cpu") for s in runs]
    table = history(runs, doc, 0.05, 0.10).set_index(["id", "quantity"])
    assert table.loc[key, "first_moved_at"] == "c" and table.loc[key, "rule"] == "rel:2"
