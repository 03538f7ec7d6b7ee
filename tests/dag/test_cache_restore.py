"""The cache on a completed smoke run: every registered output is a target, so a deleted or changed
file is rebuilt by exactly the job that writes it; a changed file gets no verdict until then."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from adbench import cache

from conftest import (MAKE_REPORT, MEASURED, REPORT_JOBS, ROOT, SMOKE, copy_completed, dry_run, planned_jobs, project_env,
                      snakemake)

pytestmark = [pytest.mark.slow, pytest.mark.dag]


@pytest.fixture
def cached(smoke, tmp_path):
    """A copy of the completed smoke project that this test may break (other tests share `smoke`)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    project = copy_completed(smoke[0], tmp_path / "project")
    shutil.copy2(ROOT / "Makefile", project / "Makefile")
    # rule inputs from the checkout are relative paths (common.smk source_file), so a moved copy of a
    # completed run is complete as it stands
    assert dry_run(project) == set(), "the copy of the completed run plans jobs before the test broke anything"
    return project


def make_report(project: Path) -> tuple[subprocess.CompletedProcess, float]:
    """The README command at smoke sizes with this environment's tools; its output and wall time."""
    t0 = time.perf_counter()
    res = subprocess.run(MAKE_REPORT, cwd=project, env=project_env(project), capture_output=True, text=True,
                         timeout=1800)  # hang guard only
    return res, time.perf_counter() - t0


def csvs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))}


def test_a_deleted_family_folder_is_rebuilt_by_its_job_alone(cached):
    before = csvs(cached / "results/S2")
    assert before, "results/S2 holds no CSV to compare"
    shutil.rmtree(cached / "results/S2")
    assert dry_run(cached) == {"scalar_s2"} | REPORT_JOBS
    res, seconds = make_report(cached)
    MEASURED["make report restoring a deleted results/S2 (smoke sizes)"] = seconds
    print(f"make report restored results/S2 in {seconds:.1f} s")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    # byte for byte (meta.json holds the run's time stamps, so it is only required to be back)
    assert csvs(cached / "results/S2") == before and (cached / "results/S2/meta.json").is_file()
    assert dry_run(cached) == set()


def test_a_deleted_file_plans_its_producer_and_what_depends_on_it(cached):
    (cached / "results/C1/train/correct/curve.csv").unlink()
    res = snakemake(cached, "--cores", "2", "-n", *SMOKE)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    jobs = planned_jobs(out)
    jobs.pop("all", None)
    assert jobs.pop("charlm_train") == 1 and "variant=correct" in out  # that variant only, not all five
    # what reads its outputs: the summary (curves), the evaluation, the proxy probes and the optimiser checks
    # (weights), the figures, the report
    assert set(jobs) == {"charlm_eval", "charlm_proxy", "charlm_checks", "charlm_summary", "charlm_plot"} | REPORT_JOBS, jobs


def _started(logs: list[Path]) -> Path | None:
    """The charlm_train log whose job has started (run_job's first line), if any."""
    return next((p for p in logs if p.is_file() and "rule charlm_train" in p.read_text()), None)


