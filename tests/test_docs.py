"""The README and docs/ pages are true as typed: every command in them runs (cheaply), and every list in them
that mirrors a code declaration is generated from that declaration.

How each command runs (fenced `sh` blocks, and command-like code spans in table rows):
- `make ...`: `make -n ...` in the repository (prints the recipe, runs nothing);
- `snakemake ...` / `.venv/bin/snakemake ...`: the same arguments plus `-n`, in a copy of the project;
- `python -m mod ...` / `python script.py ...`: `--help`, and every `--flag` it uses must appear in the help;
- anything else must be marked in the doc, right before its fence or code span, with
  `<!-- docs-test: help -->` (its subcommand's `--help`, flags checked) or `<!-- docs-test: skip: <why> -->`.
The marked commands are listed in MARKED below: a new mark fails the test until it is named there.

`python tests/test_docs.py --write` regenerates the generated blocks; the test fails when one is stale.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
# Commands that are not fully run, by their text up to the first space-separated argument that is a path or
# value: each with why. Kept small on purpose: a route nobody can run in CI is a route nobody tests.
MARKED = {
    "hf download": "help: a download needs the network; `hf download --help` proves the command and its flags",
    "pip install -U": "skip: an upgrade of the user's own environment; what follows it is `make report`",
    "snakemake": "skip: needs conda, which CI's machines lack; both conda files are checked against their locks",
}
MAX_MARKED = 4
# Make targets another branch adds (TODO(coordinator): empty this once they land; the test fails when one exists).
PENDING_TARGETS: dict[str, str] = {}
COMMAND = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(?:\S*/)?(?:make|snakemake|python[\d.]*|hf|pip\d?|uv|conda)\s")
MARK = re.compile(r"<!--\s*docs-test:\s*(help|skip)(?::\s*([^>]*?))?\s*-->\s*$")
GENERATED = re.compile(r"(<!-- generated: (\w+) \([^)]*\) -->\n)(.*?)(<!-- end generated -->)", re.S)


@dataclass(frozen=True)
class Command:
    page: str
    text: str
    mark: str = ""  # "", "help" or "skip"


def _joined(block: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines dropped."""
    lines = block.replace("\\\n", " ").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def _mark(line: str) -> str:
    """The docs-test mark a line ends with ("help" or "skip"), or ""."""
    m = MARK.search(line)
    return m.group(1) if m else ""


def commands(page: str, text: str) -> list[Command]:
    """Every command of a page: each line of its ```sh blocks (marked by the line before the fence), and
    command-like code spans in table rows (marked right before the span)."""
    out = []
    for m in re.finditer(r"^```sh\n(.*?)^```", text, re.S | re.M):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        out += [Command(page, c, _mark(before)) for c in _joined(m.group(1))]
    for row in re.finditer(r"^\|.*$", text, re.M):
        for span in re.finditer(r"`([^`]+)`", row.group(0)):
            if COMMAND.match(span.group(1)):
                out.append(Command(page, span.group(1), _mark(row.group(0)[:span.start()].rstrip())))
    return out


def all_commands() -> list[Command]:
    """The commands of README.md and every docs/ page."""
    return [c for p in PAGES for c in commands(p, (ROOT / p).read_text())]


def _split(cmd: str) -> tuple[dict[str, str], list[str]]:
    """(leading VAR=value assignments, the argument vector); a trailing `# comment` is dropped."""
    words = shlex.split(cmd, comments=True)
    env = {}
    while words and re.match(r"^[A-Z_]+=", words[0]):
        k, _, v = words.pop(0).partition("=")
        env[k] = v
    return env, words


def key(cmd: str) -> str:
    """A command's name for MARKED: its words up to the first path, value or long argument."""
    _, words = _split(cmd)
    head = []
    for w in words:
        if head and (("/" in w and not w.startswith("-")) or "=" in w or w.startswith("--")):
            break
        head.append(Path(w).name if not head else w)
    return " ".join(head)


def help_argv(words: list[str]) -> list[str]:
    """The `--help` call of a command: its program and subcommands (words before the first path/value/flag)."""
    prog = [sys.executable] if Path(words[0]).name.startswith("python") else [str(BIN / Path(words[0]).name)]
    rest = words[1:]
    if prog[0] == sys.executable and rest[:1] == ["-m"]:
        prog, rest = prog + rest[:2], rest[2:]
    elif prog[0] == sys.executable and rest:
        prog, rest = prog + [str(ROOT / rest[0])], rest[1:]
    subs = []
    for w in rest:
        if not re.fullmatch(r"[a-z][a-z-]*", w):
            break
        subs.append(w)
    return [*prog, *subs, "--help"]


