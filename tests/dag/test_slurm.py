"""SLURM: the cluster profile, SLURM provenance, and pipeline jobs on a real one-node SLURM cluster.

The cluster tests start Debian's slurmctld/slurmd (tests/dag/cluster/slurm-up.sh) and need root; they run
under CI=true as root (`make test` installs the packages) and are skipped with a message elsewhere.

By default the cluster runs a representative sub-DAG of the completed local smoke run (session
fixture `smoke`): Snakemake re-runs through the SLURM profile the jobs forced by SUBDAG_FORCED and
the jobs downstream of them (SUBDAG: T1-T4's one job, an L6 timed process and the summary of the
processes, the GPT-2 prompt job and the report), and leaves every other job of the local run alone;
plus one failing job. The whole smoke DAG through SLURM (5-7 min on 2 cores) is opt-in:

    ADBENCH_SLURM_FULL=1 CI=true make test          # as root; or, once the packages are installed,
    ADBENCH_SLURM_FULL=1 CI=true .venv/bin/python -m pytest tests/dag/test_slurm.py
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from adbench.families import declared

from test_determinism import compare_runs
from conftest import (MEASURED, ROOT, SMOKE, copy_completed, copy_project, project_env, snakemake, tree_changes,
                      tree_state)

# Slow as a whole: the cluster tests run the DAG, the timing-rules check parses the workflow twice, and the
# sub-DAG helpers' negative control belongs with the tests that use them. The profile's environment and the
# SLURM provenance are fast tests in tests/test_profile.py and tests/test_provenance.py.
pytestmark = [pytest.mark.slow, pytest.mark.dag, pytest.mark.slurm]

PROFILE = ROOT / "profiles/slurm/config.yaml"
CLUSTER = ROOT / "tests/dag/cluster"


def exclusive_rules(configs=("config.yaml",)) -> dict[str, set[str]]:
    """Rules that claim the whole machine locally, and those that ask SLURM for a node of their own."""
    from workflow_inspect import inspect_workflow

    def look(wf):
        res = {r.name: r.resources for r in wf.rules if r.output}  # not the timing chain's bases (no jobs)
        return {"local": {n for n, r in res.items() if r.get("machine_share") == wf.globals["MACHINE_SHARES"]},
                "slurm": {n for n, r in res.items() if r.get("slurm_extra") == "--exclusive"}}
    return inspect_workflow(ROOT, configs, look)


# Rules that time code (sized(timing=True), the one list): alone on their node under SLURM.
TIMING_RULES = exclusive_rules()["slurm"]
# The default cluster test: Snakemake re-runs these rules of a completed local smoke run through
# SLURM, and every job downstream of them: exactly SUBDAG (gpt2_prompt reads the local run's gpt2_model).
SUBDAG_FORCED = ["tensor_rules", "lifetimes_l6_run", "gpt2_prompt", "verdicts_compare", "render_report"]
SUBDAG = {
    "tensor_rules": "one job writing four IDs (T1-T4), each with its own meta.json",
    "lifetimes_l6_run": "timing chain: a timed process, reading the local run's calibration (a timing job: "
                        "its own exclusive SLURM job)",
    "lifetimes_l6_summary": "timing chain: the summary of the processes",
    "lifetimes_l6_plot": "downstream of the L6 samples",
    "gpt2_prompt": "a GPT-2 job (G1-G4)",
    "gpt2_plots": "downstream of G2's states",
    "verdicts_compare": "the comparison with the documented values",
    "changes": "downstream of the comparison",
    "verdicts_claims": "the claims, downstream of every re-run measurement",
    "render_report": "the report, its provenance appendix included",
}
# Opt-in: the whole smoke DAG through SLURM, as one more test.
FULL_DAG = os.environ.get("ADBENCH_SLURM_FULL") == "1"


def workflow_rules() -> dict[str, str]:
    """Rule name -> the rules file (family) that defines it (`rule <name>:` or `use rule <base> as <name> with:`)."""
    return {name: smk.stem for smk in sorted((ROOT / "workflow/rules").glob("*.smk"))
            for name in re.findall(r"^(?:rule|use rule \w+ as) (\w+)(?: with)?:", smk.read_text(), re.M)}


def profile() -> dict:
    """The SLURM profile as plain YAML (its YTE expressions stay strings)."""
    return yaml.safe_load(PROFILE.read_text())


# --- the profile, checked everywhere ----------------------------------------------------------

def test_timing_rules_run_alone_locally_and_on_slurm_from_one_list():
    default = exclusive_rules()
    # every timing job gets a node of its own; locally it takes every share (so does the short job
    # the GPT-2 timing job waits for, run alone first: it needs no node of its own)
    # the timing rules each family declares (family.py `timing_rules`; G6's checkpoint timing included)
    assert default["slurm"] == {r for f in declared() for r in f.timing_rules} and len(default["slurm"]) >= 5
    assert default["slurm"] <= default["local"] and default["local"] - default["slurm"] == {"corpus", "gpt2_model"}
    assert "set-resources" not in profile()  # the profile restates no list of rules
    smoke = exclusive_rules(("config.yaml", ".test/config.yaml"))  # control: timing.exclusive false
    assert smoke == {"local": set(), "slurm": set()}


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


# Smoke sizes with the timing jobs exclusive, as at full size: the smoke overlay lets them share the
# machine, and then their rules ask SLURM for no node of their own (sized(timing=True), common.smk).
TIMING_ALONE = "timing-alone.yaml"


def slurm_args(project: Path, *args: str) -> list[str]:
    """Snakemake's arguments through the user's profile, with only what a quick test needs on top."""
    (project / TIMING_ALONE).write_text("timing: {exclusive: true}\n")
    return ["--profile", str(project / "profiles/slurm"), "--slurm-init-seconds-before-status-checks", "2", *args]


def slurm_run(project: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return snakemake(project, *slurm_args(project, *args), env=env, timeout=1200)


# The report's rules files (comparison, claims, what changed, rendering): one group, one SLURM job
REPORT_FILES = {"verdicts", "changes", "archive", "render"}


def family_groups() -> list[str]:
    """Group each family's non-timing rules into one SLURM job, and the report's rules into one: every job
    still runs under SLURM, but Snakemake starts (twice per SLURM job) a dozen times instead of fifty, and
    the report's chain (compare -> changes -> render) waits for one SLURM job instead of three."""
    rules = {r: ("report" if fam in REPORT_FILES else fam) for r, fam in workflow_rules().items()
             if r not in TIMING_RULES}
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