def test_make_report_rebuilds_a_forcerun_stopped_by_sigterm(cached, monkeypatch):
    logs = sorted((cached / "logs").glob("charlm_train_*.log"))
    assert logs
    for p in logs:
        p.unlink()  # the smoke run's logs: a new line then means a new job
    everything = sorted(str(p.relative_to(cached)) for p in (cached / "results").rglob("*") if p.is_file())
    env = {**os.environ, "PYTHONPATH": str(cached / "src")}
    run = subprocess.Popen([sys.executable, "-m", "snakemake", "--forcerun", "charlm_train", "--cores", "2", *SMOKE],
                           cwd=cached, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 600  # hang guard only
        while (log := _started(logs)) is None:
            assert run.poll() is None, "the forced run ended before a charlm_train job started"
            assert time.monotonic() < deadline, "no charlm_train job started within 10 minutes"
            time.sleep(0.05)
        os.killpg(run.pid, signal.SIGTERM)  # the Snakemake process group: Snakemake and its jobs
        run.wait(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    t_stop = time.time()
    variant = log.stem.removeprefix("charlm_train_")
    res, seconds = make_report(cached)
    print(f"SIGTERM during charlm_train ({variant}); make report finished in {seconds:.1f} s")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    folder = cached / "results/C1/train" / variant
    rebuilt = [folder / n for n in ("curve.csv", "grad_norms.csv", "run.csv", "meta.json")]
    assert all(p.is_file() and p.stat().st_mtime > t_stop for p in rebuilt), "the stopped job was not rebuilt"
    missing = [p for p in everything if not (cached / p).is_file()]
    assert missing == [], missing
    monkeypatch.chdir(cached)  # records name paths relative to the project
    assert cache.check(list(cache.records())) == []  # every recorded file is what its job last wrote
    assert dry_run(cached) == set()


def test_a_changed_file_gets_no_verdict_and_make_report_restores_it(cached, monkeypatch):
    edited, truncated, deleted = "results/S2/values.csv", "results/S1/values.csv", "results/S4/variants.csv"
    originals = {p: (cached / p).read_bytes() for p in (edited, truncated, deleted)}
    comparison, summary = ((cached / f"results/{n}.csv").read_bytes() for n in ("comparison", "summary"))
    cmp0 = pd.read_csv(cached / "results/comparison.csv")
    assert set(cmp0[cmp0.id.isin(["S1", "S2"])].status) & {"match", "differs"}, "no verdict to withhold"

    text = originals[edited].decode()
    digit = re.search(r"^S2,[^,]*,-?\d+\.(\d)", text, re.M).start(1)  # a digit of a value, not of the ID
    (cached / edited).write_text(text[:digit] + str((int(text[digit]) + 1) % 10) + text[digit + 1:])
    (cached / truncated).write_bytes(originals[truncated][: len(originals[truncated]) // 2])

    # (i) the report alone, without make report's restore step: banner, summary and comparison
    res = snakemake(cached, "--cores", "2", "--forcerun", "verdicts_compare", "render_report", *SMOKE)
    assert res.returncode == 0, res.stderr[-3000:]
    html = (cached / "report/report.html").read_text()
    banner = html.split('id="integrity"', 1)[1].split("</div>", 1)[0]
    for path in (edited, truncated):
        assert f"<code>{path}</code> changed after its job wrote it" in banner
    assert "results/S3/" not in banner  # an untouched file is not named
    cmp = pd.read_csv(cached / "results/comparison.csv")
    for mid, path in (("S2", edited), ("S1", truncated)):
        rows = cmp[cmp.id == mid]
        assert len(rows) and set(rows.status) == {"not judged"}, rows[["quantity", "status"]]
        assert set(rows.note) == {f"{path} changed after its job wrote it"} and rows.measured.isna().all()
    untouched = cmp[cmp.id == "S3"]  # negative control: still judged
    assert set(untouched.status) & {"match", "differs"}
    untrusted = pd.read_csv(cached / "results/summary.csv").set_index("family").loc["all", "untrusted"]
    assert edited in untrusted and truncated in untrusted

    (cached / deleted).unlink()
    monkeypatch.chdir(cached)  # records name paths relative to the project
    recorded = [edited, truncated, deleted, "results/S3/values.csv"]
    assert cache.check(recorded) == [(edited, cache.CHANGED), (truncated, cache.CHANGED), (deleted, cache.MISSING)]

    # (ii) make report: one line per file, the jobs re-run, the run's files back byte for byte
    res, seconds = make_report(cached)
    print(f"make report restored {edited}, {truncated} and {deleted} in {seconds:.1f} s")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    for line in (f"adbench: {edited} changed after its job wrote it: re-running scalar_s2",
                 f"adbench: {truncated} changed after its job wrote it: re-running scalar_s1",
                 f"adbench: {deleted} missing: re-running scalar_s4"):
        assert line in out.splitlines(), out[-4000:]
    assert {p: (cached / p).read_bytes() for p in originals} == originals
    assert (cached / "results/comparison.csv").read_bytes() == comparison
    assert (cached / "results/summary.csv").read_bytes() == summary  # no `untrusted` column any more
    html = (cached / "report/report.html").read_text()
    assert 'id="integrity"' not in html and "carry no record" not in html
    assert cache.check(recorded) == []
