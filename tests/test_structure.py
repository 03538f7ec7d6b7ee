"""One place for each fact: the family guide is true, families come from their declarations (family.py), the
package has no import circle, Snakemake's own commands work as typed, params are as narrow as the job."""

import importlib
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from adbench.families import Family, declared
from workflow_inspect import from_workflow
from conftest import ROOT, SMOKE, planned_jobs, snakemake

GUIDE = ROOT / "docs/adding-a-family.md"
EXAMPLE = "demo"  # the guide's throwaway family


def _guide_blocks() -> dict[str, str]:
    """Code blocks of the guide keyed by the file their first (comment) line names."""
    out = {}
    for body in re.findall(r"```\w*\n(.*?)```", GUIDE.read_text(), re.S):
        first, _, rest = body.partition("\n")
        m = re.match(r"^(?:#|\{#)\s*(\S+)", first)
        if m:
            out[m.group(1)] = rest if first.startswith("#") else body  # a Jinja comment may stay
    return out


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent is a module, not a package
        return False


def test_every_path_and_module_the_guide_names_exists():
    text = GUIDE.read_text()
    paths = set(re.findall(r"`((?:src|workflow|report|scripts|tests|docs|envs)/[^`\s]+|config\.yaml|"
                           r"\.test/config\.yaml|Snakefile)`", text))
    paths |= set(_guide_blocks())
    # the example's own files are created by the next test; <family> must fit an existing family
    paths = {p.replace("<family>", "scalar").replace("<name>", "measure").replace("<job>", "x")
             for p in paths if EXAMPLE not in p and "Z1" not in p}
    paths -= {"logs/x.log", "benchmarks/x.tsv"}
    assert len(paths) >= 12, paths
    missing = sorted(p for p in paths if not list(ROOT.glob(p)))
    assert not missing, missing
    names = set(re.findall(r"`(adbench(?:\.\w+)+)", text))
    assert {"adbench.jobs.run_rule", "adbench.tables.values_table", "adbench.timing"} <= names
    for name in sorted(n for n in names if EXAMPLE not in n):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):  # longest importable prefix, then attributes
            if _importable(".".join(parts[:cut])):
                obj = importlib.import_module(".".join(parts[:cut]))
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)  # AttributeError names what the guide got wrong
                break
        else:
            pytest.fail(f"guide names {name}, which does not import")
    helpers = (ROOT / "workflow/rules/common.smk").read_text()
    for helper in re.findall(r"`(\w+)\(", text):  # family(, register(, prov(, sized(, LOG( ...
        if helper in {"register", "model_record", "job", "prov", "sized", "LOG", "BENCH", "SCRIPT", "id_outputs"}:
            assert f"def {helper}(" in helpers, helper


DEMO_FILES = ("src/adbench/demo/__init__.py", "src/adbench/demo/family.py", "src/adbench/demo/probe.py",
              "src/adbench/demo/plots.py", "src/adbench/demo/claims.py", "src/adbench/demo/config_checks.py",
              "src/adbench/demo/section.html.j2", "workflow/rules/demo.smk", "tests/test_demo.py")
# The unit tests a family must pass, run on the guide's family in the project copy: structure, claims, the tables.
UNIT_ON_DEMO = ["tests/test_structure.py", "tests/test_claims.py", "tests/test_claims_structure.py",
                "tests/test_claims_bugs.py", "tests/test_reading.py", "tests/test_verdicts_documented.py",
                "tests/test_config.py", "tests/test_demo.py"]
# Every test of those files, but of the per-relation and per-bug ones only the demo's (the main suite runs the rest)
DEMO_ONLY = ("not test_boundary_controls and not test_relation_compares_independent_computations and not "
             "test_a_bug_in_the_measurement_flips_its_claims or rule_matches_quotient or sided")


