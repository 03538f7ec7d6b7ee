"""adbench.recover: who holds a directory (through psutil, with or without /proc), stale locks and temp files."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import psutil
from adbench import recover
from adbench.recover import Proc

from noproc import block_proc


UNLOCK = [sys.executable, "-c", "import shutil; shutil.rmtree('.snakemake/locks')"]  # stands in for --unlock


PSUTIL = os.path.dirname(psutil.__file__)


@pytest.fixture(params=["proc", "no-proc"])
def view(request, monkeypatch):
    """Run as the machine is, and with /proc hidden from everything but psutil (as on macOS, where
    psutil asks libproc): the blocked attempts are returned, so a test can assert there were none."""
    return block_proc(monkeypatch, allow=(PSUTIL,)) if request.param == "no-proc" else []


def _start_fake_snakemake(where: Path) -> subprocess.Popen:
    """A sleeping process whose argv[1] basename is 'snakemake', working in `where`."""
    fake = where / "bin" / "snakemake"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text("import time\ntime.sleep(60)\n")
    return subprocess.Popen([sys.executable, str(fake)], cwd=where)


def _wait_seen(workdir: Path, pid: int) -> None:
    deadline = time.monotonic() + 30  # hang guard only
    while pid not in recover.holders(workdir):
        assert time.monotonic() < deadline, "the live process was never seen"
        time.sleep(0.05)


def test_stale_lock_is_removed_with_temp_files_and_nothing_else(tmp_path, capsys, view):
    lock = _locked(tmp_path)
    temp = tmp_path / "results" / "S1" / ".values.csv.ab3k_9xz.tmp"
    keep = [tmp_path / "results" / "S1" / "values.csv", tmp_path / "results" / "S1" / ".hidden.tmp"]
    for p in [temp, *keep]:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
    assert recover.recover(tmp_path, UNLOCK, []) == 0
    assert not lock.exists() and not temp.exists() and all(p.exists() for p in keep)
    assert capsys.readouterr().out.count("adbench.recover:") == 2  # unlock line, temp-file line
    assert view == []


def test_negative_control_a_live_snakemake_keeps_its_lock(tmp_path, capsys, view):
    lock = _locked(tmp_path)
    proc = _start_fake_snakemake(tmp_path)
    try:
        _wait_seen(tmp_path, proc.pid)
        assert recover.recover(tmp_path, UNLOCK, []) == recover.BUSY != 0
        assert lock.exists()
        assert capsys.readouterr().err == recover.busy_message(tmp_path, [proc.pid]) + "\n"
        lock.unlink()  # a run that has not taken its lock yet is refused all the same
        assert recover.recover(tmp_path, UNLOCK, []) == recover.BUSY
    finally:
        proc.kill()  # the process this test started, by its own handle
        proc.wait()
    assert view == []


def test_holders_are_snakemake_in_this_directory_only_and_leave_when_they_exit(tmp_path, view):
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    here = _start_fake_snakemake(tmp_path / "here")
    other_dir = _start_fake_snakemake(tmp_path / "elsewhere")
    not_smk = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path / "here")
    try:
        _wait_seen(tmp_path / "here", here.pid)
        _wait_seen(tmp_path / "elsewhere", other_dir.pid)
        assert recover.holders(tmp_path / "here") == [here.pid]
    finally:
        for p in (here, other_dir, not_smk):  # the processes this test started, by their own handles
            p.kill()
            p.wait()
    assert recover.holders(tmp_path / "here") == []
    assert view == []


def test_ancestors_of_this_process_are_read_without_proc(view):
    procs = recover.processes()
    me = next(p for p in procs if p.pid == os.getpid())
    assert (me.ppid, me.cwd, me.argv[1:]) == (os.getppid(), os.getcwd(), sys.orig_argv[1:])
    mine = recover.ancestors(os.getpid(), {p.pid: p.ppid for p in procs})
    assert os.getpid() in mine and (os.getppid() in mine or os.getppid() == 1)
    assert view == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="on Linux psutil itself reads /proc")
def test_negative_control_without_proc_for_psutil_too_nothing_can_be_read(monkeypatch):
    # The no-proc view lets only psutil's own files through; deny psutil as well and the process
    # table cannot be read at all (as the /proc-reading code failed on macOS), so the view is real.
    blocked = block_proc(monkeypatch)
    with pytest.raises(FileNotFoundError):
        recover.holders(Path.cwd())
    assert blocked


WD = Path("/Users/me/adbench")


TABLE = [
    Proc(1, 0, ["/sbin/launchd"], "/"),
    Proc(100, 1, ["make", "report"], str(WD)),
    Proc(101, 100, ["/bin/sh", "-c", ".venv/bin/python -m adbench.recover"], str(WD)),
    Proc(102, 101, [".venv/bin/python", "-m", "adbench.recover"], str(WD)),
    Proc(200, 1, ["/Users/me/adbench/.venv/bin/python", "/Users/me/adbench/.venv/bin/snakemake", "--cores", "2"],
         str(WD)),
    Proc(201, 200, ["/bin/sh", "-c", "python .snakemake/scripts/tmpab.py"], str(WD)),
    Proc(202, 201, ["python", "/Users/me/adbench/.snakemake/scripts/tmpab.py"], str(WD)),
    Proc(300, 1, ["snakemake", "--cores", "1"], "/Users/me/other"),
    Proc(400, 1, ["snakemake"], None),
    Proc(500, 1, ["python", "-m", "pytest"], str(WD)),
]


def test_holders_among_a_macos_process_table():
    assert recover.holders_among(TABLE, WD, me=102) == [200, 202]
    assert recover.holders_among(TABLE, Path("/Users/me/other"), me=102) == [300]
    # a recover started from a Snakemake job (its own chain) does not count that chain
    assert recover.holders_among(TABLE, WD, me=202) == []


def test_the_refusal_names_the_run_not_its_jobs():
    assert recover.main_pids([200, 202], TABLE) == [200]            # 202 is 200's script job (via a shell)
    assert recover.main_pids([200, 300], TABLE) == [200, 300]
    assert recover.busy_message(WD, [200]) == ("adbench.recover: another run is in progress in /Users/me/adbench "
                                               "(snakemake PID 200); wait for it or stop it")
    assert "PIDs 200, 300;" in recover.busy_message(WD, [200, 300]).replace(")", ";")


def test_ancestors_stop_at_init_and_on_a_cycle():
    parent = {p.pid: p.ppid for p in TABLE}
    assert recover.ancestors(102, parent) == {100, 101, 102}
    assert recover.ancestors(7, {7: 8, 8: 7}) == {7, 8}


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


def _locked(workdir: Path) -> Path:
    lock = workdir / ".snakemake" / "locks" / "0.output.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("results/x.csv\n")
    return lock
