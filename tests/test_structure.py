"""One place for each fact: the family guide is true, families come from their rules files, Snakemake's
own commands work as typed, params are as narrow as the job, timing jobs run alone."""

import importlib
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from adbench.families import Family
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
             for p in paths if EXAMPLE not in p and "X1" not in p}
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
        if helper in {"family", "register", "job", "prov", "sized", "LOG", "BENCH", "SCRIPT", "id_outputs"}:
            assert f"def {helper}(" in helpers, helper


DEMO_FILES = ("src/adbench/demo/__init__.py", "src/adbench/demo/probe.py", "src/adbench/demo/plots.py",
              "src/adbench/demo/claims.py", "src/adbench/demo/config_checks.py", "src/adbench/demo/section.html.j2",
              "workflow/rules/demo.smk")


def _add_demo_family(project: Path) -> None:
    """Follow the guide's five places in a project copy, using its code blocks verbatim."""
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
    for table in ("documented.csv", "claims.csv"):
        with open(project / "src/adbench/data" / table, "a") as fh:
            fh.write(blocks[f"src/adbench/data/{table}"])


JUDGE_DEMO = ("import sys; from adbench.claims import judge, table; from adbench.claims.judge import tables_from; "
              "c = table.load(); j = judge.judge(c[c.id == 'X1'], tables_from(['results/X1/grads.csv'])); "
              "print(j.verdict.iloc[0], j.margin.iloc[0])")


@pytest.mark.slow
@pytest.mark.dag
def test_a_family_added_by_following_the_guide_joins_the_dag_and_the_report(project):
    """The guide's family, in its five places: in the dry run with its figure and the report, its job and figure
    run, its claim holds on what the job wrote (judged by the core from its claims.py), its config check refuses
    a bad value, and the core still names no family."""
    import subprocess
    import sys

    before = from_workflow(project)
    assert EXAMPLE not in {f.key for f in before}
    _add_demo_family(project)
    fams = from_workflow(project)
    assert [f.key for f in fams if f.key == EXAMPLE] == [EXAMPLE]
    assert next(f for f in fams if f.key == EXAMPLE).ids == ("X1",)
    res = snakemake(project, "--cores", "2", "-n", *SMOKE)
    assert res.returncode == 0, res.stderr[-3000:]
    jobs = planned_jobs(res.stdout + res.stderr)
    assert jobs.get("demo_x1") == 1 and jobs.get("demo_x1_plot") == 1 and jobs.get("render_report") == 1
    # the tiny jobs run (generic script, run_job) and write what the guide promises
    res = snakemake(project, "--cores", "1", "results/X1/values.csv", "results/X1/plot.svg", *SMOKE)
    assert res.returncode == 0, res.stderr[-3000:]
    values = (project / "results/X1/values.csv").read_text()
    assert "X1,grad,6.0" in values and (project / "results/X1/meta.json").exists()
    assert (project / "results/X1/plot.svg").read_text().lstrip().startswith("<?xml")
    # its claim, judged as verdicts_claims judges it: found through the family's claims.py, and it holds
    out = subprocess.run([sys.executable, "-c", JUDGE_DEMO], cwd=project, capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(project / "src")})
    verdict, margin = out.stdout.split()
    assert (verdict, out.returncode) == ("holds", 0) and float(margin) > 0, out.stderr[-2000:]
    # its config check (config_checks.py) refuses a difference that straddles 0, naming both keys
    (project / "bad.yaml").write_text("demo: {h: 5.0}\n")
    res = snakemake(project, "--cores", "1", "-n", *SMOKE, "bad.yaml")
    assert res.returncode != 0 and "'demo.h' = 5.0 and 'demo.x' = 3.0" in res.stderr + res.stdout


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
CORE_RULES = ["Snakefile", *(f"workflow/rules/{f}.smk" for f in ("common", "timing", "corpus", "verdicts", "changes",
                                                                  "archive", "render"))]


def _family_packages() -> list[str]:
    """The family folders: packages with a report section."""
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
