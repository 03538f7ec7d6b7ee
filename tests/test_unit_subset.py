"""`make unit` (pytest --unit): heavy tests are left out, an unmarked test that starts Snakemake fails with the
marker to add; and quantity names never carry a configured value (the value is a note; the documented row
declares the configuration item it was measured under)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import HEAVY, ROOT, starts_snakemake


SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")  # this environment's entry script


@pytest.mark.parametrize("args, expected", [
    ([sys.executable, "-m", "snakemake", "--cores", "1"], True),
    ([SNAKEMAKE, "-n"], True),
    ([sys.executable, SNAKEMAKE, "-n"], True),
    (f"{SNAKEMAKE} --unlock", True),
    (["make", "report", "CORES=2"], True),
    (["make", "-n", "report", "TORCH=pypi"], False),  # a dry run prints the recipe only
    ([sys.executable, "-c", "import snakemake_interface_common"], False),  # control: a name that only contains it
    (["/no/such/bin/snakemake", "-n"], False),
    (["make", "setup", "PYTHON=python3.11"], False),
    ([Path(sys.executable), "-V"], False),
    (Path(sys.executable), False),
])
def test_which_subprocesses_start_snakemake(args, expected):
    assert starts_snakemake(args) is expected


def test_a_stand_in_named_snakemake_is_not_snakemake(tmp_path):
    """tests/test_recover.py's sleeping fake has Snakemake's name, not its code."""
    fake = tmp_path / "bin" / "snakemake"
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(60)\n")
    assert not starts_snakemake([sys.executable, str(fake)])
    fake.write_text("from snakemake.cli import main\nmain()\n")  # control: the entry script's own text
    assert starts_snakemake([sys.executable, str(fake)])


def test_the_declared_markers_are_the_heavy_ones():
    """pyproject's markers (which --strict-markers allows) are exactly the ones --unit leaves out."""
    import tomllib

    text = (ROOT / "pyproject.toml").read_text()
    markers = tomllib.loads(text)["tool"]["pytest"]["ini_options"]["markers"]
    assert [m.split(":")[0] for m in markers] == list(HEAVY)
    assert "--strict-markers" in tomllib.loads(text)["tool"]["pytest"]["ini_options"]["addopts"]


INNER = '''
import subprocess, sys
import pytest

FAKE = [sys.executable, "-c", "pass", "-m", "snakemake"]  # counts as starting Snakemake; runs nothing


def test_unmarked_starts_snakemake():
    subprocess.run(FAKE, check=True)


@pytest.mark.dag
def test_marked_starts_snakemake():
    subprocess.run(FAKE, check=True)


@pytest.fixture(scope="module")
def started():
    subprocess.run(FAKE, check=True)


def test_unmarked_through_a_module_fixture(started):
    pass


def test_unmarked_plain_subprocess():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.fullsize
def test_heavy_left_out():
    pass
'''


@pytest.fixture
def inner(pytester):
    """A test directory with this suite's conftest and INNER's tests."""
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_inner=INNER)
    return pytester


def test_unit_leaves_heavy_tests_out_and_fails_an_unmarked_snakemake_start(inner):
    res = inner.runpytest_subprocess("--unit", "-p", "no:cacheprovider", "--strict-markers",
                                     "-o", "markers=" + "\n".join(HEAVY))
    res.assert_outcomes(passed=1, errors=1, failed=1, deselected=2)
    out = res.stdout.str()
    assert "test_unmarked_starts_snakemake starts Snakemake but carries none of the markers" in out
    assert "mark it @pytest.mark.dag" in out
    assert "test_unmarked_through_a_module_fixture starts Snakemake" in out  # the fixture's start is caught too


def test_negative_control_without_unit_everything_runs_unguarded(inner):
    res = inner.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "-o", "markers=" + "\n".join(HEAVY))
    res.assert_outcomes(passed=5)


# ---- two workers: tests that share an expensive fixture run on one ----------------------------------------------
SHARED = {
    "conftest_extra": """
import os, pytest

@pytest.fixture(scope="session")
def expensive(tmp_path_factory):
    with open(os.environ["BUILDS"], "a") as f:  # one line per build, whichever worker builds it
        f.write("expensive\\n")
""",
    "test_one": """
import pytest

@pytest.fixture(scope="module")
def per_module():
    pass

def test_a(expensive): pass
def test_b(expensive, per_module): pass
def test_c(expensive): pass
def test_d(tmp_path_factory): pass  # pytest's own session fixture: no group
def test_e(per_module): pass
""",
    "test_two": """
def test_f(expensive): pass
def test_g(expensive): pass
def test_h(expensive): pass
def test_i(): pass
def test_j(): pass
""",
}