def squeue_states(env: dict) -> dict[str, str]:
    """SLURM job id -> state as squeue reports it (finished jobs stay MinJobAge=3600 s); prints the table."""
    queue = subprocess.run(["squeue", "-h", "--states=all", "-o", "%i|%T|%N|%k"], env={**os.environ, **env},
                           capture_output=True, text=True).stdout
    print(queue)  # evidence for the log: id|state|node|comment (rule_<name>)
    return {line.split("|")[0]: line.split("|")[1] for line in queue.splitlines()}


def job_files(out: str) -> dict[str, set[str]]:
    """Rule -> the files (output, log, benchmark) of its jobs, from the job blocks Snakemake prints
    when it starts or submits a job (a grouped job's blocks are indented; `localrule all` has none)."""
    files, rule = {}, None
    for line in out.splitlines():
        m = re.fullmatch(r"(local)?rule (\w+):", line.strip())
        if m:
            rule = None if m.group(1) else m.group(2)
            if rule:
                files.setdefault(rule, set())
            continue
        m = re.fullmatch(r"(output|log|benchmark): (.+)", line.strip())
        if m and rule:
            files[rule] |= set(m.group(2).split(", "))
    return files


def snapshot(project: Path) -> dict[str, list]:
    """Every file a job may write: relative path -> [mtime in ns, sha256]."""
    return tree_state(project, ("results", "report", "logs", "benchmarks"))


def rewritten(before: dict, after: dict) -> set[str]:
    """Files written (new mtime or new bytes), created or deleted between two snapshots; the jobs' own
    records of what they wrote (results/.manifests/, adbench.cache, tested in tests/dag/test_cache_restore.py)
    are not outputs the job blocks list, so they are left out."""
    return {rel for rel in tree_changes(before, after) if not rel.startswith("results/.manifests/")}


