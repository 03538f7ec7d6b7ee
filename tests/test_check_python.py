"""scripts/check_python.py: the interpreter is refused before anything is installed, with the supported range."""

import os
import runpy
import shutil
import stat
import subprocess
import sys
import tomllib

import pytest

from conftest import ROOT

CHECK = ROOT / "scripts" / "check_python.py"
cp = runpy.run_path(str(CHECK))  # the script's functions, without running main
SPEC = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]


def test_the_range_is_read_from_pyproject():
    assert cp["requires_python"]((ROOT / "pyproject.toml").read_text()) == SPEC == ">=3.11,<3.12"
    assert cp["requires_python"]("[project]\nname = 'x'\n  requires-python = '>=3.9'\n") == ">=3.9"
    with pytest.raises(ValueError, match="no requires-python"):
        cp["requires_python"]("[project]\nname = 'x'\n")


@pytest.mark.parametrize("version, ok", [
    ((3, 11, 0), True), ((3, 11, 7), True), ((3, 11, 99), True),
    ((3, 10, 14), False), ((3, 12, 0), False), ((3, 12, 3), False), ((2, 7, 18), False), ((4, 0, 0), False),
])
def test_supported_and_unsupported_versions(version, ok):
    assert cp["satisfies"](version, SPEC) is ok


@pytest.mark.parametrize("spec, yes, no", [
    ("==3.11.*", (3, 11, 4), (3, 12, 0)),
    ("!=3.11.*,>=3.10", (3, 12, 0), (3, 11, 4)),
    ("~=3.11", (3, 13, 1), (3, 10, 9)),
    ("~=3.11.2", (3, 11, 5), (3, 12, 0)),
    (">3.11", (3, 11, 1), (3, 11, 0)),
    ("<=3.11.4, >= 3.11.2", (3, 11, 4), (3, 11, 5)),
])
def test_other_specifier_forms(spec, yes, no):
    assert cp["satisfies"](yes, spec) and not cp["satisfies"](no, spec)


def test_an_unreadable_clause_is_an_error_not_a_pass():
    for spec in (">=3.11,<3.12a", "3.11", ">=3.11.*"):
        with pytest.raises(ValueError, match="cannot read"):
            cp["satisfies"]((3, 11, 0), spec)


def test_message_names_the_version_the_range_and_what_to_set():
    assert cp["message"]((3, 12, 3), SPEC) == \
        "Python 3.12.3 is not supported: adbench needs >=3.11,<3.12 (set PYTHON=python3.11)"
    assert cp["message"]((3, 12, 3), SPEC, ".venv") == ("Python 3.12.3 is not supported: adbench needs "
                                                       ">=3.11,<3.12 (.venv was made with it: remove it, "
                                                       "then set PYTHON=python3.11)")
    assert cp["newest_supported"](">=3.11,<3.14") == "python3.13"
    assert cp["newest_supported"]("<3") is None


@pytest.mark.parametrize("version, rc", [((3, 11, 7), 0), ((3, 12, 3), 1)])
def test_main_exits_0_silently_or_1_with_the_line(monkeypatch, capsys, version, rc):
    monkeypatch.setattr(sys, "version_info", (*version, "final", 0))
    assert cp["main"]([]) == rc
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == ("" if rc == 0 else "Python 3.12.3 is not supported: adbench needs >=3.11,<3.12 "
                       "(set PYTHON=python3.11)\n")


def test_this_interpreter_passes_as_a_script():
    res = subprocess.run([sys.executable, str(CHECK)], capture_output=True, text=True, timeout=60)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


# A stand-in interpreter for the Makefile: it logs every call; the check runs for real under the
# version baked into it; `-m venv DIR` makes DIR/bin/python a copy of itself; anything else (pip)
# succeeds without doing anything.
FAKE = """#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$1" in
  *check_python.py) script="$1"; shift
    exec {python} -c "import runpy, sys; sys.version_info = ({version}, 'final', 0); \\
sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')" "$script" "$@";;
  -m) if [ "$2" = venv ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi;;
esac
exit 0
"""


def _fake_python(path, version: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE.format(python=sys.executable, version=version))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _make_setup(project, python, log):
    env = {**os.environ, "FAKE_LOG": str(log)}
    return subprocess.run(["make", "setup", f"PYTHON={python}"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def setup_project(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    project = tmp_path / "project"
    for name in ("Makefile", "pyproject.toml", "envs/requirements.txt", "envs/lock.txt", "scripts/check_python.py"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, project / name)
    return project


def test_make_setup_refuses_python_3_12_before_any_install(setup_project, tmp_path):
    log = tmp_path / "calls.log"
    python = _fake_python(tmp_path / "bin" / "python3.12", "3, 12, 3")
    res = _make_setup(setup_project, python, log)
    assert res.returncode != 0
    assert "Python 3.12.3 is not supported: adbench needs >=3.11,<3.12 (set PYTHON=python3.11)" in res.stderr
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and calls[0].endswith("scripts/check_python.py"), calls   # no venv, no pip
    assert not (setup_project / ".venv").exists()


def test_negative_control_make_setup_with_python_3_11_goes_on_to_install(setup_project, tmp_path):
    log = tmp_path / "calls.log"
    python = _fake_python(tmp_path / "bin" / "python3.11", "3, 11, 7")
    res = _make_setup(setup_project, python, log)
    assert res.returncode == 0, res.stdout + res.stderr
    calls = log.read_text().splitlines()
    assert calls[0].endswith("scripts/check_python.py") and calls[1].startswith("envs/preflight.py"), calls
    assert calls[2] == "-m venv .venv", calls   # the torch preflight (tests/test_setup_routes.py) runs first
    assert any("pip install" in c and "-e ." in c for c in calls[3:]), calls
    assert (setup_project / ".venv" / ".installed").exists()


def test_make_setup_refuses_a_venv_made_with_an_unsupported_python(setup_project, tmp_path):
    log = tmp_path / "calls.log"
    _fake_python(setup_project / ".venv" / "bin" / "python", "3, 12, 3")  # a 3.12 venv left by an old attempt
    python = _fake_python(tmp_path / "bin" / "python3.11", "3, 11, 7")
    res = _make_setup(setup_project, python, log)
    assert res.returncode != 0
    assert "Python 3.12.3 is not supported: adbench needs >=3.11,<3.12 (.venv was made with it: remove it, " \
           "then set PYTHON=python3.11)" in res.stderr
    assert [c for c in log.read_text().splitlines() if "pip" in c] == []