@pytest.fixture
def shared(pytester, monkeypatch):
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text() + SHARED["conftest_extra"])
    pytester.makepyfile(test_one=SHARED["test_one"], test_two=SHARED["test_two"])
    builds = pytester.path / "builds.txt"
    monkeypatch.setenv("BUILDS", str(builds))
    return pytester, builds


def test_a_shared_session_fixture_puts_its_tests_in_one_group(shared):
    pytester, _ = shared
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider")
    named = {i.name: (m.args or [m.kwargs.get("name")])[0] if (m := i.get_closest_marker("xdist_group")) else None
             for i in items}
    # test_b joins the module fixture to the session one: a, b, c, e (per_module), f, g, h form one group
    assert {n for n, g in named.items() if g} == {"test_a", "test_b", "test_c", "test_e", "test_f", "test_g", "test_h"}
    assert len({g for g in named.values() if g}) == 1
    assert named["test_d"] is None and named["test_i"] is None  # tmp_path_factory is pytest's, not the suite's


@pytest.mark.slow
def test_under_two_workers_the_shared_fixture_is_built_once(shared):
    pytester, builds = shared
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup")
    res.assert_outcomes(passed=10)
    assert builds.read_text().splitlines() == ["expensive"]
    builds.unlink()  # control: xdist's plain load scheduling ignores the groups, and both workers build it
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "load")
    res.assert_outcomes(passed=10)
    assert builds.read_text().splitlines() == ["expensive", "expensive"]


ONCE = """
import os, pytest
from conftest import once_per_run, shared_by_workers

def _build():
    with open(os.environ["BUILDS"], "a") as f:
        f.write("built\\n")
    if os.environ.get("BREAK"):
        raise RuntimeError("the build broke")
    return {"answer": 42}

@pytest.fixture(scope="session")
@shared_by_workers
def built_once(tmp_path_factory):
    return once_per_run(tmp_path_factory, "built_once", _build)
""" + "".join(f"\ndef test_{i}(built_once):\n    assert built_once == {{'answer': 42}}\n" for i in range(8))


@pytest.mark.slow
def test_a_once_per_run_fixture_is_built_once_and_its_tests_spread_over_both_workers(pytester, monkeypatch):
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_once=ONCE)
    builds = pytester.path / "builds.txt"
    monkeypatch.setenv("BUILDS", str(builds))
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-v")
    res.assert_outcomes(passed=8)
    assert builds.read_text().splitlines() == ["built"]
    assert {"[gw0]", "[gw1]"} <= set(res.stdout.str().split())  # no group: both workers ran its tests
    builds.unlink()
    monkeypatch.setenv("BREAK", "1")  # a failed build fails every test that asks, and is not retried
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup")
    res.assert_outcomes(errors=8)
    assert builds.read_text().splitlines() == ["built"]
    assert "failed on another worker: RuntimeError: the build broke" in res.stdout.str()


SHARED_TREE = """
import time, pytest
from conftest import READ_ONLY, copy_completed, tree_state

@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    root = tmp_path_factory.mktemp("shared") / "project"
    (root / ".snakemake").mkdir(parents=True)
    (root / "config.yaml").write_text("a: 1\\n")
    READ_ONLY["shared"] = (str(root), tree_state(root))
    return root

def test_reads(shared):
    assert (shared / "config.yaml").read_text() == "a: 1\\n"
    (shared / ".snakemake" / "dry-run.log").write_text("Snakemake's own records are no content")

def test_edits_a_copy(shared, tmp_path):
    copy = copy_completed(shared, tmp_path / "copy")
    (copy / "config.yaml").write_text("a: 2\\n")

def test_edits_and_restores(shared):
    original = (shared / "config.yaml").read_text()
    (shared / "config.yaml").write_text("a: 2\\n")
    time.sleep(0.01)
    (shared / "config.yaml").write_text(original)

def test_adds_a_file(shared):
    (shared / "extra.yaml").write_text("b: 1\\n")
"""


