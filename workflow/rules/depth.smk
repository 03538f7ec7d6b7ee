# D family: scalar chains on the tape and in torch (D1), 256-wide tanh stacks on a
# (depth, scale, residual) grid (D2), and their figures. The report's explorer reads D2/grid.


DEPTH = config["depth"]


use rule measure as depth_d1 with:
    output:
        **id_outputs("D1", "values", "chains", "fp16_probe", "residual"),
    params:
        **job("adbench.depth.chains:measure_d1", args=DEPTH["d1"]),


use rule measure as depth_d2 with:
    output:
        **id_outputs("D2", "values", "grid", "summary"),
    params:
        **job("adbench.depth.stacks:measure_d2", args=DEPTH["d2"]),


use rule measure as depth_plot with:
    input:
        chains=rules.depth_d1.output.D1__chains,
        probe=rules.depth_d1.output.D1__fp16_probe,
        grid=rules.depth_d2.output.D2__grid,
    output:
        chains=report("results/D1/chains.svg", caption="../captions/figure.rst", category="Depth", labels={"ID": "D1"}),
        stacks=report("results/D2/stacks.svg", caption="../captions/figure.rst", category="Depth", labels={"ID": "D2"}),
    params:
        **job("adbench.depth.plots:plot_depth", args=dict(cases=DEPTH["d2"]["cases"]), packages=("matplotlib",)),


register("depth", rules.depth_d1.output, rules.depth_d2.output, rules.depth_plot.output)
