"""Set-up routes: the torch preflight stops a machine without the build's index in seconds with the fix; the
TORCH=pypi lock is PyPI's torch with the CPU lock's stack around it; BIN=<dir> names what it lacks in one
line; meta.json's lock_sha256 is null for an environment that does not hold the lock."""

import os
import re
import runpy
import shutil
import subprocess
import sys
import time

import pytest

from adbench import provenance
from conftest import ROOT

pre = runpy.run_path(str(ROOT / "envs" / "preflight.py"))
conda_env = runpy.run_path(str(ROOT / "envs" / "conda_env.py"))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
CPU = provenance.lock_pins((ROOT / "envs" / "lock.txt").read_text())
PYPI = provenance.lock_pins((ROOT / "envs" / "lock-pypi.txt").read_text())
PYPI_RUNTIME = provenance.lock_pins((ROOT / "envs" / "requirements-pypi.txt").read_text())
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _hidden_sources_env() -> dict[str, str]:
    """This environment with every package source of pip and uv hidden: a stock machine reaching PyPI only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    return env | {"PIP_CONFIG_FILE": os.devnull}


def _project(tmp_path):
    """A copy of what set-up reads, without a .venv."""
    project = tmp_path / "project"
    for name in ("Makefile", "pyproject.toml", "scripts/check_python.py", "envs"):
        src, dst = ROOT / name, project / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy2(src, dst)
    return project


# --- the preflight's pieces, against hand-written oracles ---

@pytest.mark.parametrize("name, fits", [
    ("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", True),
    ("torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl", True),       # as an index page escapes it
    ("torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl", False),        # another Python
    ("torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_aarch64.whl", False),       # another CPU
    ("torch-2.13.0+cpu-cp311-cp311-win_amd64.whl", False),                    # another OS
    ("torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl", False),            # PyPI's build, not +cpu
    ("torch-2.13.0+cu126-cp311-cp311-manylinux_2_28_x86_64.whl", False),
    ("torch-2.13.0+cpu.tar.gz", False),
])
def test_a_wheel_fits_only_its_version_python_and_platform(name, fits):
    assert pre["wheel_fits"](name, "2.13.0+cpu", (3, 11), "Linux", "x86_64") is fits


def test_macos_wheels_fit_apple_silicon():
    name = "torch-2.13.0-cp311-none-macosx_11_0_arm64.whl"
    assert pre["wheel_fits"](name, "2.13.0", (3, 11), "Darwin", "arm64")
    assert not pre["wheel_fits"](name, "2.13.0", (3, 11), "Darwin", "x86_64")


def test_sources_are_find_links_then_local_then_remote_indexes():
    env = {"UV_FIND_LINKS": "/w1,/w2", "UV_INDEX": "https://mirror/simple file:///opt/simple",
           "UV_DEFAULT_INDEX": "https://proxy/simple"}
    assert pre["sources"](env) == [("find-links", "/w1"), ("find-links", "/w2"), ("index", "file:///opt/simple"),
                                   ("index", "https://mirror/simple"), ("index", "https://proxy/simple")]
    assert pre["sources"]({}) == [("index", "https://pypi.org/simple")]          # uv's default: PyPI
    assert pre["sources"]({"UV_NO_INDEX": "1", "UV_FIND_LINKS": "/w"}) == [("find-links", "/w")]
    assert pre["sources"]({"UV_INDEX": "pytorch=https://x/whl/cpu"}) == \
        [("index", "https://x/whl/cpu"), ("index", "https://pypi.org/simple")]   # uv's name=url form


def test_search_finds_the_build_in_a_local_find_links_folder_and_index(tmp_path):
    wheels, index = tmp_path / "wheels", tmp_path / "simple" / "torch"
    wheels.mkdir(), index.mkdir(parents=True)
    name = f"torch-2.13.0+cpu-cp{sys.version_info[0]}{sys.version_info[1]}-none-manylinux_2_28_x86_64.whl"
    (wheels / "numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    (index / "index.html").write_text(f'<a href="../../f/{name.replace("+", "%2B")}#sha256=00">x</a>')
    if not pre["platform_fits"]("manylinux_2_28_x86_64", pre["platform"].system(), pre["platform"].machine()):
        pytest.skip("the fabricated wheels are Linux x86_64 ones")
    found, notes = pre["search"]("2.13.0+cpu", [("find-links", str(wheels)), ("index", (tmp_path / "simple").as_uri())])
    assert (found, notes) == ((tmp_path / "simple").as_uri(), [str(wheels)])   # numpy alone does not count
    (wheels / name).write_bytes(b"")
    assert pre["search"]("2.13.0+cpu", [("find-links", str(wheels))]) == (str(wheels), [])
    # negative control: the right version of another build is not the lock's build
    assert pre["search"]("2.13.0", [("find-links", str(wheels))])[0] is None


def test_failure_names_the_index_and_both_commands():
    text = pre["failure"]("2.13.0+cpu", "envs/requirements.txt", ["https://pypi.org/simple"], "make report")
    assert f"PIP_EXTRA_INDEX_URL={CPU_INDEX} make report\n" in text and "    make report TORCH=pypi\n" in text
    assert "looked in: https://pypi.org/simple" in text


# --- the preflight inside `make`, on this machine ---

@needs_make
def test_set_up_with_the_package_sources_hidden_stops_at_once_with_the_fix(tmp_path):
    project = _project(tmp_path)
    start = time.monotonic()
    # `make setup` is what `make report` runs first (its $(STAMP) prerequisite); the wording for `make report` is
    # checked above. A hang guard, not a timing assertion: the time is printed.
    res = subprocess.run(["make", "setup", f"PYTHON={sys.executable}"], cwd=project, env=_hidden_sources_env(),
                         capture_output=True, text=True, timeout=120)
    print(f"set-up with sources hidden stopped after {time.monotonic() - start:.1f} s")
    assert res.returncode != 0
    assert f"That build is published on PyTorch's CPU index, {CPU_INDEX}" in res.stderr, res.stderr
    assert f"    PIP_EXTRA_INDEX_URL={CPU_INDEX} make setup\n" in res.stderr
    assert "    make setup TORCH=pypi\n" in res.stderr
    assert not (project / ".venv").exists()   # nothing created, nothing installed


def test_the_preflight_passes_with_this_machines_package_sources():
    start = time.monotonic()
    res = subprocess.run([sys.executable, str(ROOT / "envs" / "preflight.py"), str(ROOT / "envs" / "requirements.txt")],
                         capture_output=True, text=True, timeout=30)
    print(f"preflight on the happy path: {time.monotonic() - start:.1f} s")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("set-up: torch==2.13.0+cpu found in ")


@needs_make
@pytest.mark.parametrize("torch, runtime, full", [
    ("pypi", "envs/requirements-pypi.txt", "envs/lock-pypi.txt"),
    ("cpu", "envs/requirements.txt", "envs/lock.txt"),
])
def test_make_n_selects_the_variants_locks(tmp_path, torch, runtime, full):
    project = _project(tmp_path)
    res = subprocess.run(["make", "-n", "test", f"TORCH={torch}", f"PYTHON={sys.executable}"], cwd=project,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    syncs = re.findall(r"pip sync --quiet --python \S+ --require-hashes (\S+)", res.stdout)
    assert syncs == [runtime, full]
    assert f"envs/preflight.py {runtime}" in res.stdout and f"echo {torch} > .venv/.installed\n" in res.stdout
    report = subprocess.run(["make", "-n", "report", f"TORCH={torch}", f"PYTHON={sys.executable}"], cwd=project,
                            capture_output=True, text=True, timeout=60)
    assert re.findall(r"pip sync --quiet --python \S+ --require-hashes (\S+)", report.stdout) == [runtime]


@needs_make
def test_switching_torch_on_an_installed_venv_resyncs_it(tmp_path):
    project = _project(tmp_path)
    (project / ".venv" / "bin").mkdir(parents=True)
    (project / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (project / ".venv" / ".installed").write_text("cpu\n")   # newer than every lock: up to date for cpu
    run = lambda *a: subprocess.run(["make", "-n", "setup", *a], cwd=project, capture_output=True, text=True, timeout=60)
    assert "pip sync" not in run().stdout   # negative control: the same variant installs nothing
    assert "pip sync --quiet --python .venv/bin/python --require-hashes envs/requirements-pypi.txt" in run("TORCH=pypi").stdout
    bad = run("TORCH=cuda")
    assert bad.returncode != 0 and "TORCH=cuda is not a torch variant" in bad.stderr


# --- the PyPI variant's lock ---

def test_the_pypi_lock_is_pypis_torch_with_the_cpu_locks_stack():
    assert PYPI["torch"] == ("2.13.0", "") and CPU["torch"][0] == "2.13.0+cpu"
    text = (ROOT / "envs" / "lock-pypi.txt").read_text()
    torch_hashes = re.search(r"^torch==2\.13\.0 \\\n((?:\s+--hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", text, re.M)
    assert torch_hashes and torch_hashes.group(1).count("--hash") >= 4   # one per platform's wheel at least
    assert hash_less(text) == [] and hash_less((ROOT / "envs" / "requirements-pypi.txt").read_text()) == []
    assert moved(CPU, PYPI) == ["torch"]
    added = sorted(PYPI.keys() - CPU.keys())
    assert added and all(PYPI[n][1] for n in added)   # what PyPI's torch adds (CUDA stack) is marker-gated
    assert any(n.startswith("nvidia-cublas") and "linux" in PYPI[n][1] for n in added)
    assert PYPI_RUNTIME.keys() <= PYPI.keys() and all(PYPI[n][0] == v for n, (v, _) in PYPI_RUNTIME.items())
    assert not {"pytest", "playwright", "snakefmt"} & PYPI_RUNTIME.keys()


def hash_less(text: str) -> list[str]:
    """Pinned lines not followed by a --hash line."""
    lines = text.splitlines()
    return [ln for i, ln in enumerate(lines) if re.match(r"^[A-Za-z0-9].*==", ln)
            and not (i + 1 < len(lines) and "--hash=sha256:" in lines[i + 1])]


def moved(a: dict, b: dict) -> list[str]:
    """Packages in both locks at different versions."""
    return sorted(n for n in a.keys() & b.keys() if a[n][0] != b[n][0])


def test_negative_control_a_pypi_lock_that_drifts_is_caught():
    assert moved(CPU, PYPI | {"numpy": ("2.4.5", "")}) == ["numpy", "torch"]
    text = (ROOT / "envs" / "lock-pypi.txt").read_text()
    assert hash_less(re.sub(r"(\njinja2==\S+) \\\n(\s+--hash=\S+( \\)?\n)+", r"\1\n", text)) != []


def test_conda_environments_follow_their_runtime_locks():
    for lock, env in (("requirements.txt", "adbench.yaml"), ("requirements-pypi.txt", "adbench-pypi.yaml")):
        text = (ROOT / "envs" / lock).read_text()
        assert (ROOT / "envs" / env).read_text() == conda_env["render"](text, f"envs/{lock}")
    import yaml
    pip = next(d["pip"] for d in yaml.safe_load((ROOT / "envs" / "adbench-pypi.yaml").read_text())["dependencies"]
               if isinstance(d, dict))
    assert "torch==2.13.0" in pip and any(p.startswith("nvidia-cublas") and "sys_platform == 'linux'" in p for p in pip)


# --- BIN=<dir>: an environment of the user's own ---

def _hand_made_env(tmp_path, drop: str = ""):
    """A bin folder whose python sees a fabricated site-packages: every runtime package but `drop`, and adbench."""
    site, bin_dir = tmp_path / "env" / "site", tmp_path / "env" / "bin"
    site.mkdir(parents=True), bin_dir.mkdir(parents=True)
    names = {n: v for n, (v, _) in provenance.lock_pins((ROOT / "envs" / "requirements.txt").read_text()).items()}
    for name, version in (names | {"adbench": "0.1.0"}).items():
        if name != drop:
            info = site / f"{name.replace('-', '_')}-{version}.dist-info"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    # -S: no site-packages of the interpreter itself, so the fabricated folder is all it holds
    (bin_dir / "python").write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} -S "$@"\n')
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "snakemake").write_text("#!/bin/sh\n")
    (bin_dir / "snakemake").chmod(0o755)
    return bin_dir


@needs_make
def test_bin_missing_one_package_is_named_in_one_line(tmp_path):
    bin_dir = _hand_made_env(tmp_path, drop="pandas")
    res = subprocess.run(["make", "-s", "bin-check", f"BIN={bin_dir}"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode != 0
    assert res.stderr.splitlines()[0] == (f"BIN={bin_dir} lacks: pandas; install them (versions in "
                                          "envs/requirements.txt) or drop BIN=")


@needs_make
def test_negative_control_a_complete_bin_passes(tmp_path):
    bin_dir = _hand_made_env(tmp_path)
    res = subprocess.run(["make", "-s", "bin-check", f"BIN={bin_dir}"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert (res.returncode, res.stderr) == (0, ""), res.stderr


# --- provenance: the lock's sha256 only for an environment that holds it ---

def _exact(lock: dict) -> dict[str, str]:
    return {n: v for n, (v, mk) in lock.items() if provenance.marker_applies(mk)} | {"adbench": "0.1.0", "pip": "25"}


def test_lock_sha256_is_recorded_only_for_an_environment_that_holds_a_lock():
    runtime = provenance.lock_pins((ROOT / "envs" / "requirements.txt").read_text())
    for installed, name in ((_exact(runtime), "lock.txt"), (_exact(CPU), "lock.txt"), (_exact(PYPI_RUNTIME), "lock-pypi.txt")):
        got = provenance.lock_record(installed)
        assert got == {"lock": name, "lock_sha256": provenance.lock_sha256(ROOT / "envs" / name)}
    off = provenance.lock_record(_exact(runtime) | {"numpy": "2.4.5", "rich-extra": "1"})
    assert off == {"lock": None, "lock_sha256": None,
                   "lock_differs": {"lock": "lock.txt", "count": 2, "packages": ["numpy", "rich-extra"]}}
    less = {n: v for n, v in _exact(runtime).items() if n != "pandas"}
    assert provenance.lock_record(less)["lock_differs"]["packages"] == ["pandas"]


# --- make lock's pieces for the PyPI variant ---

uvrun = runpy.run_path(str(ROOT / "envs" / "uvrun.py"))
cpu_pins = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'envs'); import cpu_pins, json; "
                           "print(cpu_pins.constraints(open('envs/lock.txt').read()), end='')"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60).stdout


def test_the_pypi_variant_is_resolved_from_pypi_alone_under_the_cpu_locks_pins():
    env = uvrun["only_index"]("https://pypi.org/simple", {"cert": "/c.pem", "find-links": "/w", "extra-index-url": "file:///m"},
                              {"UV_FIND_LINKS": "/x", "UV_INDEX": "https://other", "HOME": "/h"})
    assert env == {"HOME": "/h", "UV_DEFAULT_INDEX": "https://pypi.org/simple", "SSL_CERT_FILE": "/c.pem",
                   "UV_INDEX_STRATEGY": "unsafe-best-match"}
    assert (ROOT / "envs" / "pypi-constraints.txt").read_text() == cpu_pins   # generated by make lock, not edited
    pins = [ln for ln in cpu_pins.splitlines() if not ln.startswith("#")]
    assert len(pins) == len(CPU) - 1 and not [p for p in pins if p.startswith("torch==")]
    assert (ROOT / "envs" / "torch-pypi.txt").read_text().splitlines()[-1] == "torch==2.13.0"


# --- docs/setup.md: every command shown is one a test here runs, or is listed with why it is not ---

NOT_IN_CI = {
    "PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu make report": "a full install from PyTorch's index",
    "make lock": "needs PyPI and the CPU index; run by hand, its output is committed and checked above",
    "ADBENCH_TORCH=pypi .venv/bin/snakemake --sdm conda --cores all": "needs conda and several GB",
}
RUN_HERE = {"make report TORCH=pypi": "test_make_n_selects_the_variants_locks",
            "make report BIN=/path/to/env/bin": "test_bin_missing_one_package_is_named_in_one_line"}


def _doc_commands() -> list[str]:
    text = (ROOT / "docs" / "setup.md").read_text()
    return [ln.strip() for b in re.findall(r"```sh\n(.*?)```", text, re.S) for ln in b.splitlines() if ln.strip()]


def test_every_command_in_the_set_up_guide_is_accounted_for():
    assert sorted(set(_doc_commands())) == sorted(NOT_IN_CI.keys() | RUN_HERE.keys())
    assert all(name in globals() for name in RUN_HERE.values())
    advice = pre["failure"]("2.13.0+cpu", "envs/requirements.txt", [], "make report")
    assert [ln.strip() for ln in advice.splitlines() if ln.startswith("    ")] == \
        ["PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu make report", "make report TORCH=pypi"]
    assert all(c in _doc_commands() for c in ("PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu make report",
                                              "make report TORCH=pypi"))