def run_help(cmd: Command) -> str:
    """Run the command's --help; return an error, or "" when the help names every --flag the command uses."""
    env, words = _split(cmd.text)
    res = subprocess.run(help_argv(words), cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env, "NO_COLOR": "1", "COLUMNS": "200"})
    out = res.stdout + res.stderr
    flags = {w.split("=")[0] for w in words if w.startswith("--")}
    missing = sorted(f for f in flags if f not in out)
    if res.returncode != 0 or missing:
        return f"{cmd.page}: `{cmd.text}`: --help exited {res.returncode}, flags not in its help: {missing}\n{out[-800:]}"
    return ""


def run_make(cmd: Command) -> str:
    """`make -n` with the command's variables and targets, in the repository; an error or ""."""
    env, words = _split(cmd.text)
    targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
    pending = [t for t in targets if t in PENDING_TARGETS]
    res = subprocess.run(["make", "-n", *words[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env})
    if pending:
        exists = "No rule to make target" not in res.stderr
        return f"{cmd.page}: make target {pending} now exists: remove it from PENDING_TARGETS" if exists else ""
    return "" if res.returncode == 0 else f"{cmd.page}: `{cmd.text}` (make -n) failed:\n{res.stderr[-1500:]}"


def smk_args(cmd: Command) -> Command | None:
    """The Snakemake command a make command's SMK_ARGS=... hands on (dry-run it too), or None."""
    env, words = _split(cmd.text)
    args = [w.partition("=")[2] for w in words[1:] if w.startswith("SMK_ARGS=")]
    return Command(cmd.page, "snakemake " + args[0]) if args else None


def run_snakemake(cmd: Command, project: Path) -> str:
    """The command as a dry run in a project copy; an error or ""."""
    env, words = _split(cmd.text)
    err = _dry_run(tuple(sorted(env.items())), tuple(words[1:]), project)
    return f"{cmd.page}: `{cmd.text}` (dry run) failed:\n{err}" if err else ""


@functools.lru_cache(maxsize=None)
def _dry_run(env: tuple, args: tuple, project: Path) -> str:
    """Snakemake's dry run of `args` (once per distinct call: make's SMK_ARGS repeat commands); stderr or ""."""
    res = subprocess.run([sys.executable, "-m", "snakemake", *args, "-n"], cwd=project, capture_output=True,
                         text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(project / "src"), **dict(env)})
    return "" if res.returncode == 0 else res.stderr[-1500:]


# ---- generated blocks: lists that mirror code declarations ----

