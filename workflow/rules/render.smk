# Rendering: the one self-contained HTML report (adbench.render) from the comparison, what changed,
# and every file the families registered.
from adbench.render import template_files


use rule measure as render_report with:
    input:
        [source_file(p) for p in template_files()],  # the core templates and every family's section
        comparison=rules.verdicts_compare.output.comparison,
        changes=rules.changes.output.changes,
        claims=rules.verdicts_claims.output.claims,
        claims_changes=rules.changes.output.claims_changes,
        claims_summary=rules.verdicts_claims.output.claims_summary,
        claims_coverage=rules.verdicts_claims.output.claims_coverage,
        # the reading: the Conclusions section lists the statements its coverage line does not count, and why
        reading=source_file(ROOT / "docs/reading.csv"),
        files=report_inputs,
        # which weights ran, per family that declared a model record (its banner and section read it)
        model=list(MODELS.values()),
    output:
        html=report("report/report.html", caption="../captions/report_html.rst", category="Report"),
        # what this run cost: every job on a timeline, total job time, the floor, wall / floor (adbench.runcost)
        run_cost="results/run_cost.csv",
    params:
        **job(
            "adbench.render.page:render_report",
            packages=("jinja2",),
            args=dict(
                reduced=config["reduced_sizes"],
                # the run's settings, which the templates look up instead of restating them (common.smk)
                settings=run_settings(),
                # the declared families (src/adbench/<key>/family.py), in report order: sections, summary, links
                families=family_params(),
                # the families whose model records `model` holds, in the same order
                models=list(MODELS),
                # current rule names: the provenance appendix skips benchmark files of removed rules
                rules=sorted(r.name for r in job_rules()),
                # the timing jobs (they claim every machine share: sized(timing=True)), marked on the run's timeline
                timing_rules=sorted(r.name for r in job_rules() if r.resources.get("machine_share") == MACHINE_SHARES),
            ),
        ),


# Strict mode (config `strict: true`; `make report STRICT=1`): after the report is written, fail the run when
# a claim that held in a compared run fails now or a row is MISMATCH or MISSING, one line each
# (adbench.verdicts.strict). Rule all asks for its stamp only in strict mode, so a failed check leaves
# the report and every result in place and a later non-strict run has nothing to redo. It writes the
# stamp only when the check passes; its lines go to the console and to its log, and it runs where
# Snakemake runs (localrules), also under a cluster executor.
localrules:
    render_strict_check,


rule render_strict_check:
    input:
        report=rules.render_report.output.html,
        comparison=rules.verdicts_compare.output.comparison,
        claims=rules.verdicts_claims.output.claims,
        claims_changes=rules.changes.output.claims_changes,
    output:
        stamp="results/strict_check.txt",
    conda:
        ENV
    resources:
        **sized(),
    params:
        compared=config["compare_to"],
    script:
        SCRIPT("strict")
