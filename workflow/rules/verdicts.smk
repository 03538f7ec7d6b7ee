# Verdicts: the claims judged over the family outputs, then every registered values.csv joined to the
# documented table (adbench.verdicts), with the per-family outcome counts and reproduction score, and
# beside them each family's claims counts.


# Claims: the documents' conclusions (src/adbench/data/claims.csv), each tested by a registered relation
# over the family outputs; per-family counts go to results/claims_summary.csv, which summary.csv copies.
use rule measure as verdicts_claims with:
    input:
        files=report_inputs,
        # named table, not claims: `claims_path` would be the output results/claims.csv (jobs.call_arguments)
        table=source_file(ROOT / "src/adbench/data/claims.csv"),
        # every testable statement of the documents, with the claims that judge it: the coverage's denominator
        reading=source_file(ROOT / "docs/reading.csv"),
        # which weights ran, per family that declared a model record: pretrained-scope claims need the real ones
        model=list(MODELS.values()),
    output:
        claims="results/claims.csv",
        claims_summary="results/claims_summary.csv",
        # statements judged at full strength over the statements of the reading, per document
        claims_coverage="results/claims_coverage.csv",
    params:
        **job(
            "adbench.claims.judge:judge_claims",
            packages=(),
            # settings: claims tied to the documents' settings are not judged under others (common.smk)
            args=dict(
                reduced=config["reduced_sizes"], families=family_params(), settings=run_settings(), models=list(MODELS)
            ),
        ),


use rule measure as verdicts_compare with:
    input:
        values=report_values,
        # every registered output, checked against what its job recorded before any verdict (adbench.cache)
        files=report_inputs,
        documented=source_file(ROOT / "src/adbench/data/documented.csv"),
        # the claims counts per family: summary.csv's claims_* columns
        claims_summary=rules.verdicts_claims.output.claims_summary,
    output:
        comparison=report("results/comparison.csv", caption="../captions/comparison.rst", category="Comparison"),
        # outcome counts, reproduction score and claims counts per family and overall
        summary="results/summary.csv",
    params:
        **job(
            "adbench.verdicts.job:compare_documented",
            packages=(),
            # settings: documented rows declared under other settings are not judged (common.smk)
            args=dict(reduced=config["reduced_sizes"], families=family_params(), settings=run_settings()),
        ),
