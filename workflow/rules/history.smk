# History: what moved between archived runs (config compare_to) and this one, and the archive
# of this run's results under a label from its versions (`snakemake archive`); adbench.history.
from datetime import date

from adbench.history.archive import default_label

ARCHIVE_LABEL = config["archive"]["label"] or default_label(versions(), config["device"], date.today())
# compare_to labels are checked with the rest of the config (adbench.config)


rule report_changes:
    input:
        [f"archive/{label}/MANIFEST.json" for label in config["compare_to"]],  # the archives compared
        comparison="results/comparison.csv",
        # this run's claims, against the archives' (an archive made before archives held claims.csv has none)
        claims="results/claims.csv",
    output:
        changes=report("results/changes.csv", caption="../captions/changes.rst", category="Comparison"),
        # every claim per compared archive, whose verdict changed first (adbench.history.changes.claim_changes)
        claims_changes="results/claims_changes.csv",
    log:
        LOG("report_changes"),
    benchmark:
        BENCH("report_changes")
    conda:
        ENV
    resources:
        **sized(),
    params:
        **job(
            "adbench.history.changes:measure_changes",
            packages=(),
            args=dict(
                rel_threshold=config["changes"]["relative_threshold"],
                timing_threshold=config["changes"]["timing_threshold"],
                archives=[f"archive/{label}" for label in config["compare_to"]],
                current_env=dict(versions=versions(), device=config["device"]),
            ),
        ),
    script:
        SCRIPT("measure")


# Copying results/ into archive/<label>/ is file management, not a measurement: its own script.
rule archive:
    input:
        comparison="results/comparison.csv",
        # the claims' verdicts and counts: "What changed" and the history list the claims whose verdict changed
        claims="results/claims.csv",
        claims_summary="results/claims_summary.csv",
        files=report_inputs,
        # raw timing samples: "What changed" and the matrix history test them against a later run
        samples=lambda w: sorted(
            {
                str(f)
                for r in workflow.rules
                for f in r.output
                if Path(str(f)).name == "samples.csv" and "{" not in str(f)
            }
        ),
    output:
        manifest=f"archive/{ARCHIVE_LABEL}.manifest.json",
    log:
        LOG("archive"),
    benchmark:
        BENCH("archive")
    conda:
        ENV
    resources:
        **sized(),
    params:
        args=dict(dest=f"archive/{ARCHIVE_LABEL}", overwrite=config["archive"]["overwrite"], results_dir="results"),
        prov=prov("adbench.history.archive", packages=()),
        info=dict(label=ARCHIVE_LABEL, versions=versions(), device=config["device"]),
    script:
        SCRIPT("archive")
