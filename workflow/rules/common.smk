# Shared helpers every rules file uses: config check, the declared families, provenance params,
# per-rule resources and threads, per-ID output names, and every rule's log and benchmark (name_logs).
import os
import sys
from functools import lru_cache

# Import the checkout's package (the one the scripts run), even before `pip install -e`.
sys.path.insert(0, str(ROOT / "src"))

from adbench.config import ConfigError, check_config
from adbench.families import declared
from adbench.jobs import output_name
from adbench.memfit import UNMEASURED_MB, Need, config_keys, declared_mb, fit_error, job_label, load_peaks
from adbench.provenance import code_hash, versions

# The one validation of the merged config (schema and cross-key checks), before any rule is read.
try:
    check_config(config, ROOT / "workflow/schemas/config.schema.yaml")
except ConfigError as err:
    raise WorkflowError(str(err)) from None

# relative to the rules files in workflow/rules/; ADBENCH_TORCH=pypi (make's TORCH=pypi) takes PyPI's torch
ENV = "../../envs/adbench-pypi.yaml" if os.environ.get("ADBENCH_TORCH") == "pypi" else "../../envs/adbench.yaml"


def source_file(path):
    """A file of the checkout as an input path relative to the working directory. Snakemake re-runs a job
    whose set of input paths changed, so an absolute path would re-run the report jobs in every copy
    of a completed project (tests, a moved checkout); relative, the record survives the move."""
    return os.path.relpath(path, os.getcwd())


# ---- the family registry: each family is declared once, in src/adbench/<key>/family.py ----------------
FAMILIES = {f.key: f for f in declared()}  # key -> Family, in report order
REPORT_FILES = {}  # key -> output paths the report reads (render_report and archive take them all)


def _declared(key, what):
    """Refuse a family that no family.py declares, naming the fix."""
    if key not in FAMILIES:
        raise WorkflowError(f"{what}({key!r}, ...): no family {key!r}; declare it in src/adbench/{key}/family.py")


def register(key, *outputs):
    """Add outputs to family `key`: `rules.<name>.output` (every output of the rule), one named output
    (`rules.<name>.output.sweep`), or lists of paths (expand(...)). Register EVERY output of the
    family's rules: the registered files are the default target (rule all), so a deleted one is
    rebuilt by the job that writes it, and the report reads them (tests/test_structure.py checks)."""
    _declared(key, "register")
    for out in outputs:
        paths = [out] if isinstance(out, str) else list(out)
        REPORT_FILES.setdefault(key, []).extend(str(p) for p in paths)


# family key -> the path of its model record: a JSON file whose `model_source` says which weights its jobs loaded
# ('pretrained', 'random', ...). Claims with that `model` are judged against it; the report shows the family's banner.
MODELS = {}


def model_record(key, path):
    """Declare the model record of family `key` (after the rule that writes it)."""
    _declared(key, "model_record")
    MODELS[key] = str(path)


def family_params():
    """Every declared family as plain data, in report order (render_report's params)."""
    return [f.as_dict() for f in sorted(FAMILIES.values(), key=lambda f: f.order)]


def report_inputs(wildcards=None):
    """Every registered family output, in report order, without duplicates."""
    return list(dict.fromkeys(p for f in family_params() for p in REPORT_FILES.get(f["key"], [])))


def report_values(wildcards=None):
    """The registered values.csv files: what the comparison joins to the documented table."""
    return [p for p in report_inputs() if Path(p).name == "values.csv"]


# ---- the run's settings, as the report jobs see them --------------------------------------------------------
def run_settings():
    """The configuration the verdicts, the claims and the templates read (documented rows and claims declared
    under other settings are not judged; templates look values up instead of restating them), without the keys
    that never reach them (archiving, the archives compared, the version matrix, strict mode): changing those
    re-runs no verdict or claims job (what changed and the report read compare_to through changes.csv). Nor
    timing.exclusive, which only schedules (a timing job alone on the machine or its SLURM node): a SLURM run
    that sets it must not re-run the report's jobs, and inside one SLURM group job a params change upstream
    re-runs every member once per later member (the nested runs do not see each other's metadata)."""
    settings = {
        k: v for k, v in config.items() if k not in ("archive", "compare_to", "matrix", "matrix_targets", "strict")
    }
    settings["timing"] = {k: v for k, v in config["timing"].items() if k != "exclusive"}
    return settings


# ---- outputs of jobs that measure several IDs ----------------------------------------------------
def id_outputs(mid, *tables, meta=True, folder=None):
    """{output_name(ID, table): results/<ID>/<table>.csv, ..., output_name(ID, 'meta'): .../meta.json}
    for a rule that measures several IDs; run_job writes results[ID][table] (or results[name]) there."""
    base = f"results/{folder or mid}"
    out = {output_name(mid, t): f"{base}/{t}.csv" for t in tables}
    if meta:
        out[output_name(mid, "meta")] = f"{base}/meta.json"
    return out


