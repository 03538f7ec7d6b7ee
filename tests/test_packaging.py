"""Pins live in pyproject.toml; envs/ mirrors them; README and CI use the two documented commands."""

import re
import tomllib

import yaml

from conftest import ROOT


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _pins():
    return _project()["dependencies"]


def _lines(path):
    return [line.strip() for line in (ROOT / path).read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_torch_is_pinned_exactly():
    assert "torch==2.13.0" in _pins()
    assert all("==" in p for p in _pins())


def test_envs_mirror_pyproject():
    assert _lines("envs/requirements.txt") == _pins()
    env = yaml.safe_load((ROOT / "envs/adbench.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert [p for p in pip if not p.startswith("-e")] == _pins()
    assert _lines("envs/requirements-test.txt") == _project()["optional-dependencies"]["test"]


def test_test_tools_are_an_extra_not_runtime_dependencies():
    names = {p.split("==")[0] for p in _pins()}
    assert not names & {"pytest", "playwright", "snakefmt"}, names  # `make report` must not need them
    assert {p.split("==")[0] for p in _project()["optional-dependencies"]["test"]} == {"pytest", "playwright", "snakefmt"}
    make = (ROOT / "Makefile").read_text()
    test_deps = re.search(r"^test:(.*)$", make, re.M).group(1)
    report_deps = re.search(r"^report:(.*)$", make, re.M).group(1)
    assert "TEST_STAMP" in test_deps and "TEST_STAMP" not in report_deps
    assert "requirements-test.txt" in make


def test_readme_quick_start_has_exactly_the_two_commands():
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", quick, re.S)
    commands = [line.strip() for b in blocks for line in b.splitlines() if line.strip() and not line.startswith("#")]
    assert commands == ["make report", "make test"]


def test_ci_runs_the_readme_test_command():
    lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines[-1] == "make test"