def test_a_test_that_edits_a_shared_project_fails_even_if_it_restores_it(pytester):
    """Tests on both workers read the session's smoke run at once, so an edit, even one undone at the end of the
    test, races with them (a dry run saw another test's config edit: stop 38's CI). The guard fails such a test."""
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_shared=SHARED_TREE)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-rA")
    res.assert_outcomes(passed=4, errors=2)  # the two editing tests pass their body and error in teardown
    out = res.stdout.str()
    assert "ERROR at teardown of test_edits_and_restores" in out and "changed config.yaml" in out
    assert "ERROR at teardown of test_adds_a_file" in out and "added extra.yaml" in out
    assert "PASSED test_shared.py::test_reads" in out  # control: a read, and a write to .snakemake/, pass
    assert "PASSED test_shared.py::test_edits_a_copy" in out  # control: the copy may be edited


# ---- quantity names ----------------------------------------------------------------------------------------
def _names_and_notes(result, prefixes: tuple[str, ...]) -> dict[str, str]:
    v = result["values"]
    return dict(zip(v.quantity, v.note)) if not prefixes else {
        q: n for q, n in zip(v.quantity, v.note) if q.startswith(prefixes)}


def test_p2_names_are_fixed_and_the_gradient_is_the_note():
    from adbench.precision.formats import measure_p2

    shipped = _names_and_notes(measure_p2([1e-4, 1e-6, 1e-7, 1e-8]), ("cast_", "subnormal_steps_"))
    other = _names_and_notes(measure_p2([3e-5, 2e-6, 5e-8, 4e-9]), ("cast_", "subnormal_steps_"))
    assert list(shipped) == list(other) == [f"cast_grad{i}" for i in range(4)] + [
        f"subnormal_steps_grad{i}" for i in range(4)]
    assert shipped["cast_grad2"] == "precision.fp16_grads[2] = 1e-07"
    assert other["cast_grad2"] == "precision.fp16_grads[2] = 5e-08"  # control: the note moves with the value


def test_c1_surprise_names_are_fixed_and_the_probability_is_the_note():
    from adbench.charlm.summary import surprise_rows

    rows, notes = surprise_rows([1.0, 0.01])
    assert rows == [("surprise_prob0", 0.0), ("surprise_prob1", pytest.approx(4.605170185988091, abs=1e-15))]
    assert notes == {"surprise_prob0": "charlm.surprise_probabilities[0] = 1",
                     "surprise_prob1": "charlm.surprise_probabilities[1] = 0.01"}
    other, other_notes = surprise_rows([0.5, 0.25, 0.125])
    assert [n for n, _ in other] == ["surprise_prob0", "surprise_prob1", "surprise_prob2"]
    assert other_notes["surprise_prob1"] == "charlm.surprise_probabilities[1] = 0.25"  # control: the note moves


def test_documented_rows_follow_the_names_and_declare_their_item():
    """Every renamed row is measured under the shipped config, and a changed item leaves exactly its row
    unjudged, naming the key (the others stay judged)."""
    import yaml

    from adbench.verdicts import documented
    from adbench.verdicts.verdict import compare
    from adbench.precision.formats import measure_p2

    doc = documented.load()
    rows = doc[(doc.id == "P2") & doc.quantity.str.match(r"(cast|subnormal_steps)_")]
    assert set(rows.quantity) == {"cast_grad0", "cast_grad1", "cast_grad2", "cast_grad3", "subnormal_steps_grad2"}
    settings = yaml.safe_load((ROOT / "config.yaml").read_text())
    grads = settings["precision"]["fp16_grads"]
    out = compare(rows, measure_p2(grads)["values"], settings=settings).set_index("quantity")
    assert set(out.status) == {"match"}, out[["status", "note"]]
    moved = {**settings, "precision": {**settings["precision"], "fp16_grads": [grads[0], 2e-6, *grads[2:]]}}
    out = compare(rows, measure_p2(moved["precision"]["fp16_grads"])["values"], settings=moved).set_index("quantity")
    assert out.status["cast_grad1"] == "not judged", out.loc["cast_grad1"]
    assert "precision.fp16_grads[1] = 2e-06; documents 1e-06" in out.note["cast_grad1"]
    assert set(out.status.drop("cast_grad1")) == {"match"}  # control: the other items are still judged
    c1 = doc[(doc.id == "C1") & doc.quantity.str.startswith("surprise_")].set_index("quantity").config
    assert c1.to_dict() == {"surprise_prob0": "charlm.surprise_probabilities[0]=1.0",
                            "surprise_prob1": "charlm.surprise_probabilities[1]=0.01"}
    assert settings["charlm"]["surprise_probabilities"] == [1.0, 0.01]
