# What changed: this run against the archived runs listed in config compare_to (adbench.history.changes).
# Archiving a run is archive.smk; the history page across archives and matrix entries is workflow/matrix/Snakefile.
# A compare_to entry is a label of archive/ or the path of an archive folder (adbench.history.archive.archive_dir).
from adbench.history.archive import archive_dir


use rule measure as changes with:
    input:
        [f"{archive_dir(entry)}/MANIFEST.json" for entry in config["compare_to"]],  # the archives compared
        comparison=rules.verdicts_compare.output.comparison,
        # this run's claims, against the archives' (an archive made before archives held claims.csv has none)
        claims=rules.verdicts_claims.output.claims,
    output:
        changes=report("results/changes.csv", caption="../captions/changes.rst", category="Comparison"),
        # every claim per compared archive, whose verdict changed first (adbench.history.changes.claim_changes)
        claims_changes="results/claims_changes.csv",
    params:
        **job(
            "adbench.history.changes:compare_runs",
            packages=(),
            args=dict(
                rel_threshold=config["changes"]["relative_threshold"],
                timing_threshold=config["changes"]["timing_threshold"],
                archives=[archive_dir(entry) for entry in config["compare_to"]],
                current_env=dict(versions=versions(), device=config["device"]),
            ),
        ),
