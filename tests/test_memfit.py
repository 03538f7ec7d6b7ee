"""Memory sized from what jobs use (adbench.memfit): every rule's declared mem_mb against the reference run's
measured peaks, the fit check that stops a run before any job starts, make's MEM_MB, and ru_maxrss's units."""

import os
import subprocess
import sys

import psutil
import pytest

from adbench import memfit
from adbench.memfit import Need
from conftest import ROOT, copy_project, planned_jobs, snakemake

PEAKS = memfit.load_peaks()
EIGHT_GB_CAP = int(8 * 1024 * 0.8)  # MiB: 80 % of an 8 GiB machine, what `make report` gives it
# Rules the default run never plans, so the reference run cannot measure them (they declare UNMEASURED_MB):
# the archive job (config archive) and the strict check (strict: true).
NOT_IN_DEFAULT_RUN = {"archive", "render_strict_check"}
MEASURE_HINT = ("measure them in a full default run, then `snakemake --list-rules | python -m adbench.memfit "
                "benchmarks --cpu ... --isa ... --torch ... --date ... --commit ... > src/adbench/data/peaks.csv`")


@pytest.fixture(scope="module")
def declared() -> dict[str, int]:
    """Rule -> the mem_mb it declares with the default config, read from the parsed workflow (no job runs)."""
    from workflow_inspect import inspect_workflow

    def look(wf):
        # a rule that passes no mem_mb declares a function of its name (common.smk): evaluate it as Snakemake does
        return {r.name: r.resources.get("mem_mb").evaluate(None, rulename=r.name).value for r in wf.rules if r.output}
    return inspect_workflow(ROOT, ("config.yaml",), look)


# --- sizing: declarations against the measured peaks ----------------------------------------------------

def test_headroom_formula_by_hand():
    # 1.25 x 3542 + 256 = 4683.5 -> next 50 MB: 4700; 1.25 x 81 + 256 = 357.25 -> 400
    assert memfit.declared_mb(3542) == 4700 and memfit.declared_mb(81) == 400 and memfit.declared_mb(0) == 300


def test_every_declared_mem_mb_is_between_its_peak_and_twice_it_plus_512(declared):
    unmeasured = set(declared) - set(PEAKS) - NOT_IN_DEFAULT_RUN
    assert not unmeasured, f"rules without a measured peak {sorted(unmeasured)}: {MEASURE_HINT}"
    measured = {rule: mb for rule, mb in declared.items() if rule in PEAKS}
    bad = {rule: (mb, PEAKS[rule]) for rule, mb in measured.items() if not memfit.within_bounds(mb, PEAKS[rule])}
    assert bad == {}, f"declared mem_mb, measured peak MB (bounds: peak .. 2 x peak + {memfit.BOUND_EXTRA_MB}): {bad}"


def test_negative_control_the_old_declarations_and_one_mb_below_a_peak_break_the_bounds():
    # before: G6 declared 11000 MB, the BPE tokenizer job 2000
    assert not memfit.within_bounds(11000, PEAKS["gpt2_memory"])
    assert not memfit.within_bounds(2000, PEAKS["gpt2_model"])
    assert not any(memfit.within_bounds(int(peak) - 1, peak) for peak in PEAKS.values())   # below its peak
    assert all(memfit.within_bounds(memfit.declared_mb(peak), peak) for peak in PEAKS.values())


def test_an_8gb_machine_fits_every_job_of_the_default_config(declared):
    assert memfit.cap_mb(8 * 2**30) == EIGHT_GB_CAP == 6553
    needs = [Need(rule, rule, mb) for rule, mb in declared.items()]
    assert memfit.misfits(needs, EIGHT_GB_CAP) == []
    # control: a 4 GB machine's cap (3276) does not fit GPT-2's sequence and memory jobs, named largest first
    bad = memfit.misfits(needs, memfit.cap_mb(4 * 2**30))
    assert {"gpt2_sequence", "gpt2_memory"} <= {n.rule for n in bad} and all(n.mem_mb > 3276 for n in bad)
    assert [n.mem_mb for n in bad] == sorted((n.mem_mb for n in bad), reverse=True)


# --- the fit check's message ------------------------------------------------------------------------------

