# D family: scalar chains on the tape and in torch (D1), 256-wide tanh stacks on a
# (depth, scale, residual) grid (D2), and their figures. The report's explorer reads D2/grid.

family("depth", "Depth: vanishing and exploding chains", numbered("D", 2), order=50)

DEPTH = config["depth"]


rule depth_d1:
    output:
        **id_outputs("D1", "values", "chains", "fp16_probe", "residual"),
    log:
        LOG("depth_d1"),
    benchmark:
        BENCH("depth_d1")
    conda:
        ENV
    resources:
        **sized(),
    params:
        **job("adbench.depth.chains:measure_d1", args=DEPTH["d1"]),
    script:
        SCRIPT("measure")


rule depth_d2:
    output:
        **id_outputs("D2", "values", "grid", "summary"),
    log:
        LOG("depth_d2"),
    benchmark:
        BENCH("depth_d2")
    conda:
        ENV
    resources:
        **sized(),
    params:
        **job("adbench.depth.stacks:measure_d2", args=DEPTH["d2"]),
    script:
        SCRIPT("measure")


rule depth_plot:
    input:
        chains=rules.depth_d1.output.D1__chains,
        probe=rules.depth_d1.output.D1__fp16_probe,
        grid=rules.depth_d2.output.D2__grid,
    output:
        chains=report("results/D1/chains.svg", caption="../captions/figure.rst", category="Depth", labels={"ID": "D1"}),
        stacks=report("results/D2/stacks.svg", caption="../captions/figure.rst", category="Depth", labels={"ID": "D2"}),
    log:
        LOG("depth_plot"),
    benchmark:
        BENCH("depth_plot")
    conda:
        ENV
    resources:
        **sized(),
    params:
        **job("adbench.depth.plots:plot_depth", args=dict(cases=DEPTH["d2"]["cases"]), packages=("matplotlib",)),
    script:
        SCRIPT("measure")


register("depth", rules.depth_d1.output, rules.depth_d2.output, rules.depth_plot.output)
