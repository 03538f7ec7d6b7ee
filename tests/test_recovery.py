"""Recovery after a kill: `make report` unlocks a stale lock, reruns incomplete jobs, finishes."""

import base64
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adbench import recover

from conftest import MEASURED, ROOT, SMOKE, copy_project, planned_jobs, snakemake

BIN = str(Path(sys.executable).parent)  # this environment's python and snakemake: no venv is created


def make_report(project: Path, stdout=subprocess.PIPE) -> subprocess.Popen:
    """The README command at smoke sizes, with this environment's tools, in its own process group."""
    env = {**os.environ, "PYTHONPATH": str(project / "src")}
    cmd = ["make", "report", f"BIN={BIN}", "CORES=2", f"SMK_ARGS={' '.join(SMOKE)}"]
    return subprocess.Popen(cmd, cwd=project, env=env, stdout=stdout, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group this test started (make, Snakemake, its jobs), as `kill -9 -PGID`."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # already gone
        pass
    proc.wait()


def incomplete(project: Path) -> list[Path]:
    """Snakemake's markers of jobs that started and have not finished."""
    d = project / ".snakemake" / "incomplete"
    return [p for p in d.rglob("*") if p.is_file()] if d.is_dir() else []


def leftovers(project: Path) -> list[Path]:
    """Temporary or partial files anywhere under results/ and report/."""
    return [p for d in ("results", "report") for p in (project / d).rglob("*")
            if p.is_file() and (p.suffix == ".tmp" or recover.TEMP_NAME.match(p.name))]


@pytest.mark.slow
def test_make_report_recovers_after_sigkill(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    project = copy_project(tmp_path / "project")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, project / name)
    first_log = tmp_path / "first.log"  # a file, not a pipe nobody reads while we wait
    first = make_report(project, stdout=first_log.open("w"))
    try:
        deadline = time.monotonic() + 600  # hang guard only
        while not (incomplete(project) and list((project / "results").rglob("values.csv"))):
            assert first.poll() is None, "the smoke run ended before a job could be killed:\n" + first_log.read_text()
            assert time.monotonic() < deadline, "no job started within 10 minutes"
            time.sleep(0.2)
        running = [base64.b64decode(p.name).decode() for p in incomplete(project)]  # markers: base64 of the output
    finally:
        kill_group(first)
    t_kill = time.perf_counter()
    assert recover.lock_files(project), "the kill left no lock: nothing to recover from"

    second = make_report(project)
    try:
        out, _ = second.communicate(timeout=1800)  # hang guard only (smoke sizes take ~1-2 min)
    finally:
        if second.poll() is None:  # the guard fired: stop the run this test started
            kill_group(second)
    MEASURED["kill-and-resume (make report after SIGKILL, smoke sizes)"] = time.perf_counter() - t_kill
    print(f"killed while running {running}; resumed in {time.perf_counter() - t_kill:.1f} s")
    assert second.returncode == 0, out[-4000:]
    assert "adbench.recover: removed a stale Snakemake lock" in out
    assert (project / "report" / "report.html").is_file()
    assert leftovers(project) == [] and incomplete(project) == [] and recover.lock_files(project) == []
    dry = snakemake(project, "-n", "--cores", "1", *SMOKE)  # every output complete: nothing left to run
    assert dry.returncode == 0 and planned_jobs(dry.stdout + dry.stderr) == {}, dry.stdout[-2000:]


def _locked(workdir: Path) -> Path:
    lock = workdir / ".snakemake" / "locks" / "0.output.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("results/x.csv\n")
    return lock


UNLOCK = [sys.executable, "-c", "import shutil; shutil.rmtree('.snakemake/locks')"]  # stands in for --unlock


def test_stale_lock_is_removed_with_temp_files_and_nothing_else(tmp_path, capsys):
    lock = _locked(tmp_path)
    temp = tmp_path / "results" / "S1" / ".values.csv.ab3k_9xz.tmp"
    keep = [tmp_path / "results" / "S1" / "values.csv", tmp_path / "results" / "S1" / ".hidden.tmp"]
    for p in [temp, *keep]:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
    assert recover.recover(tmp_path, UNLOCK, []) == 0
    assert not lock.exists() and not temp.exists() and all(p.exists() for p in keep)
    assert capsys.readouterr().out.count("adbench.recover:") == 2  # unlock line, temp-file line


def test_negative_control_a_live_snakemake_keeps_its_lock(tmp_path, capsys):
    lock = _locked(tmp_path)
    fake = tmp_path / "bin" / "snakemake"  # argv[1] basename 'snakemake', cwd = the workdir
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(fake)], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while proc.pid not in recover.holders(tmp_path):
            assert time.monotonic() < deadline, "the live process was never seen"
            time.sleep(0.05)
        assert recover.recover(tmp_path, UNLOCK, []) == 0
        assert lock.exists() and str(proc.pid) in capsys.readouterr().out
    finally:
        proc.kill()  # the process this test started, by its own handle
        proc.wait()


def test_unlocked_directory_is_left_alone(tmp_path, capsys):
    assert recover.recover(tmp_path, [sys.executable, "-c", "raise SystemExit(3)"], []) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("argv, expected", [
    (["/x/.venv/bin/python", "/x/.venv/bin/snakemake", "--cores", "2"], True),
    (["python3", "-m", "snakemake", "-n"], True),
    (["snakemake", "--unlock"], True),
    (["/x/bin/python", "/w/.snakemake/scripts/tmpab12.s5.py"], True),   # a running script job
    (["/bin/sh", "-c", ".venv/bin/snakemake --cores all"], False),      # make's recipe shell
    (["/home/snakemake-user/.venv/bin/python", "-m", "adbench.recover"], False),
    (["python", "-m", "pytest"], False),
])
def test_is_snakemake(argv, expected):
    assert recover.is_snakemake(argv) is expected