def _add_demo_family(project: Path) -> None:
    """Follow the guide's places in a project copy, using its code blocks verbatim; the copy gets the tests, the
    guide and pyproject.toml (pytest's markers, snakefmt's line length) too, so its unit tests run there."""
    import shutil

    for folder in ("tests", "docs"):
        shutil.copytree(ROOT / folder, project / folder, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    shutil.copy2(ROOT / "pyproject.toml", project / "pyproject.toml")
    blocks = _guide_blocks()
    for rel in DEMO_FILES:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(blocks[rel])
    with open(project / "config.yaml", "a") as fh:
        fh.write("\n" + blocks["config.yaml"])
    schema_path = project / "workflow/schemas/config.schema.yaml"
    schema = yaml.safe_load(schema_path.read_text())
    schema["properties"].update(yaml.safe_load(blocks["workflow/schemas/config.schema.yaml"]))
    schema["required"].append(EXAMPLE)
    schema_path.write_text(yaml.safe_dump(schema, sort_keys=False))
    for table in ("src/adbench/data/documented.csv", "src/adbench/data/claims.csv", "docs/reading.csv"):
        with open(project / table, "a") as fh:
            fh.write(blocks[table])


WORKFLOW_FAMILIES = (f"import json, sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); "
                     "from workflow_inspect import from_workflow; "
                     "print(json.dumps([[f.key, list(f.ids)] for f in from_workflow('.')]))")
JUDGE_DEMO = ("import sys; from adbench.claims import judge, table; from adbench.claims.judge import tables_from; "
              "c = table.load(); j = judge.judge(c[c.id == 'Z1'], tables_from(['results/Z1/grads.csv'])); "
              "print(j.verdict.iloc[0], j.margin.iloc[0])")


@pytest.mark.slow
@pytest.mark.dag
def test_a_family_added_by_following_the_guide_joins_the_dag_and_the_report(project):
    """The guide's family, in every place the guide lists: in the dry run with its figure and the report, its job
    and figure run, its claim holds on what the job wrote (judged by the core from its claims.py), its config
    check refuses a bad value, and the unit suite's structure, claims and table tests pass with it."""
    import subprocess
    import sys

    env = {**__import__("os").environ, "PYTHONPATH": str(project / "src")}

    def workflow_families() -> list[list]:
        """[key, ids] of each family the copy's workflow declares, parsed in a fresh interpreter (this one has
        already imported the checkout's package, whose declarations it caches)."""
        out = subprocess.run([sys.executable, "-c", WORKFLOW_FAMILIES], cwd=project, env=env, capture_output=True,
                             text=True)
        assert out.returncode == 0, out.stderr[-3000:]
        return __import__("json").loads(out.stdout.splitlines()[-1])

    assert EXAMPLE not in {k for k, _ in workflow_families()}
    _add_demo_family(project)
    assert [[k, ids] for k, ids in workflow_families() if k == EXAMPLE] == [[EXAMPLE, ["Z1"]]]
    res = snakemake(project, "--cores", "2", "-n", *SMOKE)
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = planned_jobs(res.stdout + res.stderr)
    assert jobs.get("demo_z1") == 1 and jobs.get("demo_z1_plot") == 1 and jobs.get("render_report") == 1
    # the tiny jobs run (generic script, run_job) and write what the guide promises
    res = snakemake(project, "--cores", "1", "results/Z1/values.csv", "results/Z1/plot.svg", *SMOKE)
    assert res.returncode == 0, res.stderr[-3000:]
    values = (project / "results/Z1/values.csv").read_text()
    assert "Z1,grad,6.0" in values and (project / "results/Z1/meta.json").exists()
    assert (project / "results/Z1/plot.svg").read_text().lstrip().startswith("<?xml")
    # its claim, judged as verdicts_claims judges it: found through the family's claims.py, and it holds
    out = subprocess.run([sys.executable, "-c", JUDGE_DEMO], cwd=project, capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(project / "src")})
    verdict, margin = out.stdout.split()
    assert (verdict, out.returncode) == ("holds", 0) and float(margin) > 0, out.stderr[-2000:]
    # its config check (config_checks.py) refuses a difference that straddles 0, naming both keys
    (project / "bad.yaml").write_text("demo: {h: 5.0}\n")
    res = snakemake(project, "--cores", "1", "-n", *SMOKE, "bad.yaml")
    assert res.returncode != 0 and "'demo.h' = 5.0 and 'demo.x' = 3.0" in res.stderr + res.stdout
    # the claims fixture, as the guide says (place 9), then the unit tests a family must pass, on the copy
    out = subprocess.run([sys.executable, "tests/claims_fixture.py", "results"], cwd=project, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0 and (project / "tests/data/claims/Z1/grads.csv").exists(), out.stderr[-2000:]
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider",
                          "-k", DEMO_ONLY, *UNIT_ON_DEMO], cwd=project, env=env, capture_output=True, text=True,
                         timeout=1500)
    assert out.returncode == 0, out.stdout[-4000:]


