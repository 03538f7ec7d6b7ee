"""SLURM: the cluster profile, SLURM provenance, and the smoke DAG on a real one-node SLURM cluster.

The cluster tests start Debian's slurmctld/slurmd (tests/dag/cluster/slurm-up.sh) and need root; they run
under CI=true as root (`make test` installs the packages) and are skipped with a message elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from adbench import provenance
from test_determinism import compare_runs
from conftest import MEASURED, ROOT, SMOKE, copy_project, snakemake

PROFILE = ROOT / "profiles/slurm/config.yaml"
CLUSTER = ROOT / "tests/dag/cluster"


def exclusive_rules(configs=("config.yaml",)) -> dict[str, set[str]]:
    """Rules that claim the whole machine locally, and those that ask SLURM for a node of their own."""
    from adbench.families import inspect_workflow

    def look(wf):
        res = {r.name: r.resources for r in wf.rules}
        return {"local": {n for n, r in res.items() if r.get("machine_share") == wf.globals["MACHINE_SHARES"]},
                "slurm": {n for n, r in res.items() if r.get("slurm_extra") == "--exclusive"}}
    return inspect_workflow(ROOT, configs, look)


# Rules that time code (sized(timing=True), the one list): alone on their node under SLURM.
TIMING_RULES = exclusive_rules()["slurm"]


def workflow_rules() -> dict[str, str]:
    """Rule name -> the rules file (family) that defines it."""
    return {name: smk.stem for smk in sorted((ROOT / "workflow/rules").glob("*.smk"))
            for name in re.findall(r"^rule (\w+):", smk.read_text(), re.M)}


def profile() -> dict:
    """The SLURM profile as plain YAML (its YTE expressions stay strings)."""
    return yaml.safe_load(PROFILE.read_text())


# --- the profile and provenance, checked everywhere -------------------------------------------

def test_timing_rules_run_alone_locally_and_on_slurm_from_one_list():
    default = exclusive_rules()
    # every timing job gets a node of its own; locally it takes every share (so does the short job
    # the GPT-2 timing job waits for, run alone first: it needs no node of its own)
    assert default["slurm"] == {"scalar_s9_calibrate", "scalar_s9_run", "lifetimes_l6_calibrate",
                                "lifetimes_l6_run", "gpt2_memory"}  # G6's checkpoint timing included
    assert default["slurm"] <= default["local"] and default["local"] - default["slurm"] == {"corpus", "gpt2_model"}
    assert "set-resources" not in profile()  # the profile restates no list of rules
    smoke = exclusive_rules(("config.yaml", ".test/config.yaml"))  # control: timing.exclusive false
    assert smoke == {"local": set(), "slurm": set()}


def test_profile_takes_partition_and_account_from_the_environment(monkeypatch):
    from snakemake.profiles import ProfileConfigFileParser
    monkeypatch.setenv("ADBENCH_SLURM_PARTITION", "gpu")
    monkeypatch.delenv("ADBENCH_SLURM_ACCOUNT", raising=False)
    with PROFILE.open() as f:
        parsed = ProfileConfigFileParser().parse(f)
    defaults = dict(item.split("=", 1) for item in parsed["default-resources"])
    assert eval(defaults["slurm_partition"]) == "gpu"
    assert eval(defaults["slurm_account"]) == ""  # unset: the plugin guesses the account
    assert parsed["executor"] == "slurm" and parsed["slurm-status-command"] == "squeue"


def test_slurm_context_only_inside_a_job(monkeypatch):
    assert provenance.slurm_context({"PATH": "/bin"}) == {}
    env = {"SLURM_JOB_ID": "42", "SLURMD_NODENAME": "n7", "SLURM_JOB_NODELIST": "n[7-8]"}
    assert provenance.slurm_context(env) == {"slurm_job_id": "42", "slurm_node": "n7"}
    assert provenance.slurm_context({"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "n8"})["slurm_node"] == "n8"
    monkeypatch.setenv("SLURM_JOB_ID", "43")
    monkeypatch.setenv("SLURMD_NODENAME", "n9")
    meta = provenance.meta_record(rule="r", wildcards={}, args={}, seed=0, device="cpu", threads=1, wall_s=0.1)
    assert (meta["slurm_job_id"], meta["slurm_node"]) == ("43", "n9")
    monkeypatch.delenv("SLURM_JOB_ID")
    meta = provenance.meta_record(rule="r", wildcards={}, args={}, seed=0, device="cpu", threads=1, wall_s=0.1)
    assert "slurm_job_id" not in meta and "slurm_node" not in meta


# --- a real cluster ----------------------------------------------------------------------------

# A mark, not a skip inside the fixture: the session-scoped smoke run would start first.
needs_cluster = pytest.mark.skipif(
    os.environ.get("CI") != "true" or os.geteuid() != 0,
    reason="the SLURM cluster test runs only under CI=true as root (it installs and starts slurmd)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running one-node cluster: (environment with SLURM_CONF, its state directory); always torn down."""
    state = tmp_path_factory.mktemp("slurm")
    t0 = time.perf_counter()
    up = subprocess.run([CLUSTER / "slurm-up.sh", state], capture_output=True, text=True, timeout=600)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        MEASURED["SLURM cluster start (incl. install check)"] = time.perf_counter() - t0
        yield {"SLURM_CONF": str(state / "slurm.conf")}, state
    finally:
        subprocess.run([CLUSTER / "slurm-down.sh", state], capture_output=True, text=True, timeout=120)


