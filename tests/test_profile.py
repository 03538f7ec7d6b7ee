"""profiles/default: plain `snakemake --cores N` gets what `make report` passes (memory cap,
rerun-incomplete, failed logs on the console), and `--profile profiles/slurm` keeps its own settings and takes
the partition and account from the environment."""

import base64
import json
import re
import subprocess
import sys

import psutil
import pytest

from conftest import ROOT, SMOKE, planned_jobs, snakemake

ARGS = """
import json, sys
from snakemake.cli import parse_args
_, a = parse_args(sys.argv[1:])
print(json.dumps({"resources": {k: v.value for k, v in (a.resources or {}).items()},
                  "default_resources": {k: getattr(v, "value", None) for k, v in (a.default_resources or {}).items()
                                        if k == "mem_mb"},
                  "rerun_incomplete": a.rerun_incomplete, "show_failed_logs": a.show_failed_logs,
                  "executor": a.executor, "latency_wait": a.latency_wait}))
"""


def settings(project, *argv):
    """The arguments Snakemake would run with in `project`, profiles applied (nothing is run)."""
    res = subprocess.run([sys.executable, "-c", ARGS, *argv], cwd=project, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.splitlines()[-1])


def test_plain_snakemake_gets_the_memory_cap_and_rerun_incomplete(project):
    got = settings(project, "--cores", "2", "-n")
    assert got["resources"] == {"mem_mb": int(psutil.virtual_memory().total / 2**20 * 0.8)}
    assert got["rerun_incomplete"] is True and got["show_failed_logs"] is True


def test_negative_control_without_the_default_profile_nothing_is_set(project):
    got = settings(project, "--cores", "2", "-n", "--workflow-profile", "none")
    assert got["resources"] == {} and got["rerun_incomplete"] is False and got["show_failed_logs"] is False


def test_the_slurm_profile_keeps_its_executor_and_defaults(project):
    got = settings(project, "-n", "--profile", "profiles/slurm")
    assert got["executor"] == "slurm" and got["latency_wait"] == 60
    assert got["default_resources"] == {"mem_mb": 2000}   # the default profile sets no default-resources
    # mem_mb is a local resource: the cap does not limit what is submitted to SLURM (Snakemake's default)
    assert got["rerun_incomplete"] is True


def _mark_incomplete(project, output):
    """What Snakemake leaves behind when a job writing `output` is killed: the file and its marker."""
    (project / output).parent.mkdir(parents=True, exist_ok=True)
    (project / output).write_text("half")
    marker = project / ".snakemake" / "incomplete" / base64.urlsafe_b64encode(output.encode()).decode()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("{}")


@pytest.mark.dag
def test_a_plain_dry_run_reruns_an_interrupted_job(project):
    _mark_incomplete(project, "results/corpus/corpus.txt")
    res = snakemake(project, "--cores", "2", *SMOKE, "-n")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "workflow specific profile profiles/default" in out
    assert planned_jobs(out).get("corpus") == 1
    # rerun-incomplete forces the interrupted job (any other job is only "Missing output files")
    assert re.search(r"rule corpus:\n(?:    .*\n)*?    reason: Forced execution", out), out[-3000:]


@pytest.mark.dag
def test_negative_control_without_the_profile_the_interrupted_job_stops_the_run(project):
    _mark_incomplete(project, "results/corpus/corpus.txt")
    res = snakemake(project, "--cores", "2", *SMOKE, "-n", "--workflow-profile", "none")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "IncompleteFilesException" in out, out[-3000:]


def test_profile_takes_partition_and_account_from_the_environment(monkeypatch):
    from snakemake.profiles import ProfileConfigFileParser
    monkeypatch.setenv("ADBENCH_SLURM_PARTITION", "gpu")
    monkeypatch.delenv("ADBENCH_SLURM_ACCOUNT", raising=False)
    with (ROOT / "profiles/slurm/config.yaml").open() as f:
        parsed = ProfileConfigFileParser().parse(f)
    defaults = dict(item.split("=", 1) for item in parsed["default-resources"])
    assert eval(defaults["slurm_partition"]) == "gpu"
    assert eval(defaults["slurm_account"]) == ""  # unset: the plugin guesses the account
    assert parsed["executor"] == "slurm" and parsed["slurm-status-command"] == "squeue"