def test_render_refuses_a_family_without_section(tmp_path):
    import pandas as pd

    from adbench.render.page import render

    core = tmp_path / "render" / "templates"  # the package layout: core templates, family folders beside render/
    core.mkdir(parents=True)
    (core / "report.html.j2").write_text("{% for f in sections %}{{ f.key }}{% endfor %}")
    cmp = pd.DataFrame(columns=["id", "status"])
    collected = {"tables": {}, "figures": {}, "metas": []}
    fam = Family("demo", "Demo", ("X1",), 90)
    with pytest.raises(FileNotFoundError, match="demo"):
        render(str(core), cmp, collected, families=[fam])
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo/section.html.j2").write_text("")
    assert render(str(core), cmp, collected, families=[fam]) == "demo"


@pytest.mark.dag
def test_unlock_works_as_typed(project):
    res = snakemake(project, "--cores", "1", "-n", *SMOKE)
    assert res.returncode == 0, res.stderr[-2000:]
    locks = project / ".snakemake/locks"
    locks.mkdir(parents=True, exist_ok=True)
    (locks / "0.output.lock").write_text("results/S1/values.csv\n")  # what a killed run leaves
    res = snakemake(project, "--cores", "1", "results/S1/values.csv", *SMOKE)
    assert res.returncode != 0 and "lock" in (res.stdout + res.stderr).lower()  # the stale lock bites
    res = snakemake(project, "--unlock")  # exactly what Snakemake's message tells the user to type
    assert res.returncode == 0, res.stderr[-2000:]
    assert not list(locks.glob("*.lock"))


def _outputs_and_targets(wf) -> tuple[dict[str, list[str]], list[str]]:
    """Every rule's output patterns, and the default target's inputs (rule all, wildcards expanded)."""
    outputs = {r.name: [str(o) for o in r.output] for r in wf.rules}
    targets = wf.globals["report_inputs"]() + [str(i) for i in wf.get_rule("all").input if isinstance(i, str)]
    return outputs, targets


def _unrequested(outputs: dict[str, list[str]], targets: list[str], skip=("all", "archive")) -> list[str]:
    """Output patterns of rules no target file matches (a deleted one would never be rebuilt)."""
    missing = []
    for rule, patterns in outputs.items():
        for pat in patterns:
            # a wildcard ({name} or {name,constraint}) stands for one path segment
            rx = re.compile("[^/]+".join(re.escape(part) for part in re.split(r"\{[^{}]*\}", pat)))
            if rule not in skip and not any(rx.fullmatch(t) for t in targets):
                missing.append(f"{rule}: {pat}")
    return missing


def test_every_output_of_every_rule_is_a_default_target(tmp_path):
    from workflow_inspect import inspect_workflow

    for configs in (("config.yaml",), ("config.yaml", ".test/config.yaml")):
        outputs, targets = inspect_workflow(ROOT, configs, _outputs_and_targets)
        # the strict check's stamp only in strict mode: a non-strict run never runs the check
        assert _unrequested(outputs, targets) == ["render_strict_check: results/strict_check.txt"], configs
    (tmp_path / "strict.yaml").write_text("strict: true\n")
    outputs, targets = inspect_workflow(ROOT, ("config.yaml", str(tmp_path / "strict.yaml")), _outputs_and_targets)
    assert _unrequested(outputs, targets) == []
    # negative control: an output nobody asks for (like an unregistered table) is found
    assert _unrequested({"x": ["results/X1/orphan.csv", "results/X1/{k,\\d+}/a.csv"]}, ["results/X1/7/a.csv"]) \
        == ["x: results/X1/orphan.csv"]


