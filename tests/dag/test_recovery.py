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


# A process table as psutil gives it on macOS: make report -> sh -> recover, a Snakemake run with a
# script job under a shell, another directory's Snakemake, an unreadable one, and a plain process.


# One rule that holds the run until the test creates `go` (bounded: it gives up after ~300 s).
WAITING = """rule all:
    input: "out.txt"

rule wait:
    output: "out.txt"
    shell: "i=0; while [ ! -e go ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i+1)); done; test -e go; echo done > {output}"
"""


def test_a_second_make_report_refuses_while_a_run_is_live_and_the_first_completes(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    project = tmp_path / "project"
    project.mkdir()
    (project / "Snakefile").write_text(WAITING)
    shutil.copy2(ROOT / "Makefile", project / "Makefile")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    first_log = tmp_path / "first.log"
    first = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=project, env=env,
                             stdout=first_log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # hang guard only
        while not (recover.lock_files(project) and incomplete(project)):  # locked, its one job running
            assert first.poll() is None, first_log.read_text()
            assert time.monotonic() < deadline, "the first run never started its job"
            time.sleep(0.1)
        expected = recover.busy_message(project.resolve(), [first.pid])
        cli = subprocess.run([sys.executable, "-m", "adbench.recover"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=120)
        assert (cli.returncode, cli.stderr.strip()) == (recover.BUSY, expected)
        second = subprocess.run(["make", "report", f"BIN={BIN}", "CORES=1"], cwd=project, env=env,
                                capture_output=True, text=True, timeout=300)
        out = second.stdout + second.stderr
        assert second.returncode != 0 and expected in out, out
        # Snakemake was never started a second time: no DAG, no LockException advice to --unlock
        assert "Building DAG" not in out and "LockException" not in out and "--unlock" not in out, out
        assert first.poll() is None and not (project / "out.txt").exists()  # the first run is untouched
        (project / "go").touch()
        assert first.wait(timeout=300) == 0, first_log.read_text()
    finally:
        if first.poll() is None:  # a failed assertion above: stop the run this test started
            kill_group(first)
    assert (project / "out.txt").read_text() == "done\n" and recover.lock_files(project) == []
    # negative control: with the first run gone, the same step lets make go on
    after = subprocess.run([sys.executable, "-m", "adbench.recover"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120)
    assert (after.returncode, after.stderr) == (0, ""), after.stderr