# ---- provenance -----------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _code(modules):
    return code_hash(*modules)


def job(function, args=None, packages=("torch", "numpy"), **prov_kw):
    """A rule's params: `function` ('module:function', or {ID: 'module:function'} for several IDs in one
    process), the function's config arguments `args`, and `prov` derived from the modules `function`
    names (their intra-package imports are followed by the code hash). Use as `params: **job(...)`."""
    refs = function.values() if isinstance(function, dict) else [function]
    modules = sorted({ref.partition(":")[0] for ref in refs})
    return dict(
        function=function, args=args if args is not None else {}, prov=prov(*modules, packages=packages, **prov_kw)
    )


def prov(*modules, packages=("torch", "numpy"), seed=None, uses_device=False, torch_threads=None):
    """params.prov: the versions and package-code hash a job depends on, plus device and seed. In params,
    so a change re-runs exactly the jobs affected. Only rules with uses_device=True run on config["device"];
    the rest are CPU probes. Torch's threads are the job's threads (adbench.jobs sets them; see THREADS
    below); `torch_threads` only for a job whose own process uses fewer (a launcher whose ranks hold the cores)."""
    out = {
        "versions": versions(("python", *packages)),
        "code": _code(tuple(sorted(modules))),
        "device": config["device"] if uses_device else "cpu",
        "seed": config["seed"] if seed is None else seed,
    }
    return out | ({"torch_threads": torch_threads} if torch_threads else {})


# ---- resources ------------------------------------------------------------------------------------
# Every rule declares mem_mb and runtime (minutes) through `sized(...)`; the numbers come from the benchmark
# files of a full default run on CPU (benchmarks/<rule>.tsv, columns s and max_rss). mem_mb: a rule that passes
# none declares its peak RSS measured there (src/adbench/data/peaks.csv) with adbench.memfit's headroom, 1.25 x
# peak + 256 MB (UNMEASURED_MB until a reference run measures it); a rule whose peak follows config passes its
# own (a config key, e.g. `<family>.mem_mb`). Before any job starts, memory_fit() stops a run whose cap a planned job exceeds. runtime is
# about 3x the wall time rounded up to whole minutes (at least 5), so a slower cluster node or a larger corpus
# does not get a job killed. The default fits the many short jobs (<1 min).
#
# THREADS. A rule's thread count is stated once, in Snakemake's own `threads` directive (without one,
# one thread). The local scheduler reserves that many cores, `sized` asks SLURM for as many CPUs
# (cpus_per_task reads the job's threads), and adbench.jobs sets torch's intra-op threads to the job's
# threads, so the three cannot disagree. Snakemake lowers a job's threads to --cores when that is
# smaller, and all three follow.
#
# Timing jobs must run alone, and `sized(timing=True)` is the one list of them: both schedulers
# read it from the rule's resources. Every job takes one `machine_share`; a timing job takes them
# all (MACHINE_SHARES, the global amount registered in the Snakefile), so the local scheduler
# starts it only when nothing else runs and starts nothing beside it; on SLURM its `slurm_extra`
# asks for a node of its own (--exclusive). A profile that sets the global machine_share far
# above MACHINE_SHARES lets other jobs run on other nodes meanwhile. timing.exclusive: false (the
# smoke overlay) makes timing jobs ordinary. The timing chain (timing.smk) times one thread,
# TIMING_THREADS; a timing job of its own states its threads like any rule.
MACHINE_SHARES = 1000
TIMING_THREADS = 1
# the process runs of every timing chain: run jobs process=1..timing.processes, which the summary reads
TIMING_PROCESSES = range(1, config["timing"]["processes"] + 1)


def timing_args(*keys, **extra):
    """A timing chain step's args: these timing.* settings (in this order), then the family's own `extra`."""
    return {k: config["timing"][k] for k in keys} | extra


# ---- scheduling ----------------------------------------------------------------------------------
# A rule's `priority:` is one of PRIORITY's four; why each, once, here. A run's wall cannot beat its
# floor: the timing jobs' walls (they run alone) plus the rest of the work divided by the cores. To come
# close, the timing jobs run FIRST ("timing"), while no other job holds a core: one that becomes ready
# later must wait for every running job to finish, idling cores. So do the short jobs a timing job needs
# ("first", and `sized(first=True)`: they run alone too, a few seconds). Then the longest jobs ("long",
# LPT), so no long job runs alone at the end, and a family's chain to the report ("chain") as soon as it
# is ready. Snakemake's scheduler maximizes the SUM of the priorities of the jobs it starts together,
# hence the gaps: one "first" job outweighs a timing job, and a timing job outweighs any set of
# ordinary jobs that fits on the machine.
PRIORITY = dict(first=2000, timing=1000, long=50, chain=10)