def _paths_by_id(wf) -> dict[str, list[tuple[str, object]]]:
    """Catalog ID -> [(rule, params.function)] of the rules that write results/<ID>/meta.json."""
    out: dict[str, list] = {}
    for r in wf.rules:
        for o in r.output:
            m = re.fullmatch(r"results/([A-Z]\d+)/meta\.json", str(o))
            if m:
                out.setdefault(m.group(1), []).append((r.name, dict(r.params.items()).get("function")))
    return out


def _function(ref: str):
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def test_every_id_has_one_rule_one_function_one_section_and_a_test():
    from workflow_inspect import inspect_workflow
    from adbench.render import PACKAGE, section

    by_id = inspect_workflow(ROOT, ("config.yaml",), _paths_by_id)
    tests = {p.name: p.read_text() for p in (ROOT / "tests").glob("test_*.py")}  # unit tests, not DAG ones
    for fam in from_workflow(ROOT):
        text = (PACKAGE / section(fam.key)).read_text()
        for mid in fam.ids:
            assert len(by_id.get(mid, [])) == 1, (mid, by_id.get(mid))  # one rule writes the ID's files
            rule, function = by_id[mid][0]
            ref = function[mid] if isinstance(function, dict) else function  # a grouped job names one per ID
            fn = _function(ref)  # the function the rule runs (AttributeError/ImportError name the defect)
            assert f'id="{mid}"' in text, (mid, fam.key)  # the template section that shows it
            tested = [n for n, text in tests.items() if re.search(rf"\b{fn.__name__}\b", text)]
            assert tested, (mid, ref)  # a unit test calls the function by name
    # negative control: an ID two rules write is seen twice (and fails the one-rule assertion above)
    fake = [type("R", (), {"name": n, "output": ["results/X1/meta.json"], "params": {"function": "m:f"}})() for n in "ab"]
    assert _paths_by_id(type("W", (), {"rules": fake})()) == {"X1": [("a", "m:f"), ("b", "m:f")]}


def test_snakefiles_follow_the_formatter(tmp_path):
    import subprocess
    import sys

    snakefmt = str(Path(sys.executable).parent / "snakefmt")
    files = ["Snakefile", "workflow/"]
    res = subprocess.run([snakefmt, "--check", *files], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]  # `make lint` runs the same check
    bad = tmp_path / "Snakefile"  # control: a rule written off the formatter's style is caught
    bad.write_text('rule x:\n    output: "a.txt"\n    shell: "touch {output}"\n')
    assert subprocess.run([snakefmt, "--check", str(bad)], capture_output=True).returncode != 0


def _misnamed(stem: str, text: str) -> list[str]:
    """Rules a rules file defines (`rule <name>:`, `use rule <base> as <name> with:`) not named <stem> or <stem>_*."""
    names = re.findall(r"^(?:rule|use rule \w+ as) (\w+)(?: with)?:", text, re.M)
    return [n for n in names if n != stem and not n.startswith(f"{stem}_")]


def test_every_rule_is_named_after_its_rules_file():
    files = sorted((ROOT / "workflow/rules").glob("*.smk"))
    assert {p.stem: _misnamed(p.stem, p.read_text()) for p in files} == {p.stem: [] for p in files}
    # negative control: a report rule living in another file is named
    assert _misnamed("verdicts", "rule verdicts_compare:\n\n\nuse rule verdicts_compare as report_x with:\n") \
        == ["report_x"]


# ---- the core names no family ----------------------------------------------------------------------------------
# The core: every module of the package that is not a family's folder, with its templates, and the rules files that
# are not a family's. Families fill its registries; it never names one.
CORE_RULES = ["Snakefile", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "workflow/rules").glob("*.smk")
                                   if str(p.relative_to(ROOT)) not in {f.rules for f in declared()})]


def _family_packages() -> list[str]:
    """The family folders: packages with a report section (test_every_family_folder_is_declared: the declared ones)."""
    from adbench.render import PACKAGE, SECTION

    return sorted(d.name for d in PACKAGE.iterdir() if (d / SECTION).exists())


