"""Recovery after a kill: `make report` unlocks a stale lock, reruns incomplete jobs, finishes."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adbench import recover

from conftest import BIN, ROOT, SMOKE, incomplete, kill_group, planned_jobs, snakemake

pytestmark = [pytest.mark.slow, pytest.mark.dag]


def leftovers(project: Path) -> list[Path]:
    """Temporary or partial files anywhere under results/ and report/."""
    return [p for d in ("results", "report") for p in (project / d).rglob("*")
            if p.is_file() and (p.suffix == ".tmp" or recover.TEMP_NAME.match(p.name))]


def test_make_report_recovers_after_sigkill(resumed):
    # the session's kill-and-resume run (conftest `resumed`); tests/dag/test_determinism.py compares its CSVs
    project, out = resumed["project"], resumed["out"]
    print(f"killed while running {resumed['running']}")
    assert resumed["locked_after_kill"], "the kill left no lock: nothing to recover from"
    assert resumed["returncode"] == 0, out[-4000:]
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
    shutil.copytree(ROOT / "envs", project / "envs")  # `make report BIN=...` checks that environment first
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
