# Rendering: the one self-contained HTML report (adbench.render) from the comparison, what changed,
# and every file the families registered.
from adbench.render import TEMPLATES


rule render_report:
    input:
        sorted(source_file(p) for p in TEMPLATES.rglob("*") if p.suffix in (".j2", ".js", ".css")),  # the templates
        comparison="results/comparison.csv",
        changes="results/changes.csv",
        claims="results/claims.csv",
        claims_changes="results/claims_changes.csv",
        claims_summary="results/claims_summary.csv",
        files=report_inputs,
        # which GPT-2 ran (the banner reads it); none when no rules file declares the GPT-2 family
        model=[str(rules.gpt2_model.output.model)] if "gpt2" in FAMILIES else [],
    output:
        html=report("report/report.html", caption="../captions/report_html.rst", category="Report"),
    log:
        LOG("render_report"),
    benchmark:
        BENCH("render_report")
    conda:
        ENV
    resources:
        **sized(),
    params:
        **job(
            "adbench.render.page:measure_report",
            packages=("jinja2",),
            args=dict(
                reduced=config["reduced_sizes"],
                # the run's settings, which the templates look up instead of restating them; not the ones
                # that never reach the page (archiving, the version matrix): changing those does not re-render it
                settings={k: v for k, v in config.items() if k not in ("archive", "matrix", "matrix_targets")},
                # the declared families (rules files' family(...)), in report order: sections, summary, links
                families=family_params(),
                # current rule names: the provenance appendix skips benchmark files of removed rules
                rules=sorted(r.name for r in workflow.rules),
            ),
        ),
    script:
        SCRIPT("measure")
