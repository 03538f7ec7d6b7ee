"""What a run cost (adbench.runcost): the timeline from the job records and benchmark files, the floor and
wall / floor, with a run's jobs told apart from an earlier run's cached ones."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from adbench import runcost

T0 = datetime(2026, 12, 1, 12, 0, 0).timestamp()


def _job(tmp, name, rule, end, wall):
    (tmp / "results/.manifests").mkdir(parents=True, exist_ok=True)
    (tmp / "benchmarks").mkdir(exist_ok=True)
    (tmp / f"results/.manifests/{name}.json").write_text(json.dumps({"rule": rule, "written_ns": int(end * 1e9)}))
    (tmp / f"benchmarks/{name}.tsv").write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{wall}\t0:00:01\t100.0\t{wall}\n")


@pytest.fixture
def run(tmp_path, monkeypatch):
    """A 2-core run that started at T0: a 10 s timing job alone, then two 4 s jobs side by side; plus one job of an
    earlier run whose result this run reused."""
    monkeypatch.chdir(tmp_path)
    _job(tmp_path, "old_plot", "plot", T0 - 3600, 5.0)
    _job(tmp_path, "timed", "timed", T0 + 10, 10.0)
    _job(tmp_path, "a", "measure", T0 + 14, 4.0)
    _job(tmp_path, "b_1", "measure", T0 + 14.5, 4.0)
    log = tmp_path / ".snakemake/log"
    log.mkdir(parents=True)
    (log / "2026-12-01T115959.500000.snakemake.log").write_text("Building DAG of jobs...\nProvided cores: 2\n")
    return tmp_path


def test_the_floor_is_the_timing_jobs_plus_the_rest_over_the_cores(run):
    jobs, cost = runcost.run_cost(["timed"])
    assert list(jobs.job) == ["timed", "a", "b_1"]  # the earlier run's job is left out
    assert cost["cores"] == 2 and cost["job_time_s"] == 18.0 and cost["timing_s"] == 10.0
    assert cost["floor_s"] == pytest.approx(10 + 8 / 2)
    assert cost["wall_s"] == pytest.approx(14.5)  # first start (T0) to last end
    assert cost["wall_over_floor"] == pytest.approx(14.5 / 14)
    assert sorted(jobs.lane[~jobs.timing]) == [0, 1]  # side by side: one core each


def test_without_the_log_every_record_counts(run):
    (run / ".snakemake/log/2026-12-01T115959.500000.snakemake.log").unlink()
    jobs, cost = runcost.run_cost(["timed"])
    assert len(jobs) == 4 and cost["cores"] == 1
    # control: one core, so the two side-by-side jobs share it
    assert cost["floor_s"] == pytest.approx(10 + 5 + 8)


def test_the_table_leads_with_the_run_and_lists_every_job(run):
    jobs, cost = runcost.run_cost(["timed"])
    t = runcost.table(jobs, cost)
    assert list(t[t.kind == "run"].name) == runcost.SUMMARY
    assert list(t[t.kind == "job"].name) == ["timed", "a", "b_1"] and t[t.kind == "job"].timing.tolist() == [True, False, False]
    assert runcost.figure(jobs, cost["cores"]).lstrip().startswith("<?xml")
