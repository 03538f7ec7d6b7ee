"""Collect results into one context and render the self-contained HTML report."""

from __future__ import annotations

import base64
import json
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

import jinja2
from markupsafe import Markup
import pandas as pd

from .. import cache, machine, runcost
from ..history.changes import moved_rules_text
from ..verdicts.documented import MAX_BAND
from ..verdicts.summary import family_summary, tally
from ..verdicts.verdict import KINDS, LOUD, ORDER_FACTOR, REDUCED_UNJUDGED, STATUSES
from ..families import Family, from_dicts
from ..io import read_csv
from ..missing import is_missing
from ..outcomes import FAILS, HOLDS, NOT_JUDGED
from . import SECTION, section


def _key(path: Path, results: Path) -> str:
    """'results/X1/table.csv' -> 'X1/table'."""
    rel = path.relative_to(results) if path.is_relative_to(results) else path
    return str(rel.with_suffix("")).replace("\\", "/")


def collect(paths: list[str], results_dir: str = "results") -> dict:
    """Load every registered CSV table, SVG figure and meta.json."""
    results = Path(results_dir)
    tables, figures, metas = {}, {}, []
    for p in map(Path, paths):
        if p.name.endswith("meta.json"):
            meta = json.loads(p.read_text())
            meta["_path"] = str(p)
            metas.append(meta)
        elif p.suffix == ".csv":
            tables[_key(p, results)] = read_csv(p)
        elif p.suffix == ".svg":
            figures[_key(p, results)] = "data:image/svg+xml;base64," + base64.b64encode(p.read_bytes()).decode()
        elif p.suffix == ".png":
            figures[_key(p, results)] = "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()
    return {"tables": tables, "figures": figures, "metas": metas, "paths": [str(p) for p in paths]}


def fmt(x, digits: int = 10) -> str:
    """Compact display of a table cell: ints as ints, floats with `digits` significant digits."""
    if x is None:
        return ""
    if is_missing(x):  # NaN, NA, NaT: a cell the table has no value for
        return "—"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return f"{x:,}" if abs(x) >= 10000 else str(x)
    if isinstance(x, float):
        if x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        return f"{x:.{digits}g}"
    return str(x)


