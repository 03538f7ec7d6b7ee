# O family: XOR on the scalar tape (O1), an ill-conditioned quadratic (O2), optimizer memory (O3).
# O1 trains all seeds of one optimizer per job (wildcard gd | adam), then a summary job counts.

O1 = config["optim"]["o1"]
O1_MODEL = {k: O1[k] for k in ("inputs", "targets", "hidden", "init_range", "seeds", "steps")}


rule optim_o1_train:
    output:
        curves="results/O1/{optimizer}/curves.csv",
        finals="results/O1/{optimizer}/finals.csv",
        meta="results/O1/{optimizer}/meta.json",
    params:
        args=dict(**O1_MODEL, gd=O1["gd"], adam=O1["adam"]),
        prov=prov("adbench.optim.xor", packages=("numpy",)),
    wildcard_constraints:
        optimizer="gd|adam",
    log:
        "logs/optim_o1_train_{optimizer}.log",
    benchmark:
        "benchmarks/optim_o1_train_{optimizer}.tsv"
    conda:
        ENV
    script:
        "../../scripts/optim_o1_train.py"


rule optim_o1:
    input:
        gd_finals="results/O1/gd/finals.csv",
        gd_curves="results/O1/gd/curves.csv",
        adam_finals="results/O1/adam/finals.csv",
    output:
        values="results/O1/values.csv",
        seeds="results/O1/seeds.csv",
        gradcheck="results/O1/gradcheck.csv",
        ulp="results/O1/ulp.csv",
        meta="results/O1/meta.json",
    params:
        args=dict(**O1_MODEL, gd=O1["gd"], stuck_threshold=O1["stuck_threshold"], gradcheck=O1["gradcheck"],
                  report_seed=O1["report_seed"], report_steps=O1["report_steps"], ulp_offsets=O1["ulp_offsets"]),
        prov=prov("adbench.optim.o1", packages=("numpy",)),
    log:
        "logs/optim_o1.log",
    benchmark:
        "benchmarks/optim_o1.tsv"
    conda:
        ENV
    script:
        "../../scripts/optim_o1.py"


rule optim_o1_plot:
    input:
        gd_curves="results/O1/gd/curves.csv",
        adam_curves="results/O1/adam/curves.csv",
        seeds="results/O1/seeds.csv",
    output:
        figure=report("results/O1/curves.svg", caption="../report/figure.rst", category="Optimization", labels={"ID": "O1"}),
    params:
        prov=prov("adbench.plots.optim", packages=("matplotlib",)),
    log:
        "logs/optim_o1_plot.log",
    benchmark:
        "benchmarks/optim_o1_plot.tsv"
    conda:
        ENV
    script:
        "../../scripts/optim_o1_plot.py"


rule optim_o2:
    output:
        values="results/O2/values.csv",
        spectrum="results/O2/spectrum.csv",
        ceiling="results/O2/ceiling.csv",
        grid="results/O2/grid.csv",
        best="results/O2/best.csv",
        trajectories="results/O2/trajectories.csv",
        meta="results/O2/meta.json",
    params:
        args=config["optim"]["o2"],
        prov=prov("adbench.optim.o2", packages=("numpy",), seed=config["optim"]["o2"]["data"]["seed"]),
    log:
        "logs/optim_o2.log",
    benchmark:
        "benchmarks/optim_o2.tsv"
    conda:
        ENV
    script:
        "../../scripts/optim_o2.py"


rule optim_o2_plot:
    input:
        trajectories="results/O2/trajectories.csv",
        spectrum="results/O2/spectrum.csv",
        best="results/O2/best.csv",
        grid="results/O2/grid.csv",
    output:
        trajectories_figure=report("results/O2/trajectories.svg", caption="../report/figure.rst", category="Optimization", labels={"ID": "O2"}),
        grids_figure=report("results/O2/grids.svg", caption="../report/figure.rst", category="Optimization", labels={"ID": "O2"}),
    params:
        prov=prov("adbench.plots.optim", packages=("matplotlib",)),
    log:
        "logs/optim_o2_plot.log",
    benchmark:
        "benchmarks/optim_o2_plot.tsv"
    conda:
        ENV
    script:
        "../../scripts/optim_o2_plot.py"


rule optim_o3:
    output:
        values="results/O3/values.csv",
        arrangements="results/O3/arrangements.csv",
        counts="results/O3/counts.csv",
        meta="results/O3/meta.json",
    params:
        args=config["optim"]["o3"],
        prov=prov("adbench.optim.memory", packages=("torch", "transformers")),
    log:
        "logs/optim_o3.log",
    benchmark:
        "benchmarks/optim_o3.tsv"
    conda:
        ENV
    script:
        "../../scripts/optim_o3.py"


register(
    "optim",
    *[f"results/O{i}/values.csv" for i in (1, 2, 3)],
    *[f"results/O{i}/meta.json" for i in (1, 2, 3)],
    "results/O1/seeds.csv", "results/O1/gradcheck.csv", "results/O1/ulp.csv", "results/O1/gd/finals.csv",
    "results/O1/adam/finals.csv", "results/O1/curves.svg",
    "results/O2/spectrum.csv", "results/O2/ceiling.csv", "results/O2/grid.csv", "results/O2/best.csv",
    "results/O2/trajectories.svg", "results/O2/grids.svg",
    "results/O3/arrangements.csv", "results/O3/counts.csv",
)
