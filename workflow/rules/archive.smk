# The archive of this run's results under a label from its versions (`snakemake archive`), which a later
# run compares with (config compare_to, changes.smk) and the history page lists; adbench.history.archive.
from datetime import date

from adbench.history.archive import default_label

ARCHIVE_LABEL = config["archive"]["label"] or default_label(versions(), config["device"], date.today())
# compare_to labels are checked with the rest of the config (adbench.config)


# Copying results/ into archive/<label>/ is file management, not a measurement: its own script.
rule archive:
    input:
        comparison=rules.verdicts_compare.output.comparison,
        # the claims' verdicts and counts: "What changed" and the history list the claims whose verdict changed
        claims=rules.verdicts_claims.output.claims,
        claims_summary=rules.verdicts_claims.output.claims_summary,
        # every registered output, the raw timing samples among them ("What changed" and the matrix history test
        # a timing against a later run's samples)
        files=report_inputs,
    output:
        manifest=f"archive/{ARCHIVE_LABEL}.manifest.json",
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