def node_cpus(env: dict) -> int:
    out = subprocess.run(["sinfo", "-h", "-o", "%c"], env={**os.environ, **env}, capture_output=True, text=True)
    return int(out.stdout.split()[0])


def slurm_run(project: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    """Snakemake through the user's profile, with only what a quick test needs on top."""
    return snakemake(project, "--profile", str(project / "profiles/slurm"),
                     "--slurm-init-seconds-before-status-checks", "2", *args, env=env, timeout=1200)


def family_groups() -> list[str]:
    """Group each family's non-timing rules into one SLURM job: every job still runs under SLURM,
    but Snakemake starts (twice per SLURM job) a dozen times instead of fifty."""
    rules = {r: fam for r, fam in workflow_rules().items() if r not in TIMING_RULES}
    groups = [f"{r}={fam}" for r, fam in rules.items()]
    return ["--groups", *groups, "--group-components", *{f"{fam}=1000" for fam in rules.values()}]


def submitted(out: str) -> dict[str, str]:
    """SLURM job id -> Snakemake rule or group, from Snakemake's submission messages."""
    found = re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*?/slurm_logs/(?:rule|group)_([^/\s]+)/", out)
    return dict(found)


def jobcomp(state: Path) -> dict[str, dict]:
    """SLURM's own record of every finished job (jobcomp/filetxt): id -> fields."""
    rows = {}
    for line in (state / "jobcomp.log").read_text().splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        rows[fields["JobId"]] = fields
    return rows


@pytest.mark.slow
@needs_cluster
def test_smoke_dag_on_slurm_matches_a_local_run(cluster, smoke, tmp_path):
    env, state = cluster
    project = copy_project(tmp_path / "project")
    t0 = time.perf_counter()
    res = slurm_run(project, env, *SMOKE, "--cores", str(node_cpus(env)), *family_groups())
    MEASURED["smoke DAG wall time through SLURM"] = time.perf_counter() - t0
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]

    jobs = submitted(out)
    record = jobcomp(state)
    node = socket.gethostname().split(".")[0]
    assert len(jobs) >= len(TIMING_RULES) + 5, jobs
    for job_id, name in jobs.items():  # SLURM itself saw every submitted job finish on the node
        assert record[job_id]["JobState"] == "COMPLETED" and record[job_id]["NodeList"] == node, (name, record[job_id])
    queue = subprocess.run(["squeue", "-h", "--states=all", "-o", "%i|%T|%N|%k"], env={**os.environ, **env},
                           capture_output=True, text=True).stdout
    print(queue)  # evidence for the log: id|state|node|comment (rule_<name>)
    states = {line.split("|")[0]: line.split("|")[1] for line in queue.splitlines()}
    assert all(states.get(j) == "COMPLETED" for j in jobs), (jobs, states)  # finished jobs stay MinJobAge=3600 s
    metas = sorted((project / "results").rglob("*meta.json"))
    assert len(metas) == len(list((smoke[0] / "results").rglob("*meta.json"))) > 10
    for path in metas:
        meta = json.loads(path.read_text())
        assert meta.get("slurm_job_id") in jobs and meta.get("slurm_node") == node, (path, meta.get("slurm_job_id"))
    timing = [j for j, name in jobs.items() if name in TIMING_RULES]
    assert {jobs[j] for j in timing} == TIMING_RULES  # each timing rule is its own SLURM job...
    assert all(int(record[j]["ProcCnt"]) == node_cpus(env) for j in timing)  # ...holding every CPU (--exclusive)
    appendix = (project / "report/report.html").read_text().split('id="provenance"', 1)[1]
    shown = re.findall(r'<td class="mono">(\w+)</td><td class="mono">([^<]*)</td></tr>', appendix)
    assert shown and {j for j, _ in shown} <= set(jobs) and {n for _, n in shown} == {node}, shown[:5]
    report = compare_runs(smoke[0] / "results", project / "results")  # exclusions: test_determinism's lists
    assert report["differ"] == [] and len(report["compared"]) > 100, report["differ"]


@pytest.mark.slow
@needs_cluster
def test_failing_job_is_reported_and_leaves_no_output(cluster, tmp_path):
    env, state = cluster
    project = copy_project(tmp_path / "project")
    # passes validation, fails at run time: insist on the cached pinned weights, which CI does not have
    (tmp_path / "broken.yaml").write_text("gpt2: {source: cache}\n")
    res = slurm_run(project, {**env, "HF_HUB_CACHE": str(tmp_path / "empty-hub")}, "results/gpt2/model.json",
                    *SMOKE, str(tmp_path / "broken.yaml"))
    out = res.stdout + res.stderr
    assert res.returncode != 0
    failed = {j: r for j, r in submitted(out).items() if r == "gpt2_model"}
    assert len(failed) == 1, out[-4000:]
    (job_id, rule), = failed.items()
    assert f"SLURM-job '{job_id}' failed" in out, out[-4000:]
    assert jobcomp(state)[job_id]["JobState"] == "FAILED"
    assert "gpt2.source: cache" in (project / "logs/gpt2_model.log").read_text()
    assert not (project / "results/gpt2").exists() or not any(p.is_file() for p in (project / "results/gpt2").rglob("*"))
