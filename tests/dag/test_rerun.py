"""Smoke run of the whole DAG with the tiny config, then the rerun semantics of the results contract."""

import json
import re
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPORT_JOBS, ROOT, SMOKE, copy_completed, dry_run, planned_jobs, snakemake

pytestmark = [pytest.mark.slow, pytest.mark.dag]


def test_completed_run_has_nothing_to_do(smoke):
    assert dry_run(smoke[0]) == set()


def appended(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def test_changed_parameter_reruns_exactly_its_job(smoke, tmp_path):
    project = copy_completed(smoke[0], tmp_path / "project")  # edits: on a copy (the session's run is read-only)
    appended(project / ".test/config.yaml", "\nscalar:\n  nudges: [0.1, 0.01]\n")
    assert dry_run(project) == {"scalar_s2", *REPORT_JOBS}


def test_changed_package_code_reruns_exactly_its_importers(smoke, tmp_path):
    project = copy_completed(smoke[0], tmp_path / "project")
    appended(project / "src/adbench/scalar/dual.py", "\n# a change to forward mode\n")
    # numeric.py imports dual.py: S5-S8 re-run (and S5's figure, then the report); S1-S4, S9, S10 do not.
    assert dry_run(project) == {"scalar_s5", "scalar_s6", "scalar_s7", "scalar_s8", "scalar_s5_plot", *REPORT_JOBS}


def test_library_upgrade_reruns_exactly_the_jobs_that_use_it(smoke):
    project = smoke[0]
    planned = dry_run(project, env={"ADBENCH_VERSION_OVERRIDE": json.dumps({"matplotlib": "99.0"})})
    assert {"scalar_s5_plot", "scalar_s9_plot", "render_report"} <= planned
    assert not any(re.match(r"scalar_s\d+$", r) for r in planned)
    torch_bump = dry_run(project, env={"ADBENCH_VERSION_OVERRIDE": json.dumps({"torch": "2.99.0"})})
    assert {f"scalar_s{i}" for i in (1, 2, 3, 4, 5, 6, 7, 8, 10)} <= torch_bump


def test_archive_and_compare_to_show_what_a_changed_parameter_moved(smoke, tmp_path):
    project = copy_completed(smoke[0], tmp_path / "project")
    (project / "archive.yaml").write_text("archive: {label: base, overwrite: false}\n")
    res = snakemake(project, "archive", "--cores", "2", *SMOKE, "archive.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    assert (project / "archive/base/MANIFEST.json").exists() and (project / "archive/base/comparison.csv").exists()

    (project / "changed.yaml").write_text("compare_to: [base]\nscalar: {directional: {seed: 7}}\n")
    res = snakemake(project, "--cores", "2", *SMOKE, "changed.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    ch = pd.read_csv(project / "results/changes.csv")
    moved = ch[ch.moved]
    assert len(moved) >= 2 and set(moved.id) == {"S7"}, moved[["id", "quantity"]].to_string()
    html = (project / "report/report.html").read_text()
    assert 'id="changes"' in html and "Against <code>base</code>" in html

    # Archiving the changed results under the same label is refused, and the old archive survives.
    res = snakemake(project, "archive", "--cores", "1", *SMOKE, "changed.yaml", "archive.yaml")
    assert res.returncode != 0 and "archive.overwrite" in res.stdout + res.stderr
    assert (project / "archive/base/MANIFEST.json").exists()


def test_report_zip_works_as_typed(smoke, tmp_path):
    # as the README prints it: no --cores, the shipped config (timing jobs exclusive); written outside the project
    res = snakemake(smoke[0], "--report", str(tmp_path / "report-typed.zip"))
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "report-typed.zip").stat().st_size > 10_000


def test_params_carry_only_what_the_job_reads(smoke, tmp_path):
    """Editing Adam's settings re-runs the adam O1 job, not gradient descent's."""
    (tmp_path / "adam.yaml").write_text("optim: {o1: {adam: {lr: 0.0123}}}\n")
    res = snakemake(smoke[0], "--cores", "2", "-n", *SMOKE, str(tmp_path / "adam.yaml"))
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    assert planned_jobs(out).get("optim_o1_train") == 1
    assert "output: results/O1/adam/curves.csv" in out and "output: results/O1/gd/" not in out


def test_new_weights_rerun_exactly_the_gpt2_jobs(smoke, tmp_path):
    project = smoke[0]
    (tmp_path / "auto.yaml").write_text("gpt2: {source: auto}\n")  # the smoke overlay pins source: random
    # params would re-run gpt2_model for the overlay alone; only look at what changed on disk
    args = ["--cores", "2", "-n", "--rerun-triggers", "mtime", "input", *SMOKE, str(tmp_path / "auto.yaml")]
    res = snakemake(project, *args, env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert res.returncode == 0, res.stderr[-3000:]
    report = {*REPORT_JOBS}
    control = set(planned_jobs(res.stdout + res.stderr)) - {"all"}
    assert control <= report, control  # control: no snapshot, no GPT-2 job (only the report may refresh)
    snap = tmp_path / "hub/models--gpt2/snapshots" / yaml.safe_load((ROOT / "config.yaml").read_text())["gpt2"]["revision"]
    snap.mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "tokenizer.json"):  # what a snapshot needs to count
        (snap / name).write_text("{}")  # the dry run only looks; nothing loads it
    res = snakemake(project, *args, env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = set(planned_jobs(res.stdout + res.stderr)) - {"all"}
    assert {"gpt2_model", "gpt2_prompt", "gpt2_sequence", "gpt2_memory"} <= jobs
    assert jobs <= {"gpt2_model", "gpt2_prompt", "gpt2_sequence", "gpt2_memory", "gpt2_plots"} | report, jobs


def _interval(log: Path) -> tuple[datetime, datetime]:
    stamps = re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ", log.read_text(), re.M)
    first, last = (datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f") for s in (stamps[0], stamps[-1]))
    return first, last


def test_a_timing_job_runs_alone(project):
    (project / "exclusive.yaml").write_text("timing: {exclusive: true}\n")
    targets = ["results/S9/calibration.csv", *(f"results/S{i}/values.csv" for i in (1, 2, 3, 4, 7, 8))]
    res = snakemake(project, "--cores", "2", *targets, *SMOKE, "exclusive.yaml")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "machine_share=1000" in res.stdout + res.stderr  # the timing job claims every share
    t0, t1 = _interval(project / "logs/scalar_s9_calibrate.log")
    for i in (1, 2, 3, 4, 7, 8):
        a, b = _interval(project / f"logs/scalar_s{i}.log")
        assert b < t0 or a > t1, f"S{i} ran beside the timing job"
