"""Pins live in pyproject.toml; envs/lock.txt is their one hashed resolution (runtime + test) and every
other file in envs/ derives from it; README and CI use the two documented commands.

Each check is a function returning its problems, so every negative control feeds it a broken copy."""

import re
import runpy
import subprocess
import sys
import tomllib

import pytest
import yaml

from conftest import ROOT

TEST_TOOLS = {"pytest", "pytest-xdist", "playwright", "snakefmt"}
conda_env = runpy.run_path(str(ROOT / "envs" / "conda_env.py"))


def _project(text=None):
    return tomllib.loads(text if text is not None else (ROOT / "pyproject.toml").read_text())["project"]


def _pins():
    return _project()["dependencies"]


def _read(path):
    return (ROOT / path).read_text()


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_lock(text: str) -> dict[str, dict]:
    """name -> {version, hashes, via} of a `uv pip compile --generate-hashes` file."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(?:\s*\\)?$", line)
        if m:
            current = out[norm(m.group(1))] = {"version": m.group(2), "hashes": [], "via": []}
        elif current is not None and (h := re.match(r"^\s+--hash=(sha256:[0-9a-f]{64})", line)):
            current["hashes"].append(h.group(1))
        elif current is not None and (v := re.match(r"^\s+#\s+(?:via\s+)?(\S.*)$", line)):
            current["via"].append(v.group(1).strip())
        elif line.strip() and not line.startswith("#") and not line.startswith(" "):
            raise ValueError(f"unreadable lock line: {line!r}")
    return out


def pin_problems(pins: list[str], lock: dict) -> list[str]:
    """Every direct pin of pyproject.toml is in the lock at the same version."""
    problems = []
    for pin in pins:
        name, _, version = pin.partition("==")
        got = lock.get(norm(name), {}).get("version")
        if got != version:
            problems.append(f"{pin}: lock has {got}")
    return problems


def direct_problems(pins: list[str], lock: dict) -> list[str]:
    """The lock attributes to pyproject.toml exactly its pins: none added or dropped since `make lock`."""
    direct = {n for n, e in lock.items() if any(v.startswith("adbench") for v in e["via"])}
    wanted = {norm(p.partition("==")[0]) for p in pins}
    return [f"in pyproject, not locked as direct: {sorted(wanted - direct)}"] * bool(wanted - direct) + \
        [f"locked as direct, not in pyproject: {sorted(direct - wanted)}"] * bool(direct - wanted)


def hash_problems(lock: dict) -> list[str]:
    return [f"{n}=={e['version']} has no hash" for n, e in lock.items() if not e["hashes"]]


def runtime_problems(runtime: dict, lock: dict, runtime_pins: list[str]) -> list[str]:
    """envs/requirements.txt is the runtime part of the lock: same versions and hashes, no test tools."""
    problems = [f"{n}: runtime {e['version']} {len(e['hashes'])} hashes, lock "
                f"{lock.get(n, {}).get('version')} {len(lock.get(n, {}).get('hashes', []))} hashes"
                for n, e in runtime.items() if lock.get(n, {}).get("version") != e["version"]
                or sorted(lock.get(n, {}).get("hashes", [])) != sorted(e["hashes"])]
    problems += [f"test tool {t} in the runtime lock" for t in TEST_TOOLS & runtime.keys()]
    return problems + pin_problems(runtime_pins, runtime)


def freeze_problems(installed: dict[str, str], lock: dict) -> list[str]:
    """An environment installed from the lock holds exactly the lock (plus the project and pip)."""
    have = {norm(n): v for n, v in installed.items()} | {}
    have.pop("adbench", None)
    have.pop("pip", None)  # the venv's own installer, not a dependency
    want = {n: e["version"] for n, e in lock.items()}
    return [f"{n}: installed {have.get(n)}, locked {want.get(n)}" for n in sorted(have.keys() | want.keys())
            if have.get(n) != want.get(n)]


def _conda_pip(text: str) -> list[str]:
    env = yaml.safe_load(text)
    return next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))


LOCK = parse_lock(_read("envs/lock.txt"))
RUNTIME = parse_lock(_read("envs/requirements.txt"))
ALL_PINS = _pins() + _project()["optional-dependencies"]["test"]


def test_torch_is_pinned_exactly_to_its_cpu_build():
    assert "torch==2.13.0+cpu" in _pins()
    assert all("==" in p for p in ALL_PINS)
    assert LOCK["torch"]["version"] == "2.13.0+cpu"
    assert not [n for n in LOCK if n.startswith(("nvidia-", "triton"))]  # no CUDA stack in the lock


def test_every_direct_pin_is_locked_at_its_version():
    assert pin_problems(ALL_PINS, LOCK) == []
    assert direct_problems(ALL_PINS, LOCK) == []


def test_negative_control_a_moved_or_added_pin_is_caught():
    moved = [p.replace("numpy==2.4.6", "numpy==2.4.5") for p in ALL_PINS]
    assert pin_problems(moved, LOCK) == ["numpy==2.4.5: lock has 2.4.6"]
    assert direct_problems(ALL_PINS + ["rich==14.0.0"], LOCK) != []   # added to pyproject, not relocked
    assert direct_problems(ALL_PINS[1:], LOCK) != []                  # dropped from pyproject, still locked


def test_every_lock_line_has_a_hash():
    assert len(LOCK) > len(ALL_PINS) and len(RUNTIME) > len(_pins())   # the whole resolution, not the pins
    assert hash_problems(LOCK) == [] and hash_problems(RUNTIME) == []
    uv = parse_lock(_read("envs/uv.txt"))
    assert list(uv) == ["uv"] and hash_problems(uv) == []
    assert re.search(r"^uv==" + re.escape(uv["uv"]["version"]) + "$", _read("envs/uv.in"), re.M)


def test_negative_control_an_unhashed_line_is_caught():
    text = re.sub(r"(\njinja2==3\.1\.6) \\\n(\s+--hash=\S+( \\)?\n)+", r"\1\n", _read("envs/lock.txt"))
    assert hash_problems(parse_lock(text)) == ["jinja2==3.1.6 has no hash"]
    with pytest.raises(ValueError, match="unreadable"):
        parse_lock("jinja2>=3\n")   # an unpinned line is not silently skipped


def test_runtime_lock_is_the_runtime_part_of_the_lock():
    assert runtime_problems(RUNTIME, LOCK, _pins()) == []
    assert TEST_TOOLS <= LOCK.keys()


def test_negative_control_a_runtime_lock_that_drifts_is_caught():
    drift = {**RUNTIME, "numpy": {**RUNTIME["numpy"], "version": "2.4.5"}}
    assert any(p.startswith("numpy:") for p in runtime_problems(drift, LOCK, _pins()))
    rehashed = {**RUNTIME, "numpy": {**RUNTIME["numpy"], "hashes": ["sha256:" + "0" * 64]}}
    assert runtime_problems(rehashed, LOCK, _pins()) != []
    assert runtime_problems({**RUNTIME, "pytest": LOCK["pytest"]}, LOCK, _pins()) == ["test tool pytest in the runtime lock"]
    less = {n: e for n, e in RUNTIME.items() if n != "psutil"}
    assert runtime_problems(less, LOCK, _pins()) == ["psutil==7.2.2: lock has None"]


def test_conda_env_is_generated_from_the_runtime_lock():
    text = _read("envs/adbench.yaml")
    assert text == conda_env["render"](_read("envs/requirements.txt"))
    pip = _conda_pip(text)
    assert pip[-1] == "-e ../.."   # relative to .snakemake/conda/, where Snakemake copies the file
    assert pip[:-1] == [f"{n}=={e['version']}" for n, e in RUNTIME.items()]


def test_negative_control_an_edited_conda_env_is_caught():
    text = _read("envs/adbench.yaml")
    edited = text.replace("numpy==2.4.6", "numpy==2.4.5")
    assert edited != text and edited != conda_env["render"](_read("envs/requirements.txt"))
    assert conda_env["pins"]("a==1 \\\n    --hash=sha256:00\nb-c==2.0+cpu\n    # via x\n") == ["a==1", "b-c==2.0+cpu"]


def _installed():
    import importlib.metadata as md
    return {d.metadata["Name"]: d.version for d in md.distributions()}


@pytest.mark.skipif(not (ROOT / ".venv" / ".installed-test").exists() or sys.prefix != str(ROOT / ".venv"),
                    reason="runs in the .venv that `make test` installed from envs/lock.txt")
def test_this_environment_is_exactly_the_lock():
    assert freeze_problems(_installed(), LOCK) == []


def test_negative_control_an_environment_off_the_lock_is_caught():
    exact = {n: e["version"] for n, e in LOCK.items()} | {"adbench": "0.1.0", "pip": "25.0"}
    assert freeze_problems(exact, LOCK) == []
    assert freeze_problems(exact | {"numpy": "2.4.5"}, LOCK) == ["numpy: installed 2.4.5, locked 2.4.6"]
    assert freeze_problems(exact | {"rich-extra": "1"}, LOCK) == ["rich-extra: installed 1, locked None"]
    assert freeze_problems({n: v for n, v in exact.items() if n != "yte"}, LOCK) == ["yte: installed None, locked 1.9.4"]


def test_set_up_installs_exactly_the_locks():
    make = _read("Makefile")
    test_deps = re.search(r"^\$\(TEST_STAMP\):(.*)$", make, re.M).group(1)
    stamp_deps = re.search(r"^\$\(STAMP\):(.*)$", make, re.M).group(1)
    assert "$(RUNTIME_LOCK)" in stamp_deps and "$(FULL_LOCK)" in test_deps
    assert "RUNTIME_LOCK := envs/requirements$(VARIANT).txt" in make and "FULL_LOCK := envs/lock$(VARIANT).txt" in make
    install = re.search(r"^define install\n(.*?)^endef", make, re.M | re.S).group(1)
    assert "--require-hashes --no-deps -r $(1)" in install            # pip: the lock's files, no resolution
    assert "pip sync --quiet --python $(VPY) --require-hashes $(1)" in install   # uv: the same
    assert "PYTHONDONTWRITEBYTECODE= $(VPY) envs/warm_bytecode.py" in make  # uv compiles no bytecode
    assert install.count("--no-deps") >= 3 and "-e ." in install
    assert "requirements-test.txt" not in make and not (ROOT / "envs" / "requirements-test.txt").exists()


def test_test_tools_are_an_extra_not_runtime_dependencies():
    names = {p.split("==")[0] for p in _pins()}
    assert not names & TEST_TOOLS, names  # `make report` must not need them
    assert {p.split("==")[0] for p in _project()["optional-dependencies"]["test"]} == TEST_TOOLS
    make = _read("Makefile")
    test_deps = re.search(r"^test:(.*)$", make, re.M).group(1)
    report_deps = re.search(r"^report:(.*)$", make, re.M).group(1)
    assert "TEST_STAMP" in test_deps and "TEST_STAMP" not in report_deps


def test_no_machine_configuration_in_committed_files():
    # The sources uv uses come from pip's configuration at run time (envs/uvrun.py), never from the files.
    source = r"file:|--(extra-)?index-url|--find-links|--no-index"
    for path in ("envs/lock.txt", "envs/requirements.txt", "envs/uv.txt", "envs/adbench.yaml", "envs/lock-pypi.txt",
                 "envs/requirements-pypi.txt", "envs/adbench-pypi.yaml", "envs/pypi-constraints.txt"):
        text = _read(path)
        assert not re.search(source + r"|(^|\s)/\w", text, re.M), path   # no source, no absolute path
    assert not re.search(source, _read("Makefile"))
    # negative control: what `uv pip compile --emit-find-links` would have written is caught
    assert re.search(source + r"|(^|\s)/\w", "--find-links /somewhere\n", re.M)


uvrun = runpy.run_path(str(ROOT / "envs" / "uvrun.py"))


def test_uv_gets_the_sources_pip_is_configured_with():
    listing = ("global.extra-index-url='file:///a/simple file:///b/simple'\nglobal.find-links='/w1 /w2'\n"
               "install.index-url='https://mirror/simple'\n:env:.find-links='/w3'\ndownload.index-url='x'\n")
    env = uvrun["uv_environment"](uvrun["parse"](listing), {})
    assert env == {"UV_INDEX_STRATEGY": "unsafe-best-match", "UV_INDEX": "file:///a/simple file:///b/simple",
                   "UV_FIND_LINKS": "/w3", "UV_DEFAULT_INDEX": "https://mirror/simple"}
    # negative control: without pip configuration uv gets no sources, and a variable already set wins
    assert uvrun["uv_environment"]({}, {}) == {"UV_INDEX_STRATEGY": "unsafe-best-match"}
    assert uvrun["uv_environment"]({"find-links": "/a /b"}, {"UV_FIND_LINKS": "/c"})["UV_FIND_LINKS"] == "/c"
    assert uvrun["uv_environment"]({"find-links": "/a /b"}, {})["UV_FIND_LINKS"] == "/a,/b"


@pytest.mark.slow
def test_conda_pip_step_from_where_snakemake_puts_the_env_file(tmp_path):
    """Conda writes the pip section to a requirements file beside the env file and runs pip there;
    Snakemake puts the env file in .snakemake/conda/. Reproduce that and let pip resolve (dry run)."""
    import json
    import shutil
    project = tmp_path / "project"
    for name in ("pyproject.toml", "README.md", "src"):
        src = ROOT / name
        shutil.copytree(src, project / name) if src.is_dir() else (project.mkdir(exist_ok=True), shutil.copy2(src, project / name))
    where = project / ".snakemake" / "conda"
    where.mkdir(parents=True)
    (where / "0123abcd.yaml").write_text(_read("envs/adbench.yaml"))
    (where / "condaenv.pip.requirements.txt").write_text("\n".join(_conda_pip(_read("envs/adbench.yaml"))) + "\n")
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
                          "--report", str(tmp_path / "report.json"), "-r", "condaenv.pip.requirements.txt"],
                         cwd=where, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    install = json.loads((tmp_path / "report.json").read_text())["install"]
    got = {norm(i["metadata"]["name"]): i["metadata"]["version"] for i in install}
    project_url = next(i["download_info"]["url"] for i in install if i["metadata"]["name"] == "adbench")
    assert project_url == project.as_uri()   # `-e ../..` is the project, seen from .snakemake/conda/
    assert {n: v for n, v in got.items() if n != "adbench"} == {n: e["version"] for n, e in RUNTIME.items()}


def test_readme_quick_start_has_exactly_the_two_commands():
    text = _read("README.md")
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", quick, re.S)
    commands = [line.strip() for b in blocks for line in b.splitlines() if line.strip() and not line.startswith("#")]
    assert commands == ["make report", "make test"]


def test_ci_runs_the_readme_test_command():
    lines = [line.strip() for line in _read(".ci/run").splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines[-1] == "make test"


def _pip_editable_from_conda_dir(tmp_path, spec):
    import shutil
    project = tmp_path / "project"
    shutil.copytree(ROOT / "src", project / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, project / name)
    where = project / ".snakemake" / "conda"
    where.mkdir(parents=True)
    return subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "-e", spec],
                          cwd=where, capture_output=True, text=True, timeout=300)


def test_the_conda_env_names_the_project_as_seen_from_snakemakes_copy(tmp_path):
    spec = _conda_pip(_read("envs/adbench.yaml"))[-1].removeprefix("-e ").strip()
    assert _pip_editable_from_conda_dir(tmp_path, spec).returncode == 0


def test_negative_control_the_old_path_misses_the_project_from_there(tmp_path):
    res = _pip_editable_from_conda_dir(tmp_path, "..")   # the path the env file had: .snakemake/, no project
    assert res.returncode != 0 and "does not appear to be a Python project" in res.stderr, res.stderr[-2000:]
