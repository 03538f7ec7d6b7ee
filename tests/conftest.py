"""Shared fixtures: the repository root, a disposable copy of it, and a Snakemake runner; `--unit`, the quick
subset (`make unit`) that leaves out every test carrying a heavy marker and fails an unmarked test that starts
Snakemake."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent  # this suite: the fixtures it defines (not pytest's or a plugin's)

# The marker rule: a test (or its module, by `pytestmark`) carries one of these markers when it starts Snakemake
# (a job, a dry run, the matrix) or `make report`, builds full-size GPT-2 (real or on fake tensors), drives a
# browser, needs a SLURM cluster, or otherwise takes more than a few seconds. `make unit` (`pytest --unit`)
# leaves them out; `make test` runs them all. Under --unit an unmarked test that starts Snakemake fails, naming
# the marker to add (`unit_guard`); slowness has no such check (timing a test under load is not reliable).
HEAVY = ("slow", "dag", "fullsize", "browser", "slurm")
pytest_plugins = ["pytester"]  # test_unit_subset runs an inner pytest with this file as its conftest


def pytest_addoption(parser):
    parser.addoption("--unit", action="store_true",
                     help="the quick subset: leave out tests marked " + ", ".join(HEAVY) + " (make unit)")


def is_heavy(item) -> bool:
    """Whether a collected test carries one of the HEAVY markers."""
    return any(item.get_closest_marker(m) for m in HEAVY)


# first: pytest-xdist's worker reads the groups in its own modifyitems hook, registered after this conftest
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under --unit, deselect every heavy test (reported as deselected, like -m); then group the tests that share
    a fixture built once per module or session, for pytest-xdist (`make test`/`make unit` run on two workers)."""
    if config.getoption("--unit"):
        heavy = [i for i in items if is_heavy(i)]
        if heavy:
            config.hook.pytest_deselected(items=heavy)
            items[:] = [i for i in items if not is_heavy(i)]
    for item, group in shared_fixture_groups(items).items():
        item.add_marker(pytest.mark.xdist_group(group))


def shared_keys(item) -> set[str]:
    """The module-, package- and session-scoped fixtures of this suite (not pytest's own) that `item` uses, each
    as one key per built instance: a session fixture is built once per worker, a module fixture once per module."""
    keys = set()
    for name, defs in item._fixtureinfo.name2fixturedefs.items():
        fixturedef = defs[-1]  # the one the item gets (the closest override)
        where = Path(getattr(fixturedef.func, "__code__", None) and fixturedef.func.__code__.co_filename or "")
        if fixturedef.scope == "function" or TESTS not in where.parents or name in ONCE_PER_RUN:
            continue
        keys.add(name if fixturedef.scope in ("session", "package") else f"{item.path.name}::{name}")
    return keys


def shared_fixture_groups(items) -> dict:
    """item -> xdist group name, for every test that shares a fixture key with another (connected components:
    the smoke run's tests and the determinism test, which compares it with the resumed run, form one group).
    Under `--dist loadgroup` a group runs on one worker, so no expensive fixture (a whole smoke DAG run) is built
    twice; every other test goes to whichever worker is free."""
    parent: dict[str, str] = {}

    def find(k):
        while parent.setdefault(k, k) != k:
            k = parent[k]
        return k

    keys = {item: sorted(shared_keys(item)) for item in items}
    for ks in keys.values():
        for k in ks[1:]:
            parent[find(k)] = find(ks[0])
    users: dict[str, int] = {}
    for ks in keys.values():
        if ks:
            users[find(ks[0])] = users.get(find(ks[0]), 0) + 1
    return {item: find(ks[0]) for item, ks in keys.items() if ks and users[find(ks[0])] > 1}