def rules_inside_slurm_jobs(project: Path) -> dict[str, list[str]]:
    """SLURM job id -> the rules whose scripts ran inside that job, read from the job logs the plugin
    keeps with --slurm-keep-successful-logs (adbench.jobs logs 'rule <name> wildcards=...' at each start)."""
    return {log.stem: re.findall(r"adbench INFO rule (\w+) wildcards=", log.read_text())
            for log in (project / ".snakemake/slurm_logs").rglob("*.log")}


def appendix_rows(html: str) -> list[tuple[str, str, str]]:
    """(rule, SLURM job, node) of every job in the report's provenance appendix ('local', '' off SLURM)."""
    appendix = html.split('id="provenance"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr><td class="mono">(\w+)</td>(?:(?!</tr>).)*?<td class="mono">(\w+)</td>'
                      r'<td class="mono">([^<]*)</td></tr>', appendix, re.S)


def test_subdag_helpers_see_what_was_rewritten_and_what_ran_where(tmp_path):
    # Negative controls for the sub-DAG checks, on a fabricated project and fabricated logs.
    for rel in ("results/T1/values.csv", "results/T1/meta.json", "results/S1/values.csv", "logs/a.log"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    before = snapshot(tmp_path)
    assert set(before) == {"results/T1/values.csv", "results/T1/meta.json", "results/S1/values.csv", "logs/a.log"}
    assert rewritten(before, snapshot(tmp_path)) == set()
    st = (tmp_path / "results/T1/values.csv").stat()
    os.utime(tmp_path / "results/T1/values.csv", ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # same bytes, written
    (tmp_path / "results/S1/values.csv").write_text("y\n")  # new bytes, old mtime
    os.utime(tmp_path / "results/S1/values.csv", ns=(st.st_atime_ns, before["results/S1/values.csv"][0]))
    (tmp_path / "logs/a.log").unlink()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks/b.tsv").write_text("s\n")
    assert rewritten(before, snapshot(tmp_path)) == {"results/T1/values.csv", "results/S1/values.csv",
                                                     "logs/a.log", "benchmarks/b.tsv"}
    out = """[Tue Dec  1 09:35:22 2026] Group job gpt2 (jobs in lexicogr. order):

    [Tue Dec  1 09:35:22 2026]
    rule gpt2_plots:
        input: results/G2/states.csv, results/gpt2/model.json
        output: results/G2/states.svg, results/G5/surprise.svg
        log: logs/gpt2_plots.log
        jobid: 53
        benchmark: benchmarks/gpt2_plots.tsv
rule lifetimes_l6_run:
    input: results/L6/timing/calibration.csv
    output: results/L6/timing/runs/1/samples.csv, results/L6/timing/runs/1/meta.json
    log: logs/lifetimes_l6_run_1.log
Finished jobid: 18 (Rule: lifetimes_l6_calibrate)
localrule all:
    input: report/report.html
    output: not/a/job/file
"""
    assert job_files(out) == {
        "gpt2_plots": {"results/G2/states.svg", "results/G5/surprise.svg", "logs/gpt2_plots.log",
                       "benchmarks/gpt2_plots.tsv"},
        "lifetimes_l6_run": {"results/L6/timing/runs/1/samples.csv", "results/L6/timing/runs/1/meta.json",
                             "logs/lifetimes_l6_run_1.log"}}
    logs = tmp_path / ".snakemake/slurm_logs"
    (logs / "group_report_x").mkdir(parents=True)
    (logs / "rule_lifetimes_l6_run/1").mkdir(parents=True)
    (logs / "group_report_x/17.log").write_text(
        "localrule verdicts_compare:\n2026-12-01 09:44:48,404 adbench INFO rule verdicts_compare wildcards={} threads=None\n"
        "localrule render_report:\n2026-12-01 09:44:49,404 adbench INFO rule render_report wildcards={} threads=1\n")
    (logs / "rule_lifetimes_l6_run/1/15.log").write_text("localrule lifetimes_l6_run:\nTraceback: no start line\n")
    assert rules_inside_slurm_jobs(tmp_path) == {"17": ["verdicts_compare", "render_report"], "15": []}
    html = ('<section id="provenance"><table><tbody>\n<tr><td class="mono">tensor_rules</td><td class="mono">{}</td>'
            '\n    <td>2.13.0</td><td class="mono">ab</td><td class="mono">13</td><td class="mono">vm</td></tr>\n'
            '<tr><td class="mono">scalar_s1</td><td class="mono">{}</td>\n    <td class="mono">cd</td>'
            '<td class="mono">local</td><td class="mono"></td></tr>\n</tbody></table>'
            '<table><tr><td class="mono">x</td><td class="mono">9</td><td class="mono">n</td></tr></table>')
    assert appendix_rows(html) == [("tensor_rules", "13", "vm"), ("scalar_s1", "local", "")]


@pytest.fixture(scope="module")
def failing(cluster, smoke, tmp_path_factory):
    """A run whose one SLURM job fails, started in the background as soon as the cluster is up, in a copy
    of the completed local run: it runs beside the sub-DAG run, which spends most of its wall time
    waiting for SLURM's status checks. Yields a function that waits for it: (output, return code, project)."""
    env, _ = cluster
    tmp = tmp_path_factory.mktemp("failing")
    project = copy_completed(smoke[0], tmp / "project")  # the one forced job is the only SLURM job, no DAG before it
    # passes validation, fails at run time: insist on the cached pinned weights, which CI does not have
    (tmp / "broken.yaml").write_text("gpt2: {source: cache}\n")
    args = slurm_args(project, "results/gpt2/model.json", "--forcerun", "gpt2_model", *SMOKE, str(tmp / "broken.yaml"))
    full_env = {**project_env(project), **env, "HF_HUB_CACHE": str(tmp / "empty-hub")}
    log = (tmp / "snakemake.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "snakemake", "--snakefile", str(project / "Snakefile"), *args],
                            cwd=project, env=full_env, stdout=log, stderr=subprocess.STDOUT, text=True)

    def result() -> tuple[str, int, Path]:
        code = proc.wait(timeout=1200)  # hang guard only
        log.flush()
        return (tmp / "snakemake.log").read_text(), code, project
    try:
        yield result
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


@needs_cluster
def test_subdag_on_slurm_reruns_only_it_and_matches_a_local_run(cluster, smoke, failing, tmp_path):
    # `failing` (test_failing_job_is_reported_and_leaves_no_output) runs its one SLURM job beside this run
    env, state = cluster
    project = copy_completed(smoke[0], tmp_path / "project")
    before = snapshot(project)
    t0 = time.perf_counter()
    res = slurm_run(project, env, *SMOKE, TIMING_ALONE, "--cores", str(node_cpus(env)), *family_groups(),
                    "--slurm-keep-successful-logs", "--forcerun", *SUBDAG_FORCED)
    wall = time.perf_counter() - t0
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]
    jobs = submitted(out)
    MEASURED[f"SLURM sub-DAG wall time ({len(SUBDAG)} jobs in {len(jobs)} SLURM jobs)"] = wall

    # The plan is the sub-DAG, and only its jobs wrote anything: every other job of the local run stayed as it was.
    files = job_files(out)
    assert set(files) == set(SUBDAG), (sorted(set(files) - set(SUBDAG)), sorted(set(SUBDAG) - set(files)))
    declared = set().union(*files.values())
    written = rewritten(before, snapshot(project))
    assert written == declared, (sorted(written - declared), sorted(declared - written))
    assert len(before) - len(written) > 3 * len(written)  # most of the local run is untouched

    # Each of its jobs ran as a SLURM job: inside a job Snakemake submitted, completed on the node.
    node = socket.gethostname().split(".")[0]
    inside = rules_inside_slurm_jobs(project)
    ran = {rule: job for job, rules in inside.items() for rule in rules}
    assert set(ran) == set(SUBDAG) and set(inside) == set(jobs), (inside, jobs)
    assert sum(len(rules) for rules in inside.values()) == len(SUBDAG), inside  # each job ran once
    record, states = jobcomp(state), squeue_states(env)
    for job_id, name in jobs.items():
        assert record[job_id]["JobState"] == "COMPLETED" and record[job_id]["NodeList"] == node, (name, record[job_id])
        assert states.get(job_id) == "COMPLETED", (job_id, name, states)
    timing = {name: job for job, name in jobs.items() if name in TIMING_RULES}
    assert set(timing) == TIMING_RULES & set(SUBDAG) and len(timing) >= 1  # each timing job its own SLURM job...
    assert all(int(record[j]["ProcCnt"]) == node_cpus(env) for j in timing.values())  # ...holding every CPU
    metas = sorted(rel for rel in written if rel.endswith("meta.json"))
    assert len(metas) >= 8, metas
    for rel in metas:  # the provenance of each re-run job names its SLURM job and node
        meta = json.loads((project / rel).read_text())
        assert (meta.get("slurm_job_id"), meta.get("slurm_node")) == (ran[meta["rule"]], node), (rel, meta)
    for rel in sorted(before.keys() - written):
        if rel.endswith("meta.json"):
            assert "slurm_job_id" not in json.loads((project / rel).read_text()), rel
    rows = appendix_rows((project / "report/report.html").read_text())
    assert {r for r, _, _ in rows} >= {"tensor_rules", "gpt2_prompt", "lifetimes_l6_summary", "scalar_s1"}, rows
    for rule, job, shown_node in rows:  # the report shows the SLURM jobs of the re-run jobs, 'local' for the rest
        assert (job, shown_node) == ((ran[rule], node) if rule in SUBDAG else ("local", "")), (rule, job, shown_node)

    # Its deterministic CSVs equal the local run's (exclusions: test_determinism's lists).
    report = compare_runs(smoke[0] / "results", project / "results")
    assert report["differ"] == [] and len(report["compared"]) > 100, report["differ"]
    print(f"sub-DAG through SLURM: {len(SUBDAG)} jobs in {len(jobs)} SLURM jobs, {len(written)} files rewritten, "
          f"{len(before) - len(written)} untouched, {wall:.1f} s")


@needs_cluster
@pytest.mark.skipif(not FULL_DAG, reason="the whole smoke DAG through SLURM (5-7 min) is opt-in: set "
                    "ADBENCH_SLURM_FULL=1 (with CI=true as root) to run it; by default the cluster runs "
                    "the representative sub-DAG of test_subdag_on_slurm_reruns_only_it_and_matches_a_local_run")
def test_smoke_dag_on_slurm_matches_a_local_run(cluster, smoke, tmp_path):
    env, state = cluster
    project = copy_project(tmp_path / "project")
    t0 = time.perf_counter()
    res = slurm_run(project, env, *SMOKE, TIMING_ALONE, "--cores", str(node_cpus(env)), *family_groups())
    MEASURED["smoke DAG wall time through SLURM"] = time.perf_counter() - t0
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-6000:]

    jobs = submitted(out)
    record = jobcomp(state)
    node = socket.gethostname().split(".")[0]
    assert len(jobs) >= len(TIMING_RULES) + 5, jobs
    for job_id, name in jobs.items():  # SLURM itself saw every submitted job finish on the node
        assert record[job_id]["JobState"] == "COMPLETED" and record[job_id]["NodeList"] == node, (name, record[job_id])
    states = squeue_states(env)
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


@needs_cluster
def test_failing_job_is_reported_and_leaves_no_output(cluster, smoke, failing):
    _, state = cluster
    out, code, project = failing()
    assert code != 0
    assert sorted(submitted(out).values()) == ["gpt2_model"], out[-4000:]  # one small job
    (job_id, rule), = submitted(out).items()
    assert f"SLURM-job '{job_id}' failed" in out, out[-4000:]
    assert jobcomp(state)[job_id]["JobState"] == "FAILED"
    assert "gpt2.source: cache" in (project / "logs/gpt2_model.log").read_text()
    outputs = ("model.json", "meta.json", "tokenizer/tokenizer.json")  # the job's outputs: gone, none half-written
    assert not any((project / "results/gpt2" / name).exists() for name in outputs), out[-2000:]
    assert (smoke[0] / "results/gpt2/model.json").is_file()  # control: the local run kept its record