def prose_number(x) -> str:
    """A setting as the report's prose prints it: 2000 -> '2,000', -2.0 -> '−2', 0.05 -> '0.05', 1e-250 -> '1e-250'."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        x = int(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    text = f"{x:,}" if isinstance(x, int) else repr(x)
    return "\u2212" + text[1:] if text.startswith("-") else text  # a typographic minus, as in the prose


def series(values, how=prose_number) -> str:
    """[0, 5, 11] -> '0, 5 and 11'."""
    words = [how(v) for v in values]
    return ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else "".join(words)


def percent(x: float) -> str:
    """0.1 -> '10 %' (the report's spacing)."""
    return f"{x * 100:g} %"


SETTING_FORMATS = {"num": prose_number, "series": series, "percent": percent, "raw": lambda x: x,
                   "smallest": lambda xs: prose_number(min(xs)), "dashed": lambda xs: "-".join(map(prose_number, xs)),
                   "list": lambda xs: ", ".join(map(prose_number, xs))}


def setting_lookup(config: dict):
    """`setting("family.layers", "series")` for the templates: a value of this run's config, formatted
    for prose. Rendering with partial data (tests, a family without its config section) prints the
    key's name instead of failing, so StrictUndefined still catches every other slip."""
    def setting(path: str, how: str = "num"):
        node = config
        for key in path.split("."):
            if not isinstance(node, dict) or key not in node:
                return Markup("<code>{}</code>").format(path)
            node = node[key]
        return SETTING_FORMATS[how](node)
    return setting


def verdict_rules() -> dict:
    """The verdict constants the summary's prose states (verdicts.verdict, verdicts.documented)."""
    return {"order_factor": ORDER_FACTOR, "max_band": MAX_BAND, "reduced_unjudged": list(REDUCED_UNJUDGED),
            "reduced_judged": [k for k in KINDS if k not in REDUCED_UNJUDGED and k != "config"]}


def moved_rules(config: dict) -> list[str]:
    """The "what counts as moved" sentences for this run's changes thresholds; [] without them."""
    ch = config.get("changes") or {}
    if "relative_threshold" not in ch or "timing_threshold" not in ch:
        return []
    return moved_rules_text(ch["relative_threshold"], ch["timing_threshold"])


def records_json(df: pd.DataFrame) -> Markup:
    """A DataFrame as a JSON array of records, safe to embed inside <script>."""
    text = df.to_json(orient="records", double_precision=15)
    return Markup(text.replace("</", "<\\/"))


def csv_links(paths: list[str], families: list[Family]) -> dict[str, list[str]]:
    """Family key -> CSV paths (relative to report/) of that family's results, for download links."""
    out: dict[str, list[str]] = defaultdict(list)
    ids = {i: f.key for f in families for i in f.ids}
    for p in sorted(paths):
        parts = Path(p).parts
        if p.endswith(".csv") and len(parts) > 2 and parts[1] in ids:
            out[ids[parts[1]]].append("../" + p)
    return dict(out)


def benchmarks(bench_dir: str = "benchmarks", rules: set[str] | None = None) -> pd.DataFrame:
    """Wall time and peak RSS of every job from Snakemake's benchmark files (only `rules`' when given,
    so files left by rules that no longer exist are not reported)."""
    rows = []
    for f in sorted(Path(bench_dir).glob("*.tsv")):
        if rules is not None and not any(f.stem == r or f.stem.startswith(r + "_") for r in rules):
            continue
        df = pd.read_csv(f, sep="\t")
        if len(df):
            rows.append({"job": f.stem, "seconds": float(df["s"].iloc[-1]), "max_rss_mb": float(df["max_rss"].iloc[-1])})
    return pd.DataFrame(rows, columns=["job", "seconds", "max_rss_mb"])


def run_facts(metas: list[dict]) -> dict:
    """Model source, tokenizer, corpus hash and the like, gathered from every meta.json."""
    keys = ("model_source", "model_revision", "tokenizer", "corpus_sha256", "corpus_source")
    facts: dict[str, set] = defaultdict(set)
    for m in metas:
        for k in keys:
            if m.get(k):
                facts[k].add(str(m[k]))
    return {k: ", ".join(sorted(v)) for k, v in facts.items()}


def environment(metas: list[dict]) -> dict:
    """The environment most jobs ran in (first meta with versions), for the summary."""
    if not metas:
        return {}
    m = max(metas, key=lambda m: m.get("finished_utc", ""))
    # every machine a job ran on (a cluster run may use several), the most jobs' first
    lines = Counter(machine.line(machine.of_meta(x)) for x in metas)
    return {"versions": m.get("versions", {}), "cpu_model": m.get("cpu_model"), "platform": m.get("platform"),
            "device": m.get("device"), "cpu_count": m.get("cpu_count"), "last_job_utc": m.get("finished_utc"),
            "machines": [line for line, _ in lines.most_common()]}


def claims_context(claims: pd.DataFrame | None, summary: pd.DataFrame | None,
                   coverage: pd.DataFrame | None = None, reading: pd.DataFrame | None = None) -> dict:
    """What the templates read about the claims: every row, rows by ID, the ones that need attention first (fails,
    then fragile, then not judged) and the rest, the per-family counts (results/claims_summary.csv), the coverage
    per document (results/claims_coverage.csv) and the statements of the reading (docs/reading.csv, each with its
    `standing`, claims.judge.standings) that the coverage does not count. Empty, not undefined, when the run has no
    claims (StrictUndefined)."""
    rows = [] if claims is None else claims.fillna("").to_dict("records")
    by_id: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_id[r["id"]].append(r)
    fails = [r for r in rows if r["verdict"] == FAILS]
    fragile = [r for r in rows if r["fragile"] and r["verdict"] != FAILS]
    not_judged = [r for r in rows if r["verdict"] == NOT_JUDGED]
    first = fails + fragile + not_judged
    attention = {"fails": fails, "fragile": fragile, "not_judged": not_judged, "all": first, "any": bool(first)}
    seen = {r["claim"] for r in first}
    counts = [] if summary is None else summary.to_dict("records")
    cover = [] if coverage is None else coverage.to_dict("records")
    uncounted = [] if reading is None else reading[~reading.standing.isin((HOLDS, FAILS))].fillna("").to_dict("records")
    return {"rows": rows, "by_id": dict(by_id), "attention": attention,
            "rest": [r for r in rows if r["claim"] not in seen], "counts": counts, "coverage": cover,
            "uncounted": uncounted}


def claim_changes_context(claims_changes: pd.DataFrame | None) -> dict:
    """Archive label -> what "What changed" shows of its claims (results/claims_changes.csv): the claims whose
    verdict changed (first), counts of the rest, and whether that run recorded claims at all."""
    if claims_changes is None or not len(claims_changes):
        return {}
    out = {}
    for archive, rows in claims_changes.fillna("").groupby("archive", sort=False):
        status = rows.status
        out[archive] = {"recorded": not (status == "unrecorded").all(),
                        "changed": rows[status == "changed"].to_dict("records"),
                        "same": int((status == "same").sum()),
                        "new": rows[status == "new"].claim.tolist(),
                        "removed": rows[status == "removed"].claim.tolist()}
    return out


def environment_for(template_dir: str, config: dict | None = None) -> jinja2.Environment:
    """The jinja2 environment of every page (report and history share macros.html.j2, so its filters)."""
    # the core templates, then the family folders beside render/ (a family's section is `<family>/section.html.j2`)
    loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(template_dir),
                                  jinja2.FileSystemLoader(str(Path(template_dir).resolve().parents[1]))])
    env = jinja2.Environment(loader=loader, autoescape=True,
                             extensions=["jinja2.ext.do"],
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = fmt
    env.filters["records"] = records_json
    env.filters["num"] = prose_number
    env.filters["series"] = series
    # a global, so imported macros (macros.html.j2, imported without context) see it too
    env.globals["setting"] = setting_lookup(config or {})
    return env


def render(template_dir: str, comparison: pd.DataFrame, collected: dict, extra: dict | None = None,
           families: list[Family] = (), config: dict | None = None, models: dict | None = None,
           claims: pd.DataFrame | None = None, claims_summary: pd.DataFrame | None = None,
           claims_coverage: pd.DataFrame | None = None, reading: pd.DataFrame | None = None) -> str:
    """Render report.html.j2 from `template_dir` into an HTML string; one section per family.

    `config`: the run's configuration, which the templates read instead of restating it (`setting`);
    `models`: family key -> its model record (which weights ran), for the family's banner and section;
    `claims`, `claims_summary`: results/claims.csv and its counts (None: the Conclusions section says so)."""
    config = config or {}
    env = environment_for(template_dir, config)
    package_dir = Path(template_dir).resolve().parents[1]
    by_id: dict[str, list[dict]] = defaultdict(list)
    for row in comparison.fillna("").to_dict("records"):
        by_id[row["id"]].append(row)
    loud = comparison[comparison.status.isin(LOUD)]
    missing = [f.key for f in families if not (package_dir / section(f.key)).exists()]
    if missing:
        raise FileNotFoundError(f"no report section for famil{'ies' if len(missing) > 1 else 'y'} {missing}: "
                                f"add {package_dir}/<family>/{SECTION}")
    ctx = {
        "families": family_summary(comparison, families), "sections": list(families), "cmp": by_id,
        "t": collected["tables"], "fig": collected["figures"], "metas": collected["metas"],
        "env": environment(collected["metas"]), "loud": loud.to_dict("records"),
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "totals": tally(comparison.status)["counts"], "overall": tally(comparison.status), "statuses": STATUSES,
        "csv_links": csv_links(collected.get("paths", []), families),
        "facts": run_facts(collected["metas"]), "comparison": comparison,
        "config": config, "models": models or {}, "moved_rules": moved_rules(config), "verdict_rules": verdict_rules(),
        "integrity": [],  # files not what their job wrote (render_report checks them): the top banner
        "claims": claims_context(claims, claims_summary, claims_coverage, reading),
        "claim_changes": {},  # archive -> claims whose verdict changed (render_report fills it)
        **(extra or {}),
    }
    return env.get_template("report.html.j2").render(**ctx)


def render_report(comparison: pd.DataFrame, changes: pd.DataFrame, files_path: list[str], model: list[dict],
                  reduced: bool, rules: list[str], families: list[dict], settings: dict, models: list[str] = (),
                  claims_path: str | None = None, claims_summary: pd.DataFrame | None = None,
                  claims_changes: pd.DataFrame | None = None, claims_coverage: pd.DataFrame | None = None,
                  reading_path: str | None = None, template_dir: str | None = None,
                  timing_rules: list[str] = ()) -> dict:
    """rule render_report: report/report.html from the comparison, what changed, and every registered file
    (`files_path`); `model`: the model records the families declared (common.smk model_record), `models` their
    family keys, in the same order;
    `claims_path`, `reading_path`: results/claims.csv and docs/reading.csv (the documents' testable statements),
    each read by its own loader (text cells: document ids such as 000 stay as printed); `timing_rules`: the rules
    that run alone, marked on the run's timeline (results/run_cost.csv, adbench.runcost)."""
    from ..claims.judge import load_judged, standings
    from ..claims.table import load_reading
    from . import TEMPLATES

    claims = load_judged(claims_path) if claims_path else None  # text cells, as the claims job wrote them
    reading = standings(claims, load_reading(reading_path)) if reading_path and claims is not None else None
    # before rendering: every registered file against its job's record (adbench.cache), for the banner
    integrity = [{"path": p, "problem": why} for p, why in cache.check(files_path)]
    jobs, cost = runcost.run_cost(list(timing_rules))
    svg = runcost.figure(jobs, cost["cores"]).encode() if len(jobs) else b""
    timeline = {"cost": cost, "figure": "data:image/svg+xml;base64," + base64.b64encode(svg).decode() if svg else ""}
    extra = {"changes": changes, "bench": benchmarks(rules=set(rules)), "reduced": reduced, "integrity": integrity,
             "claim_changes": claim_changes_context(claims_changes), "timeline": timeline}
    html = render(template_dir or str(TEMPLATES), comparison, collect(files_path), extra=extra,
                  families=from_dicts(families), config=settings, models=dict(zip(models, model)),
                  claims=claims, claims_summary=claims_summary, claims_coverage=claims_coverage, reading=reading)
    return {"html": html.encode("utf-8"), "run_cost": runcost.table(jobs, cost)}