def starts_snakemake(args) -> bool:
    """Whether a subprocess argv (a list, or a shell string) runs Snakemake (`-m snakemake`, its entry script) or
    `make report` (not `make -n report`). A stand-in merely named snakemake (tests/test_recover.py's sleeping fake) does not count."""
    words = args.split() if isinstance(args, str) else [str(a) for a in ([args] if isinstance(args, os.PathLike)
                                                                         else args)]
    names = [Path(w).name for w in words]
    if names[:1] == ["make"] and {"-n", "--dry-run", "--just-print", "--recon"} & set(words):
        return False  # make only prints the recipe
    if ("-m", "snakemake") in zip(words, words[1:]) or (names[:1] == ["make"] and "report" in names[1:]):
        return True
    return any(n == "snakemake" and is_snakemake_script(w) for w, n in zip(words, names))


def is_snakemake_script(word: str) -> bool:
    """Whether `word` (a path, or a name on PATH) is Snakemake's entry script: it imports snakemake."""
    path = word if os.sep in word else shutil.which(word)
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except (OSError, TypeError):  # no such file (TypeError: not on PATH)
        return False
    return b"from snakemake" in head or b"import snakemake" in head


RUNNING: list = []  # the test whose setup, call or teardown is running (its fixtures start processes too)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    RUNNING[:] = [item]
    try:
        return (yield)
    finally:
        RUNNING.clear()


def unit_guard(popen_init):
    """Popen.__init__ that fails an unmarked test (and its fixtures) starting Snakemake, with the fix."""
    def init(self, args, *a, **kw):
        if starts_snakemake(args) and RUNNING and not is_heavy(RUNNING[0]):
            pytest.fail(f"{RUNNING[0].nodeid} starts Snakemake but carries none of the markers {HEAVY}: mark it "
                        "@pytest.mark.dag (or set pytestmark in its module), so that make unit leaves it out",
                        pytrace=False)
        popen_init(self, args, *a, **kw)
    return init


POPEN_INIT = subprocess.Popen.__init__


def pytest_configure(config):
    if config.getoption("--unit"):  # process-wide, so module- and session-scoped fixtures are guarded too
        subprocess.Popen.__init__ = unit_guard(POPEN_INIT)
    if distributes(config):  # the controller: its workers (started later, with this environment) write the groups
        import tempfile
        fd, path = tempfile.mkstemp(prefix="adbench-test-groups-", suffix=".json")
        os.close(fd)
        os.environ[GROUPS_FILE] = config.stash[GROUPS_KEY] = path


def pytest_unconfigure(config):
    subprocess.Popen.__init__ = POPEN_INIT
    if GROUPS_KEY in config.stash:
        Path(config.stash[GROUPS_KEY]).unlink(missing_ok=True)


# ---- two workers -------------------------------------------------------------------------------------------------
# `make test` runs pytest-xdist with `--dist loadgroup`. xdist 3.8 marks a group by appending "@group" to the node ID,
# which pytest 9.2's structured node IDs ignore (pytest-dev/pytest-xdist#1386): its groups silently stop grouping.
# So the groups travel beside the IDs: each worker writes node ID -> group (GROUPS_FILE, a path the controller
# chose) after collecting, and the controller's scheduler reads them. The scheduler is xdist's own loadgroup one.
GROUPS_FILE = "ADBENCH_TEST_GROUPS"
GROUPS_KEY = pytest.StashKey[str]()


def distributes(config) -> bool:
    """Whether this process is the controller of a pytest-xdist run with `--dist loadgroup`."""
    return (config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput")
            and bool(config.getoption("numprocesses", None)) and config.getoption("dist", None) == "loadgroup")


def pytest_collection_finish(session):
    """On a worker: node ID -> group of every grouped test, written whole (os.replace) for the controller."""
    path = os.environ.get(GROUPS_FILE)
    if not path or not hasattr(session.config, "workerinput"):
        return
    import json
    groups = {item.nodeid: marker.args[0] if marker.args else marker.kwargs["name"]
              for item in session.items if (marker := item.get_closest_marker("xdist_group"))}
    tmp = f"{path}.{session.config.workerinput['workerid']}"
    Path(tmp).write_text(json.dumps(groups))
    os.replace(tmp, path)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook
def pytest_xdist_make_scheduler(config, log):
    if not distributes(config):
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SharedFixtureScheduling(LoadGroupScheduling):
        """xdist's loadgroup scheduling, its groups read from the workers' GROUPS_FILE (one work unit each)."""
        groups: dict | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # first called once every worker has collected (and so written the file)
                import json
                text = Path(config.stash[GROUPS_KEY]).read_text()
                if not text:
                    raise RuntimeError(f"no worker wrote the test groups to {config.stash[GROUPS_KEY]}")
                self.groups = json.loads(text)
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return SharedFixtureScheduling(config, log)
# docs: docs/reading.csv, the claims coverage's denominator, is an input of rule verdicts_claims
COPY = ["Snakefile", "config.yaml", ".test", "workflow", "scripts", "src", "envs", "profiles", "docs"]


def copy_project(dest: Path) -> Path:
    """A copy of the pipeline (sources only, no results) that a test may modify."""
    dest.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "report.html")
    for name in COPY:
        src = ROOT / name
        (shutil.copytree(src, dest / name, ignore=ignore) if src.is_dir() else shutil.copy2(src, dest / name))
    return dest


def snakemake(workdir: Path, *args: str, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    """Run Snakemake in `workdir` on that directory's own Snakefile and package sources."""
    full_env = {**os.environ, "PYTHONPATH": str(workdir / "src"), **(env or {})}
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(workdir / "Snakefile"), *args]
    return subprocess.run(cmd, cwd=workdir, env=full_env, capture_output=True, text=True, timeout=timeout)


def planned_jobs(out: str) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table of a dry run (empty when nothing to do)."""
    jobs, inside = {}, False
    for line in out.splitlines():
        if line.startswith("job ") and "count" in line:
            inside = True
            continue
        if inside:
            m = re.match(r"^(\S+)\s+(\d+)$", line.strip())
            if not m or m.group(1) == "total":
                if m:
                    break
                continue
            jobs[m.group(1)] = int(m.group(2))
    return jobs


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh copy of the project in a temporary directory."""
    return copy_project(tmp_path / "project")


SMOKE = ["--configfile", "config.yaml", ".test/config.yaml"]
# The jobs that re-run after any measurement changes: the comparison, the claims, what changed, the report.
REPORT_JOBS = {"verdicts_compare", "verdicts_claims", "changes", "render_report"}
MEASURED: dict[str, float] = {}


def pytest_report_header(config):
    """The machine beside every timing the run prints: CPU model, cores, vector extensions, memory, GPU."""
    from adbench import machine
    return f"machine: {machine.line(machine.identity())}"


def pytest_terminal_summary(terminalreporter):
    """Print what the suite measured (e.g. the smoke DAG's wall time) in every run's summary."""
    for name, value in MEASURED.items():
        terminalreporter.write_line(f"{name}: {value:.1f} s")