def _core_files() -> list[Path]:
    from adbench.render import PACKAGE

    fams = set(_family_packages())
    files = [p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix in (".py", ".j2", ".js", ".css")
             and p.relative_to(PACKAGE).parts[0] not in fams and "__pycache__" not in p.parts]
    return sorted(files) + [ROOT / f for f in CORE_RULES]


def _naming(text: str, families: list[str], ids: set[str]) -> list[str]:
    """Every mention of a family (its key as a word, GPT-2, or one of its measurement IDs) in `text`."""
    words = re.compile(r"\b(" + "|".join(map(re.escape, families)) + r"|gpt-?2)\b", re.I)
    idre = re.compile(r"\b(" + "|".join(sorted(map(re.escape, ids), key=len, reverse=True)) + r")\b")
    return [m.group(0) for m in words.finditer(text)] + [m.group(0) for m in idre.finditer(text)]


def _ids() -> set[str]:
    from adbench.verdicts.documented import load

    return set(load().id)


def test_the_core_names_no_family():
    families, ids = _family_packages(), _ids()
    hits = {str(p.relative_to(ROOT)): found for p in _core_files()
            if (found := _naming(p.read_text(encoding="utf-8"), families, ids))}
    assert not hits, hits
    assert len(families) >= 8 and len(_core_files()) > 30  # the grep looked at the real tree


def test_the_family_grep_catches_a_family_name_and_an_id():
    families, ids = _family_packages(), _ids()
    assert _naming("a relation that reads G6's saved tensors", families, ids) == ["G6"]
    assert _naming("import adbench.gpt2.arch", families, ids) == ["gpt2"]
    assert _naming("the Scalar tape", families, ids) == ["Scalar"]
    assert _naming("t0 = time.perf_counter(); X1/table", families, ids) == []  # control: not a family


# ---- a family is declared once: every reader takes the declarations --------------------------------------------
def _declaration_gaps(fam: Family, folder: Path, rules_text: str) -> list[str]:
    """What a family's folder or rules file holds that its declaration leaves out, or names but lacks."""
    from adbench.render import TEMPLATE_SUFFIXES

    gaps = [f"template {n}" for n in fam.templates if not (folder / n).exists()]
    gaps += [f"undeclared template {p.name}" for p in folder.iterdir()
             if p.suffix in TEMPLATE_SUFFIXES and p.name not in fam.templates]
    claims = sorted(p.stem for p in folder.glob("claims*.py"))
    gaps += [f"claims modules {claims}, declared {sorted(fam.claims)}"] if claims != sorted(fam.claims) else []
    defined = set(re.findall(r"^(?:rule|use rule \w+ as) (\w+)(?: with)?:", rules_text, re.M))
    gaps += [f"timing rule {r} not in {fam.rules}" for r in fam.timing_rules if r not in defined]
    return gaps


def test_every_family_folder_is_declared_and_every_declaration_is_whole():
    from adbench.render import PACKAGE

    fams = declared()
    assert [f.order for f in fams] == sorted(f.order for f in fams)  # report order
    assert sorted(f.key for f in fams) == _family_packages()  # a folder with a section and no family.py is named
    for fam in fams:
        assert _declaration_gaps(fam, PACKAGE / fam.key, (ROOT / fam.rules).read_text()) == [], fam.key
    # the workflow's families are the declarations (render_report's params), in the same order
    assert [f.as_dict() for f in from_workflow(ROOT)] == [f.as_dict() for f in fams]
    # negative control: a template, a claims module and a timing rule the declaration misses are each named
    scalar = next(f for f in fams if f.key == "scalar")
    short = Family("scalar", "x", ("S1",), 1, claims=("claims",), timing_rules=("scalar_nowhere",))
    assert _declaration_gaps(short, PACKAGE / "scalar", (ROOT / scalar.rules).read_text()) == [
        "undeclared template stepper.js", f"claims modules {sorted(scalar.claims)}, declared ['claims']",
        "timing rule scalar_nowhere not in workflow/rules/scalar.smk"]


