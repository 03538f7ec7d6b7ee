# Comparison against the documented table, then the single self-contained HTML report.


rule report_compare:
    input:
        documented=str(ROOT / "src/adbench/data/documented.csv"),
        values=report_values,
    output:
        comparison="results/comparison.csv",
    params:
        prov=prov("adbench.report.comparison", packages=()),
    log:
        "logs/report_compare.log",
    benchmark:
        "benchmarks/report_compare.tsv"
    conda:
        ENV
    script:
        "../../scripts/report_compare.py"


rule render_report:
    input:
        comparison="results/comparison.csv",
        files=report_inputs,
        templates=sorted(str(p) for p in (ROOT / "report").rglob("*.j2")),
        style=str(ROOT / "report/style.css"),
    output:
        html="report/report.html",
    params:
        prov=prov("adbench.report.render", packages=("jinja2",)),
    log:
        "logs/render_report.log",
    benchmark:
        "benchmarks/render_report.tsv"
    conda:
        ENV
    script:
        "../../scripts/render_report.py"