def pytest_sessionfinish(session):
    """On a pytest-xdist worker: hand what it measured to the controller, which prints the summary."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["measured"] = dict(MEASURED)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent when the suite runs without it
def pytest_testnodedown(node, error):
    MEASURED.update(getattr(node, "workeroutput", {}).get("measured", {}))


# The memory cap `make report` gives an 8 GB machine (80 % of 8 GiB in MiB): the smoke run runs under it, so the
# default DAG's memory check (onstart, adbench.memfit) passes on such a machine in every test run.
EIGHT_GB_MEM_MB = 6553


# Session fixtures built once for the whole run, whichever worker asks first (once_per_run): they join no group.
ONCE_PER_RUN: set[str] = set()


def shared_by_workers(fixture_function):
    """Declares a session fixture whose value once_per_run shares among the workers (put under @pytest.fixture)."""
    ONCE_PER_RUN.add(fixture_function.__name__)
    return fixture_function


def once_per_run(tmp_path_factory, name: str, build):
    """build()'s JSON-able value, computed once per pytest run: under pytest-xdist by the first worker that asks,
    while the others wait for it (a file lock in the folder all workers' temp folders share) and read it. A build
    that failed or skipped fails or skips every later asker with its message, without building again."""
    import fcntl
    import json
    root = tmp_path_factory.getbasetemp()
    root = root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root
    done = root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this worker dies
        if done.is_file():
            record = json.loads(done.read_text())
        else:
            try:
                record = {"value": build()}
            except pytest.skip.Exception as err:
                done.write_text(json.dumps({"skip": str(err)}))
                raise
            except BaseException as err:
                done.write_text(json.dumps({"error": f"{type(err).__name__}: {err}"[-4000:]}))
                raise
            done.write_text(json.dumps(record))
            return record["value"]
    if "skip" in record:
        pytest.skip(record["skip"])
    if "error" in record:
        pytest.fail(f"session fixture {name!r} failed on another worker: {record['error']}", pytrace=False)
    return record["value"]


# Projects that tests on both workers read at the same time (fixture name -> (root, tree_state when built)).
# A test that edits one, even briefly, breaks a concurrent reader: it edits copy_completed(root, tmp_path) instead.
READ_ONLY: dict[str, tuple[str, dict[str, list]]] = {}

# Snakemake's own records (a dry run may write there) and Python's byte code (written on import) are no content.
NOT_CONTENT = {".snakemake", "__pycache__"}


def tree_state(root: Path, dirs=(".",)) -> dict[str, list]:
    """Every file under `root`'s `dirs` outside NOT_CONTENT, as relative path -> [mtime in ns, sha256]: a file
    written shows in one or the other. Lists, not tuples, so that a state read back from JSON compares equal."""
    import hashlib
    state = {}
    for d in dirs:
        for folder, subdirs, files in os.walk(root / d):
            subdirs[:] = [s for s in subdirs if s not in NOT_CONTENT]
            for name in files:
                path = Path(folder, name)
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if not path.is_symlink() else os.readlink(path)
                state[os.path.relpath(path, root)] = [path.lstat().st_mtime_ns, digest]
    return state


def tree_changes(before: dict[str, list], after: dict[str, list]) -> dict[str, str]:
    """Each path that differs between two tree_state()s -> "added", "removed" or "changed"."""
    return {path: "added" if path not in before else "removed" if path not in after else "changed"
            for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


@pytest.fixture(autouse=True)
def read_only_projects_stay_as_built(request):
    """Fails a test, after it ran, if a READ_ONLY project it asked for is no longer as built (an edit
    restored afterwards still counts: the mtime moved, and a concurrent test may have read the edit)."""
    yield
    for name in READ_ONLY.keys() & set(request.fixturenames):
        root, state = READ_ONLY[name]
        changes = sorted(f"{kind} {path}" for path, kind in tree_changes(state, tree_state(Path(root))).items())
        if changes:
            pytest.fail(f"the shared project of fixture {name!r} was changed while this test ran (tests on the other "
                        f"worker read it at the same time; edit copy_completed(...) instead):\n  "
                        + "\n  ".join(changes[:20]), pytrace=False)


def copy_completed(project: Path, dest: Path) -> Path:
    """A copy of a project after a run, results, logs and Snakemake's metadata included (mtimes kept):
    Snakemake sees everything up to date there, and a test may edit it (the original is READ_ONLY)."""
    shutil.copytree(project, dest, symlinks=True, ignore=shutil.ignore_patterns("locks", "__pycache__"))
    return dest


@pytest.fixture(scope="session")
@shared_by_workers
def smoke(tmp_path_factory):
    """A project copy with a completed smoke run of the whole DAG, and that run's wall time. Read-only (READ_ONLY):
    tests on both workers read it at once."""
    import time

    def build():
        project = copy_project(tmp_path_factory.mktemp("smoke") / "project")
        t0 = time.perf_counter()
        res = snakemake(project, "--cores", "2", "--resources", f"mem_mb={EIGHT_GB_MEM_MB}", *SMOKE)
        elapsed = time.perf_counter() - t0
        assert res.returncode == 0, res.stderr[-4000:]
        MEASURED["smoke DAG wall time (2 cores)"] = elapsed
        return [str(project), elapsed, tree_state(project)]

    project, elapsed, state = once_per_run(tmp_path_factory, "smoke", build)
    READ_ONLY["smoke"] = (project, state)
    return Path(project), elapsed


BIN = str(Path(sys.executable).parent)  # this environment's python and snakemake: no venv is created


# The README command at smoke sizes, with this environment's tools, and the environment it runs in.
MAKE_REPORT = ["make", "report", f"BIN={BIN}", "CORES=2", f"SMK_ARGS={' '.join(SMOKE)}"]


def project_env(project: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(project / "src")}


def make_report(project: Path, stdout=subprocess.PIPE) -> subprocess.Popen:
    """MAKE_REPORT in `project`, in its own process group (a test can kill the whole run)."""
    return subprocess.Popen(MAKE_REPORT, cwd=project, env=project_env(project), stdout=stdout,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group this test started (make, Snakemake, its jobs), as `kill -9 -PGID`."""
    import signal
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # already gone
        pass
    proc.wait()


def incomplete(project: Path) -> list[Path]:
    """Snakemake's markers of jobs that started and have not finished."""
    d = project / ".snakemake" / "incomplete"
    return [p for p in d.rglob("*") if p.is_file()] if d.is_dir() else []


@pytest.fixture(scope="session")
@shared_by_workers
def resumed(tmp_path_factory):
    """A second whole smoke run, in a fresh copy, that `make report` started, SIGKILL stopped while its
    first jobs ran, and a second `make report` finished: the recovery tests check the resume, the
    determinism test compares its CSVs with the session's smoke run (one full run serves both).
    Returns (project, the second make report's output and return code, the jobs running at the kill)."""
    record = once_per_run(tmp_path_factory, "resumed", lambda: kill_and_resume(tmp_path_factory))
    READ_ONLY["resumed"] = (record["project"], record.pop("tree"))
    return {**record, "project": Path(record["project"])}


def kill_and_resume(tmp_path_factory) -> dict:
    """`resumed`'s run (see there); the project as a string."""
    import base64
    import time
    from adbench import recover
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    tmp = tmp_path_factory.mktemp("resumed")
    project = copy_project(tmp / "project")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, project / name)
    first_log = tmp / "first.log"  # a file, not a pipe nobody reads while we wait
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
    locked = bool(recover.lock_files(project))
    second = make_report(project)
    try:
        out, _ = second.communicate(timeout=1800)  # hang guard only (smoke sizes take ~1-2 min)
    finally:
        if second.poll() is None:  # the guard fired: stop the run this fixture started
            kill_group(second)
    MEASURED["kill-and-resume (make report after SIGKILL, smoke sizes)"] = time.perf_counter() - t_kill
    return {"project": str(project), "out": out, "returncode": second.returncode, "running": running,
            "locked_after_kill": locked, "tree": tree_state(project)}


def values(result):
    """A measurement's values table as quantity -> value (the unit tests' usual view of it)."""
    return result["values"].set_index("quantity")["value"]


def dry_run(project: Path, *extra: str, env: dict | None = None) -> set[str]:
    """The rules a smoke-config dry run in `project` would run (rule all left out)."""
    res = snakemake(project, "--cores", "2", "-n", *SMOKE, *extra, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = planned_jobs(res.stdout + res.stderr)
    jobs.pop("all", None)
    return set(jobs)