def test_the_timing_rules_are_the_declared_ones():
    """sized(timing=True) in the rules and `timing_rules` in the declarations name the same rules."""
    from workflow_inspect import inspect_workflow

    def exclusive(wf):
        return {r.name for r in wf.rules if r.output and r.resources.get("slurm_extra") == "--exclusive"}
    assert inspect_workflow(ROOT, ("config.yaml",), exclusive) == {r for f in declared() for r in f.timing_rules}


def _import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (at any depth of the code: a function's import counts too)."""
    from adbench.provenance import _local_imports, _module_file

    graph = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(rel[:-1] if path.name == "__init__.py" else rel)
        graph[name] = {m for m in _local_imports(name, path, rel[0]) if m != name and _module_file(m)}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan): the import circles."""
    index, low, stack, out = {}, {}, [], []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _parts(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph between the package's parts (adbench.<part>...): an upward import closes a circle here."""
    def part(m: str) -> str:
        return m.split(".")[1] if "." in m else ""
    out: dict[str, set[str]] = {}
    for a, bs in graph.items():
        out.setdefault(part(a), set()).update(part(b) for b in bs if part(b) not in ("", part(a)))
    return out


def test_the_package_has_no_import_circle_between_modules_or_parts():
    from adbench.render import PACKAGE

    graph = _import_graph(PACKAGE)
    assert len(graph) > 100 and graph["adbench.claims.registry"]  # the whole package was read
    assert _circles(graph) == [] and _circles(_parts(graph)) == []
    # negative controls: a sibling imported back (a family's claims), and a lower part importing a higher one
    assert _circles({"f.claims": {"f.claims_x"}, "f.claims_x": {"f.claims"}}) == [["f.claims", "f.claims_x"]]
    assert _circles(_parts({"a.history.x": {"a.matrix.y"}, "a.matrix.y": {"a.history.z"}, "a.history.z": set()})) \
        == [["history", "matrix"]]


# ---- the rules dialect: each rule states only what is its own ---------------------------------------------------
def _restated(text: str) -> list[str]:
    """Directives a rules file states that the base rule and name_logs (common.smk) state once for every rule."""
    found = re.findall(r"^    (log|benchmark):", text, re.M)
    return found + (['SCRIPT("measure")'] if 'SCRIPT("measure")' in text else [])


def test_rules_state_neither_log_nor_benchmark_nor_the_generic_script():
    texts = {p.name: p.read_text() for p in sorted((ROOT / "workflow/rules").glob("*.smk"))}
    assert {n: _restated(t) for n, t in texts.items() if n != "measure.smk"} == {n: [] for n in texts
                                                                               if n != "measure.smk"}
    assert _restated(texts["measure.smk"]) == ['SCRIPT("measure")']  # the base states the script, once
    # negative control: a rule written the old way is named
    assert _restated('rule x:\n    log:\n        LOG("x"),\n    benchmark:\n        BENCH("x")\n') == ["log", "benchmark"]


def _logs(wf) -> dict[str, tuple[list[str], str]]:
    """Rule -> (its logs, its benchmark), for every rule that writes something."""
    def plain(path) -> str:  # without the wildcards' constraints ({process,\d+} -> {process})
        return re.sub(r"\{(\w+),[^{}]*(?:\{[^{}]*\}[^{}]*)*\}", r"{\1}", str(path))
    return {r.name: ([plain(x) for x in r.log], plain(r.benchmark)) for r in wf.rules if r.output}


def test_every_job_logs_and_benchmarks_under_its_rule_name():
    from workflow_inspect import inspect_workflow

    logs = inspect_workflow(ROOT, ("config.yaml",), _logs)
    assert len(logs) > 50
    for name, (log, bench) in logs.items():
        stem = re.fullmatch(r"logs/(.+)\.log", log[0]).group(1)
        assert len(log) == 1 and re.fullmatch(rf"{name}(_\{{\w+\}})*", stem) and bench == f"benchmarks/{stem}.tsv", name
    assert len({log[0] for log, _ in logs.values()}) == len(logs)  # no two rules share a log
    wildcard = {n: log[0] for n, (log, _) in logs.items() if "{" in log[0]}
    assert wildcard["scalar_s9_run"] == "logs/scalar_s9_run_{process}.log"  # one log per job: the wildcard in it
