# D family: scalar chains on the tape and in torch (D1), 256-wide tanh stacks on a
# (depth, scale, residual) grid (D2), and their figures. The report's explorer reads D2/grid.
DEPTH = config["depth"]


rule depth_d1:
    output:
        values="results/D1/values.csv",
        chains="results/D1/chains.csv",
        fp16_probe="results/D1/fp16_probe.csv",
        meta="results/D1/meta.json",
    params:
        args=DEPTH["d1"],
        prov=prov("adbench.depth.chains"),
    log:
        "logs/depth_d1.log",
    benchmark:
        "benchmarks/depth_d1.tsv"
    conda:
        ENV
    script:
        "../../scripts/depth_d1.py"


rule depth_d2:
    output:
        values="results/D2/values.csv",
        grid="results/D2/grid.csv",
        summary="results/D2/summary.csv",
        meta="results/D2/meta.json",
    params:
        args=DEPTH["d2"],
        prov=prov("adbench.depth.stacks"),
    log:
        "logs/depth_d2.log",
    benchmark:
        "benchmarks/depth_d2.tsv"
    conda:
        ENV
    script:
        "../../scripts/depth_d2.py"


rule depth_plot:
    input:
        chains="results/D1/chains.csv",
        fp16_probe="results/D1/fp16_probe.csv",
        grid="results/D2/grid.csv",
    output:
        chains=report("results/D1/chains.svg", caption="../report/figure.rst", category="Depth", labels={"ID": "D1"}),
        stacks=report("results/D2/stacks.svg", caption="../report/figure.rst", category="Depth", labels={"ID": "D2"}),
    params:
        args=dict(cases=DEPTH["d2"]["cases"]),
        prov=prov("adbench.plots.depth", packages=("matplotlib",)),
    log:
        "logs/depth_plot.log",
    benchmark:
        "benchmarks/depth_plot.tsv"
    conda:
        ENV
    script:
        "../../scripts/depth_plot.py"


register(
    "depth",
    "results/D1/values.csv", "results/D2/values.csv", "results/D1/meta.json", "results/D2/meta.json",
    "results/D1/chains.csv", "results/D1/fp16_probe.csv", "results/D2/grid.csv", "results/D2/summary.csv",
    "results/D1/chains.svg", "results/D2/stacks.svg",
)
