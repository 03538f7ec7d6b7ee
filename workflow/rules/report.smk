# Comparison against the documented table, the single self-contained HTML report, and the
# archive / compare_to machinery that says what moved since an earlier run.
from datetime import date

from adbench.history.archive import default_label
from adbench.render import TEMPLATES

ARCHIVE_LABEL = config["archive"]["label"] or default_label(versions(), config["device"], date.today())
# compare_to labels are checked with the rest of the config (adbench.config)


rule report_compare:
    input:
        documented=str(ROOT / "src/adbench/data/documented.csv"),
        values=report_values,
    output:
        comparison=report("results/comparison.csv", caption="../captions/comparison.rst", category="Comparison"),
        # outcome counts and reproduction score per family and overall
        summary="results/summary.csv",
    params:
        **job("adbench.verdicts.job:measure_comparison", packages=(),
              args=dict(reduced=config["reduced_sizes"], families=family_params())),
    resources: **sized()
    log: LOG("report_compare")
    benchmark: BENCH("report_compare")
    conda: ENV
    script: SCRIPT("measure")


rule render_report:
    input:
        comparison="results/comparison.csv",
        changes="results/changes.csv",
        files=report_inputs,
        templates=sorted(str(p) for p in TEMPLATES.rglob("*") if p.suffix in (".j2", ".js", ".css")),
        # which GPT-2 ran (the banner reads it); none when no rules file declares the GPT-2 family
        model=[str(rules.gpt2_model.output.model)] if "gpt2" in FAMILIES else [],
    output:
        html=report("report/report.html", caption="../captions/report_html.rst", category="Report"),
    params:
        reduced=config["reduced_sizes"],
        # the run's settings, which the templates look up instead of restating them; not the ones that
        # never reach the page (archiving, the version matrix), so changing those does not re-render it
        settings={k: v for k, v in config.items() if k not in ("archive", "matrix", "matrix_targets")},
        # the declared families (rules files' family(...)), in report order: sections, summary, links
        families=family_params(),
        # current rule names: the provenance appendix skips benchmark files of removed rules
        rules=sorted(r.name for r in workflow.rules),
        prov=prov("adbench.render.page", packages=("jinja2",)),
    resources: **sized()
    log: LOG("render_report")
    benchmark: BENCH("render_report")
    conda: ENV
    script: SCRIPT("render_report")


rule report_changes:
    input:
        comparison="results/comparison.csv",
        archives=[f"archive/{label}/MANIFEST.json" for label in config["compare_to"]],
    output:
        changes=report("results/changes.csv", caption="../captions/changes.rst", category="Comparison"),
    params:
        args=dict(rel_threshold=config["changes"]["relative_threshold"],
                  timing_threshold=config["changes"]["timing_threshold"],
                  archives=[f"archive/{label}" for label in config["compare_to"]]),
        prov=prov("adbench.report.changes", packages=()),
        env=dict(versions=versions(), device=config["device"]),
    resources: **sized()
    log: LOG("report_changes")
    benchmark: BENCH("report_changes")
    conda: ENV
    script: SCRIPT("report_changes")


rule archive:
    input:
        comparison="results/comparison.csv",
        files=report_inputs,
        # raw timing samples: "What changed" and the matrix history test them against a later run
        samples=lambda w: sorted({str(f) for r in workflow.rules for f in r.output
                                  if Path(str(f)).name == "samples.csv" and "{" not in str(f)}),
    output:
        manifest=f"archive/{ARCHIVE_LABEL}.manifest.json",
    params:
        args=dict(dest=f"archive/{ARCHIVE_LABEL}", overwrite=config["archive"]["overwrite"],
                  results_dir="results"),
        prov=prov("adbench.report.changes", packages=()),
        info=dict(label=ARCHIVE_LABEL, versions=versions(), device=config["device"]),
    resources: **sized()
    log: LOG("archive")
    benchmark: BENCH("archive")
    conda: ENV
    script: SCRIPT("archive")
