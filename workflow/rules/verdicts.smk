# Verdicts: every registered values.csv joined to the documented table (adbench.verdicts), with the
# per-family outcome counts and reproduction score.


rule report_compare:
    input:
        values=report_values,
        # every registered output, checked against what its job recorded before any verdict (adbench.cache)
        files=report_inputs,
        documented=str(ROOT / "src/adbench/data/documented.csv"),
    output:
        comparison=report("results/comparison.csv", caption="../captions/comparison.rst", category="Comparison"),
        # outcome counts and reproduction score per family and overall
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
            args=dict(reduced=config["reduced_sizes"], families=family_params()),
        ),
    script:
        SCRIPT("measure")