def test_fit_error_names_each_job_its_need_the_cap_and_the_fix():
    keys = memfit.config_keys({"fam": {"mem_mb": {"big": 5000}, "other": 1}, "seed": 0, "plain": {"x": 1}})
    assert keys == {"fam_big": "fam.mem_mb.big"}
    assert memfit.job_label("train", {"variant": "a", "seed": "1"}) == "train (variant=a, seed=1)"
    assert memfit.job_label("fam_big", {}) == "fam_big"
    needs = [Need("small", "small", 400), Need("fam_big", "fam_big", 5000),
             Need("train (variant=a)", "train", 1200), Need("train (variant=b)", "train", 1200)]
    lines = memfit.fit_error(needs, 1000, keys).splitlines()
    assert lines[0].startswith("3 planned job(s) declare more memory than this run gives (mem_mb=1000")
    assert lines[1] == ("  fam_big needs mem_mb=5000; this run gives 1000. Fix: make report MEM_MB=5000 (snakemake "
                        "--resources mem_mb=5000) on a machine with at least 6.1 GB of RAM; or lower fam.mem_mb.big "
                        "in config.yaml")   # 5000 / 0.8 / 1024 = 6.10 GB
    assert lines[2].startswith("  train (variant=a) needs mem_mb=1200; this run gives 1000. Fix: make report "
                               "MEM_MB=1200") and lines[2].endswith("at least 1.5 GB of RAM")   # no config key
    assert lines[3].startswith("  train (variant=b) needs mem_mb=1200") and len(lines) == 4   # one line per job


def test_negative_control_a_cap_that_fits_gives_no_message():
    needs = [Need("a", "a", 400), Need("b", "b", 5000)]
    assert memfit.fit_error(needs, 5000, {}) is None and memfit.fit_error([], 1, {}) is None
    assert memfit.fit_error(needs, 4999, {}) is not None   # one MB short is caught


@pytest.mark.slow
def test_a_run_whose_cap_is_too_small_stops_before_any_job_starts(tmp_path, declared):
    """A real run (default config) with --resources mem_mb=3000: the planned jobs are listed, then the run stops
    in onstart with one line per job that needs more, and nothing was started."""
    project = copy_project(tmp_path / "project")
    res = snakemake(project, "--cores", "2", "--resources", "mem_mb=3000", timeout=300)
    assert res.returncode != 0
    planned = planned_jobs(res.stdout + res.stderr)
    assert set(planned) - {"all"} <= set(PEAKS), f"{set(planned) - set(PEAKS)}: {MEASURE_HINT}"
    expected = sorted(rule for rule in planned if declared.get(rule, 0) > 3000)
    lines = [line.strip() for line in res.stderr.splitlines() if " needs mem_mb=" in line]
    assert sorted(line.split()[0] for line in lines) == expected and "gpt2_memory" in expected
    assert all("this run gives 3000. Fix: make report MEM_MB=" in line for line in lines)
    assert not (project / "logs").exists() and not (project / "results").exists()   # no job started


# --- make's MEM_MB: 80 % of RAM wherever it can be read ------------------------------------------------------

def make_mem_mb(*overrides: str, path: str | None = None) -> int:
    """MEM_MB as `make report` would pass it, with these variable overrides."""
    env = {k: v for k, v in os.environ.items() if k != "MEM_MB"} | ({"PATH": path} if path else {})
    res = subprocess.run(["make", "-s", "--no-print-directory", *overrides, "--eval", "mem-mb: ; @echo $(MEM_MB)",
                          "mem-mb"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return int(res.stdout.strip())


def test_make_mem_mb_is_80_percent_of_ram_through_each_source(tmp_path):
    total = psutil.virtual_memory().total
    assert abs(make_mem_mb() - memfit.cap_mb(total)) <= 1   # /proc/meminfo (psutil reads the same file)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sysctl").write_text("#!/bin/sh\n[ \"$2\" = hw.memsize ] && echo 17179869184\n")   # macOS: 16 GiB
    (fake / "sysctl").chmod(0o755)
    path = f"{fake}:{os.environ['PATH']}"
    assert make_mem_mb("MEMINFO=/nonexistent", path=path) == int(16 * 1024 * 0.8)
    # no /proc/meminfo, no sysctl answer, no venv: a python with psutil
    (fake / "sysctl").write_text("#!/bin/sh\nexit 1\n")
    got = make_mem_mb("MEMINFO=/nonexistent", "BIN=/nonexistent", f"PYTHON={sys.executable}", path=path)
    assert abs(got - memfit.cap_mb(total)) <= 1
    # nothing answers: the 8 GB machine's cap
    assert make_mem_mb("MEMINFO=/nonexistent", "BIN=/nonexistent", "PYTHON=false", path=path) == EIGHT_GB_CAP


# --- ru_maxrss: bytes on macOS, KiB on Linux ----------------------------------------------------------------

@pytest.mark.parametrize("platform, factor", [("darwin", 1), ("linux", 1024)])
def test_ru_maxrss_in_bytes_per_platform(monkeypatch, platform, factor):
    from adbench.gpt2.memory import maxrss_bytes
    monkeypatch.setattr(sys, "platform", platform)
    assert maxrss_bytes(3_500_000) == 3_500_000 * factor   # the same reading: 3.5 MB on macOS, 3.6 GB on Linux
