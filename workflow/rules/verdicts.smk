# Verdicts: every registered values.csv joined to the documented table (adbench.verdicts), with the
# per-family outcome counts and reproduction score, and beside them each family's claims counts.


rule report_compare:
    input:
        values=report_values,
        # every registered output, checked against what its job recorded before any verdict (adbench.cache)
        files=report_inputs,
        documented=source_file(ROOT / "src/adbench/data/documented.csv"),
        # the claims counts per family (rule report_claims): summary.csv's claims_* columns
        claims_summary="results/claims_summary.csv",
    output:
        comparison=report("results/comparison.csv", caption="../captions/comparison.rst", category="Comparison"),
        # outcome counts, reproduction score and claims counts per family and overall
        summary="results/summary.csv",
    log:
        LOG("report_compare"),
    benchmark:
        BENCH("report_compare")
    conda:
        ENV
    resources:
        **sized(),
    params:
        **job(
            "adbench.verdicts.job:measure_comparison",
            packages=(),
            # settings: documented rows declared under other settings are not judged (common.smk)
            args=dict(reduced=config["reduced_sizes"], families=family_params(), settings=run_settings()),
        ),
    script:
        SCRIPT("measure")


# Claims: the documents' conclusions (src/adbench/data/claims.csv), each tested by a registered relation
# over the family outputs; per-family counts go to results/claims_summary.csv, which summary.csv copies.
rule report_claims:
    input:
        files=report_inputs,
        # named table, not claims: `claims_path` would be the output results/claims.csv (jobs.call_arguments)
        table=source_file(ROOT / "src/adbench/data/claims.csv"),
        # the testable conclusions the table leaves out, with why: the coverage's denominator with the table
        left_out=source_file(ROOT / "src/adbench/data/claims_left_out.csv"),
        # which weights ran, per family that declared a model record: pretrained-scope claims need the real ones
        model=list(MODELS.values()),
    output:
        claims="results/claims.csv",
        claims_summary="results/claims_summary.csv",
        # judged conclusions over testable ones, per document
        claims_coverage="results/claims_coverage.csv",
    log:
        LOG("report_claims"),
    benchmark:
        BENCH("report_claims")
    conda:
        ENV
    resources:
        **sized(),
    params:
        **job(
            "adbench.claims.judge:measure_claims",
            packages=(),
            # settings: claims tied to the documents' settings are not judged under others (common.smk)
            args=dict(
                reduced=config["reduced_sizes"], families=family_params(), settings=run_settings(), models=list(MODELS)
            ),
        ),
    script:
        SCRIPT("measure")