def _determinism():
    """tests/dag/test_determinism.py, the declaration of what may differ between two runs."""
    spec = importlib.util.spec_from_file_location("docs_determinism", ROOT / "tests/dag/test_determinism.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def volatile_block() -> str:
    """The volatile files, columns and rows, as tests/dag/test_determinism.py declares them."""
    d = _determinism()
    files = ", ".join(f"`{f}`" for f in d.VOLATILE_FILES)
    cols = "; ".join(f"`{p}`: " + ", ".join(f"`{c}`" for c in sorted(cs)) for p, cs in d.VOLATILE_COLUMNS.items())
    rows: dict[str, set[str]] = {}
    for f, i, q in sorted(d.VOLATILE_ROWS):
        rows.setdefault(f, set()).add(f"{i} `{q}`")
    rows_txt = "; ".join(f"`{f}`: " + ", ".join(sorted(r)) for f, r in rows.items())
    timed = ", ".join(f"`{f}`" for f in d.TIMED_VALUES)
    return (f"- whole files (stopwatch output; paths under `results/`): {files};\n"
            f"- columns whose name ends in `{d.SUFFIX}`: {cols};\n"
            f"- timed rows inside deterministic tables: {rows_txt}; and in `comparison.csv` every row that comes "
            f"from {timed};\n"
            f"- in `claims.csv`, the rows of claims whose test rests on timings (their reasons quote the stopwatch).\n")


def _columns() -> dict[str, list[str]]:
    """Each result file's columns, from the functions and constants that write it (run on tiny inputs)."""
    import pandas as pd

    from adbench import runcost
    from adbench.claims import judge
    from adbench.families import Family
    from adbench.history import changes
    from adbench.tables import values_table
    from adbench.verdicts import documented, summary, verdict

    cmp = verdict.compare(documented.load().head(1), pd.DataFrame(columns=["id", "quantity", "value", "note"]))
    summ = summary.with_claims(summary.summary_table(cmp, [Family("f", "F", tuple(cmp.id), 1)]), None)
    cost = runcost.table(pd.DataFrame(columns=runcost.COLUMNS), dict.fromkeys(runcost.SUMMARY, 0))
    return {"results/<ID>/values.csv": list(values_table("X1", [("q", 1.0)]).columns),
            "results/comparison.csv": list(cmp.columns), "results/summary.csv": list(summ.columns),
            "results/claims.csv": list(judge.OUTPUT), "results/claims_summary.csv": ["family", *judge.COUNTS],
            "results/claims_coverage.csv": list(judge.COVERAGE), "results/changes.csv": list(changes.COLUMNS),
            "results/claims_changes.csv": list(changes.CLAIM_COLUMNS), "results/run_cost.csv": list(cost.columns)}


def columns_block() -> str:
    """The columns of every result table, one bullet per file."""
    lines = [f"- `{f}`: " + ", ".join(f"`{c}`" for c in cols) for f, cols in _columns().items()]
    return "\n".join(lines) + "\n"


BLOCKS = {"volatile": volatile_block, "columns": columns_block}


def regenerated(text: str) -> str:
    """The page with every generated block rebuilt from the code."""
    return GENERATED.sub(lambda m: m.group(1) + BLOCKS[m.group(2)]() + m.group(4), text)


def write() -> list[str]:
    """Rewrite the generated blocks of every page; the pages that changed."""
    changed = []
    for page in PAGES:
        path = ROOT / page
        old = path.read_text()
        new = regenerated(old)
        if new != old:
            path.write_text(new)
            changed.append(page)
    return changed


# ---- tests ----

RUNNERS = {"make": "make", "snakemake": "snakemake", "python": "help", "python3": "help", "python3.11": "help"}
# Files the docs link that another branch adds (TODO(coordinator): empty once they land; fails when one exists).
PENDING_FILES: set[str] = set()


def how(cmd: Command) -> str:
    """How a command runs here: make, snakemake, help, skip, or "" when no cheap way is known and it is unmarked."""
    if cmd.mark:
        return cmd.mark
    _, words = _split(cmd.text)
    return RUNNERS.get(Path(words[0]).name, "")


def check(cmd: Command, project: Path) -> str:
    """Run one command the cheap way; an error message or ""."""
    kind = how(cmd)
    if kind == "make":
        inner = smk_args(cmd)
        return run_make(cmd) + (run_snakemake(inner, project) if inner else "")
    if kind == "snakemake":
        return run_snakemake(cmd, project)
    if kind == "help":
        return run_help(cmd)
    return "" if kind == "skip" else f"{cmd.page}: `{cmd.text}`: no cheap way to run it; mark it (see this module)"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project copy for the dry runs, with the shipped reference archive that the docs compare with."""
    from conftest import copy_project

    dest = copy_project(tmp_path_factory.mktemp("docs") / "project")
    shutil.copytree(ROOT / "reference", dest / "reference")
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")  # the matrix reads the pins
    return dest


def test_every_page_has_commands_and_each_has_a_way_to_run():
    cmds = all_commands()
    by_page = {c.page for c in cmds}
    assert {"README.md", "docs/running.md", "docs/comparing.md", "docs/cluster.md"} <= by_page, by_page
    assert not [c.text for c in cmds if not how(c)], "unmarked commands with no cheap way to run"
    marked = {key(c.text): c.mark for c in cmds if c.mark}
    assert marked == {k: v.split(":")[0] for k, v in MARKED.items()}, marked
    assert len(MARKED) <= MAX_MARKED


def same_run(cmd: Command) -> tuple:
    """What decides a command's cheap run: its variables and words, without comments and core counts (a dry
    run plans the same DAG for --cores 2 and --cores 4), so equivalent commands run once."""
    env, words = _split(cmd.text)
    drop = {i for i, w in enumerate(words) if w == "--cores"}
    words = [w for i, w in enumerate(words) if i not in drop and i - 1 not in drop and w != "-n"]
    return how(cmd), tuple(sorted(env.items())), Path(words[0]).name, *words[1:]


@pytest.mark.dag  # dry-runs Snakemake (about 25 s of CPU)
def test_every_command_runs_as_typed(project):
    """Each distinct command, the cheap way; the Snakemake dry runs two at a time (they parse the workflow)."""
    from concurrent.futures import ThreadPoolExecutor

    unique = {same_run(c): c for c in all_commands()}
    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = [e for e in pool.map(lambda c: check(c, project), unique.values()) if e]
    assert not errors, "\n\n".join(errors)


@pytest.mark.dag
def test_a_wrong_command_is_caught(project, tmp_path):
    """Negative controls: each cheap runner fails on a command that is wrong."""
    assert run_snakemake(Command("x", ".venv/bin/snakemake --cores 2 results/S99/values.csv"), project)
    assert run_snakemake(Command("x", ".venv/bin/snakemake --profile profiles/nowhere"), project)
    assert run_make(Command("x", "make no-such-target"))
    assert run_help(Command("x", "python -m adbench.recover --no-such-flag"))
    assert "no cheap way" in check(Command("x", "curl https://example.org"), project)
    assert key("hf download openai-community/gpt2 --revision abc") == "hf download"
    page = "| route | `make report` | <!-- docs-test: skip: why --> `pip install -U torch==2` |\n```sh\nmake test  # t\n```\n"
    got = commands("p", page)
    assert [(c.text, c.mark) for c in got] == [("make test  # t", ""), ("make report", ""),
                                               ("pip install -U torch==2", "skip")]


def test_generated_blocks_are_current():
    stale = [p for p in PAGES if regenerated((ROOT / p).read_text()) != (ROOT / p).read_text()]
    assert not stale, f"generated blocks out of date in {stale}: run .venv/bin/python tests/test_docs.py --write"
    found = {m.group(2) for p in PAGES for m in GENERATED.finditer((ROOT / p).read_text())}
    assert found == set(BLOCKS), found


def test_the_generated_lists_follow_the_declarations():
    """The volatile list names every declared file and column (and a declaration the doc lacks is caught)."""
    d = _determinism()
    text = volatile_block()
    for item in [*d.VOLATILE_FILES, *set().union(*d.VOLATILE_COLUMNS.values())]:
        assert f"`{item}`" in text, item
    page = (ROOT / "docs/running.md").read_text()
    assert "`plain_minor_faults_volatile`" in page  # the column today's README lacked
    assert regenerated(page.replace("`plain_minor_faults_volatile`, ", "")) == page  # stale text is rebuilt
    cols = _columns()
    assert cols["results/claims.csv"][:2] == ["claim", "id"] and "tolerance" in cols["results/comparison.csv"]


def _links(page: str) -> list[str]:
    """Relative link targets of a page, resolved from the repository root."""
    base = (ROOT / page).parent
    out = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (ROOT / page).read_text()):
        if not re.match(r"^[a-z]+:", target):
            out.append(str((base / target).resolve().relative_to(ROOT)))
    return out


def test_readme_is_a_front_door_and_every_link_resolves():
    assert len((ROOT / "README.md").read_bytes()) < 8192
    links = {t for p in PAGES for t in _links(p)}
    missing = sorted(t for t in links if not (ROOT / t).exists() and t not in PENDING_FILES)
    assert not missing, missing
    landed = sorted(t for t in PENDING_FILES if (ROOT / t).exists())
    assert not landed, f"{landed} exist now: remove them from PENDING_FILES"


def test_configuration_page_names_every_top_level_key():
    import yaml

    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    page = (ROOT / "docs/configuration.md").read_text()
    listed = set(re.findall(r"^\| `(\w+)` \|", page, re.M))
    assert listed == set(schema["properties"]), (sorted(set(schema["properties"]) - listed),
                                                 sorted(listed - set(schema["properties"])))


# Durations that are settings, not measurements, by page.
SETTINGS = {"docs/cluster.md": ["60 s", "300 s"]}  # SLURM's MinJobAge bound and default
DURATION = re.compile(r"\b\d[\d.,]*\s?(?:s|min|ms|µs|h|hours?|minutes?|seconds?)\b")


def test_measured_wall_times_live_in_reference_data():
    """No page types a measured duration; reference/wall_times.csv holds them, each with its machine."""
    import pandas as pd

    prose = {p: DURATION.findall(re.sub(r"```.*?```", "", (ROOT / p).read_text(), flags=re.S)) for p in PAGES
             if p not in ("docs/adding-a-family.md", "docs/setup.md")}
    assert not {p: d for p, d in prose.items() if d != SETTINGS.get(p, [])}, prose
    assert DURATION.findall("a fresh run took 7 min 56 s")  # negative control: the pattern bites
    wall = pd.read_csv(ROOT / "reference/wall_times.csv")
    assert {"what", "seconds", "cpu", "cores", "date", "source"} <= set(wall.columns)
    assert (wall.seconds > 0).all() and wall.cpu.str.len().gt(0).all() and wall.date.notna().all()




def main(argv: list[str] | None = None) -> int:
    """Command line: --write regenerates the docs' generated blocks."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the generated blocks of README.md and docs/")
    args = ap.parse_args(argv)
    if args.write:
        print("rewrote: " + (", ".join(write()) or "nothing (all current)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
