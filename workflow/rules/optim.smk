# O family: XOR on the scalar tape (O1), an ill-conditioned quadratic (O2), optimizer memory (O3).
# O1 trains all seeds of one optimizer per job (wildcard gd | adam), then a summary job counts.


O1 = config["optim"]["o1"]
O1_MODEL = {k: O1[k] for k in ("inputs", "targets", "hidden", "init_range", "seeds", "steps")}


use rule measure as optim_o1_train with:
    output:
        curves="results/O1/{optimizer}/curves.csv",
        finals="results/O1/{optimizer}/finals.csv",
        meta="results/O1/{optimizer}/meta.json",
    wildcard_constraints:
        optimizer="gd|adam",
    priority: PRIORITY["long"]
    resources:
        **sized(runtime=7),
    params:
        # only this optimizer's settings (optimizer itself is the wildcard): editing Adam's re-runs the adam job alone
        **job(
            "adbench.optim.xor:measure_o1_train",
            args=lambda wc: dict(**O1_MODEL, **{wc.optimizer: O1[wc.optimizer]}),
            packages=("numpy",),
        ),


use rule measure as optim_o1 with:
    input:
        gd_finals=one(rules.optim_o1_train.output.finals, optimizer="gd"),
        gd_curves=one(rules.optim_o1_train.output.curves, optimizer="gd"),
        adam_finals=one(rules.optim_o1_train.output.finals, optimizer="adam"),
    output:
        **id_outputs("O1", "values", "seeds", "rows", "gradcheck", "ulp", "linear"),
    params:
        **job(
            "adbench.optim.o1:measure_o1",
            args=dict(
                **O1_MODEL,
                gd=O1["gd"],
                stuck_threshold=O1["stuck_threshold"],
                gradcheck=O1["gradcheck"],
                report_seed=O1["report_seed"],
                report_steps=O1["report_steps"],
                ulp_offsets=O1["ulp_offsets"],
            ),
            packages=("numpy",),
        ),


use rule measure as optim_o1_plot with:
    input:
        gd_curves=one(rules.optim_o1_train.output.curves, optimizer="gd"),
        adam_curves=one(rules.optim_o1_train.output.curves, optimizer="adam"),
        seeds=rules.optim_o1.output.O1__seeds,
    output:
        figure=report(
            "results/O1/curves.svg", caption="../captions/figure.rst", category="Optimization", labels={"ID": "O1"}
        ),
    params:
        **job("adbench.optim.plots:plot_o1_curves", packages=("matplotlib",)),


use rule measure as optim_o2 with:
    output:
        **id_outputs("O2", "values", "spectrum", "ceiling", "grid", "best", "trajectories"),
    params:
        **job(
            "adbench.optim.o2:measure_o2",
            args=config["optim"]["o2"],
            packages=("numpy",),
            seed=config["optim"]["o2"]["data"]["seed"],
        ),


use rule measure as optim_o2_plot with:
    input:
        trajectories=rules.optim_o2.output.O2__trajectories,
        spectrum=rules.optim_o2.output.O2__spectrum,
        best=rules.optim_o2.output.O2__best,
        grid=rules.optim_o2.output.O2__grid,
    output:
        trajectories_figure=report(
            "results/O2/trajectories.svg",
            caption="../captions/figure.rst",
            category="Optimization",
            labels={"ID": "O2"},
        ),
        grids_figure=report(
            "results/O2/grids.svg", caption="../captions/figure.rst", category="Optimization", labels={"ID": "O2"}
        ),
    params:
        **job("adbench.optim.plots:plot_o2", packages=("matplotlib",)),


use rule measure as optim_o3 with:
    output:
        **id_outputs(
            "O3",
            "values",
            "arrangements",
            "counts",
            "adam_state",
            "adam_bytes",
            "adam_first_step",
            "state_by_optimizer",
        ),
    params:
        **job("adbench.optim.memory:measure_o3", args=config["optim"]["o3"], packages=("torch", "transformers")),


register(
    "optim",
    rules.optim_o1.output,
    expand(rules.optim_o1_train.output, optimizer=("gd", "adam")),
    rules.optim_o1_plot.output,
    rules.optim_o2.output,
    rules.optim_o2_plot.output,
    rules.optim_o3.output,
)