def sized(mem_mb=None, runtime=5, timing=False, uses_device=False, first=False):
    """resources for a rule: mem_mb, runtime (min), cpus_per_task (the job's threads: THREADS above) and
    machine_share; an exclusive timing job takes every machine_share and, on SLURM, a node of its own. A rule
    whose tensors go to config["device"] asks a cluster for one GPU when that is cuda (gpu=0 requests none;
    the local executor ignores gpu and slurm_extra). `first`: a short job the timing jobs wait for,
    run alone at the start (see scheduling above); it does not time anything, so no SLURM node of its own.
    mem_mb None: the rule's measured peak with headroom (_measured_mem_mb)."""
    res = dict(
        mem_mb=_measured_mem_mb if mem_mb is None else mem_mb,
        runtime=runtime,
        cpus_per_task=_job_threads,
        machine_share=1,
    )
    if timing and config["timing"]["exclusive"]:
        res["machine_share"] = MACHINE_SHARES
        res["slurm_extra"] = "--exclusive"
    elif first and config["timing"]["exclusive"]:
        res["machine_share"] = MACHINE_SHARES
    if uses_device:
        res["gpu"] = 1 if config["device"] == "cuda" else 0
    return res


def _job_threads(wildcards, threads):
    """cpus_per_task, the threads Snakemake gives the job (its rule's `threads`, at most --cores)."""
    return threads


PEAKS = load_peaks()


def _measured_mem_mb(wildcards, rulename):
    """mem_mb of a rule that passes none, from its measured peak with headroom (Snakemake passes the rule name)."""
    return declared_mb(PEAKS[rulename]) if rulename in PEAKS else UNMEASURED_MB


def memory_fit():
    """Stop before any job starts when a planned job declares more mem_mb than the run's --resources mem_mb (one
    line per job, with the fix). Local runs only: under a cluster executor mem_mb caps nothing (profiles/slurm)."""
    cap = workflow.global_resources.get("mem_mb")
    cap = getattr(cap, "value", cap)
    if not workflow.local_exec or cap is None:
        return
    jobs = workflow.dag.needrun_jobs()
    needs = [Need(job_label(j.rule.name, j.wildcards_dict), j.rule.name, _declared_mem_mb(j)) for j in jobs]
    message = fit_error(needs, cap, config_keys(config))
    if message:
        raise WorkflowError(message)


def _declared_mem_mb(job):
    """A job's mem_mb as its rule declares it. Snakemake 9 lowers a job's mem_mb to the run's cap (as it lowers
    threads to --cores), so job.resources would always fit, and the job would run beside too little memory."""
    declared = job.rule.resources.get("mem_mb").evaluate(job.wildcards, rulename=job.rule.name, input=job.input)
    return declared.value or 0


def job_rules():
    """The rules that run jobs: every rule with an output (rule all and the timing chain's bases write none)."""
    return [r for r in workflow.rules if r.output]


def one(pattern, **wildcards):
    """The one path of a wildcard rule's output `pattern` (rules.<rule>.output.<name>) for these wildcards,
    for an input that reads one job's file: expand(...) gives a list, which the function would receive."""
    (path,) = expand(pattern, **wildcards)
    return path


# ---- logs, benchmarks, the script: stated once (the base rule `measure` is in measure.smk) ---------------------
def LOG(job):
    return f"logs/{job}.log"


def BENCH(job):
    return f"benchmarks/{job}.tsv"


def SCRIPT(name):
    return f"../../scripts/{name}.py"


def job_name(rule):
    """<rule>, then _{wildcard} per wildcard of its outputs (sorted): the stem of its log and benchmark, one per job."""
    return "_".join([rule.name, *(f"{{{w}}}" for w in sorted(rule.wildcard_names))])


def name_logs():
    """Every rule that runs something and states no log of its own logs to logs/<job>.log and benchmarks to
    benchmarks/<job>.tsv (job_name): the one spelling, so no rule restates it and no two jobs share a file.
    The bases get theirs after the rules that use them are read, so no use inherits a base's log."""
    for r in workflow.rules:
        if r.norun:  # the default target (all) runs nothing, so it logs nothing
            continue
        # the path modifier a stated log would get: the one of the rules file (none of ours is a module)
        modifier = r.output_modifier or workflow.modifier.path_modifier
        if not r.log:
            r.log_modifier = modifier
            r.set_log(LOG(job_name(r)))
        if r.benchmark is None:
            r.benchmark_modifier = modifier
            r.benchmark = BENCH(job_name(r))
