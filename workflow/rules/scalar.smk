# S family: scalar tape, numerical derivatives, forward vs reverse mode, tape speed.
# One rule per measurement ID; S9 is a calibrate -> run{process} -> summary chain.

rule scalar_s1:
    output:
        values="results/S1/values.csv",
        gradients="results/S1/gradients.csv",
        meta="results/S1/meta.json",
    params:
        args=dict(a=config['scalar']['a'], b=config['scalar']['b'], reference_h=config['scalar']['reference_h']),
        prov=prov("adbench.scalar.probes"),
    log:
        "logs/scalar_s1.log",
    benchmark:
        "benchmarks/scalar_s1.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s1.py"


rule scalar_s2:
    output:
        values="results/S2/values.csv",
        nudges="results/S2/nudges.csv",
        meta="results/S2/meta.json",
    params:
        args=dict(nudge_x=config['scalar']['nudge_x'], nudges=config['scalar']['nudges']),
        prov=prov("adbench.scalar.probes"),
    log:
        "logs/scalar_s2.log",
    benchmark:
        "benchmarks/scalar_s2.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s2.py"


rule scalar_s3:
    output:
        values="results/S3/values.csv",
        routes="results/S3/routes.csv",
        meta="results/S3/meta.json",
    params:
        args=dict(a=config['scalar']['a'], b=config['scalar']['b']),
        prov=prov("adbench.scalar.probes"),
    log:
        "logs/scalar_s3.log",
    benchmark:
        "benchmarks/scalar_s3.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s3.py"


rule scalar_s4:
    output:
        values="results/S4/values.csv",
        variants="results/S4/variants.csv",
        meta="results/S4/meta.json",
    params:
        args=dict(a=config['scalar']['a'], b=config['scalar']['b']),
        prov=prov("adbench.scalar.probes"),
    log:
        "logs/scalar_s4.log",
    benchmark:
        "benchmarks/scalar_s4.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s4.py"


rule scalar_s5:
    output:
        values="results/S5/values.csv",
        sweep="results/S5/sweep.csv",
        slopes="results/S5/slopes.csv",
        meta="results/S5/meta.json",
    params:
        args=dict(a=config['scalar']['a'], b=config['scalar']['b'], sweep_h=config['scalar']['sweep_h'], slope_fit_h=config['scalar']['slope_fit_h']),
        prov=prov("adbench.scalar.numeric"),
    log:
        "logs/scalar_s5.log",
    benchmark:
        "benchmarks/scalar_s5.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s5.py"


rule scalar_s6:
    output:
        values="results/S6/values.csv",
        sweep="results/S6/sweep.csv",
        controls="results/S6/controls.csv",
        meta="results/S6/meta.json",
    params:
        args=dict(a=config['scalar']['a'], b=config['scalar']['b'], complex_h=config['scalar']['complex_h'], complex_controls_at=config['scalar']['complex_controls_at']),
        prov=prov("adbench.scalar.numeric"),
    log:
        "logs/scalar_s6.log",
    benchmark:
        "benchmarks/scalar_s6.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s6.py"


rule scalar_s7:
    output:
        values="results/S7/values.csv",
        directions="results/S7/directions.csv",
        meta="results/S7/meta.json",
    params:
        args=config['scalar']['directional'],
        prov=prov("adbench.scalar.numeric"),
    log:
        "logs/scalar_s7.log",
    benchmark:
        "benchmarks/scalar_s7.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s7.py"


rule scalar_s8:
    output:
        values="results/S8/values.csv",
        modes="results/S8/modes.csv",
        meta="results/S8/meta.json",
    params:
        args=dict(modes_x=config['scalar']['modes_x']),
        prov=prov("adbench.scalar.numeric"),
    log:
        "logs/scalar_s8.log",
    benchmark:
        "benchmarks/scalar_s8.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s8.py"


rule scalar_s10:
    output:
        values="results/S10/values.csv",
        mlp_grads="results/S10/mlp_grads.csv",
        mlp_nodes_by_op="results/S10/mlp_nodes_by_op.csv",
        backward_steps="results/S10/backward_steps.csv",
        reuse_steps="results/S10/reuse_steps.csv",
        meta="results/S10/meta.json",
    params:
        args=dict(expression=config['scalar']['expression'], mlp=config['scalar']['mlp'], reuse_x=config['scalar']['reuse_x']),
        prov=prov("adbench.scalar.probes"),
    log:
        "logs/scalar_s10.log",
    benchmark:
        "benchmarks/scalar_s10.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s10.py"


rule scalar_s9_calibrate:
    output:
        calibration="results/S9/calibration.csv",
        meta="results/S9/calibration.meta.json",
    params:
        args=dict(dot_length=config["timing"]["dot_length"], target_ms=config["timing"]["target_ms"],
                  seed=config["timing"]["seed"]),
        prov=prov("adbench.scalar.speed", threads=1),
    # Timing jobs take every core so nothing else runs beside them (torch itself uses one);
    # timing.exclusive: false (smoke tests) lets them share.
    threads: workflow.cores if config["timing"]["exclusive"] else 1
    log:
        "logs/scalar_s9_calibrate.log",
    benchmark:
        "benchmarks/scalar_s9_calibrate.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s9_calibrate.py"


rule scalar_s9_run:
    input:
        calibration="results/S9/calibration.csv",
    output:
        samples="results/S9/runs/{process}/samples.csv",
        meta="results/S9/runs/{process}/meta.json",
    params:
        args=dict(dot_length=config["timing"]["dot_length"], rounds=config["timing"]["rounds"],
                  warmup=config["timing"]["warmup"], seed=config["timing"]["seed"]),
        prov=prov("adbench.scalar.speed", threads=1),
    wildcard_constraints:
        process=r"\d+",
    # Timing jobs take every core so nothing else runs beside them (torch itself uses one);
    # timing.exclusive: false (smoke tests) lets them share.
    threads: workflow.cores if config["timing"]["exclusive"] else 1
    log:
        "logs/scalar_s9_run_{process}.log",
    benchmark:
        "benchmarks/scalar_s9_run_{process}.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s9_run.py"


rule scalar_s9_summary:
    input:
        samples=expand("results/S9/runs/{process}/samples.csv",
                       process=range(1, config["timing"]["processes"] + 1)),
    output:
        values="results/S9/values.csv",
        per_process="results/S9/per_process.csv",
        samples="results/S9/samples.csv",
        meta="results/S9/meta.json",
    params:
        args=dict(bootstrap=config["timing"]["bootstrap"], seed=config["timing"]["seed"]),
        prov=prov("adbench.scalar.speed"),
    log:
        "logs/scalar_s9_summary.log",
    benchmark:
        "benchmarks/scalar_s9_summary.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s9_summary.py"


rule scalar_s5_plot:
    input:
        sweep="results/S5/sweep.csv",
        slopes="results/S5/slopes.csv",
    output:
        figure=report("results/S5/valley.svg", caption="../report/figure.rst", category="Scalar", labels={"ID": "S5"}),
    params:
        prov=prov("adbench.plots.scalar", packages=("matplotlib",)),
    log:
        "logs/scalar_s5_plot.log",
    benchmark:
        "benchmarks/scalar_s5_plot.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s5_plot.py"


rule scalar_s9_plot:
    input:
        samples="results/S9/samples.csv",
    output:
        figure=report("results/S9/samples.svg", caption="../report/figure.rst", category="Scalar", labels={"ID": "S9"}),
    params:
        prov=prov("adbench.plots.scalar", packages=("matplotlib",)),
    log:
        "logs/scalar_s9_plot.log",
    benchmark:
        "benchmarks/scalar_s9_plot.tsv"
    conda:
        ENV
    script:
        "../../scripts/scalar_s9_plot.py"


register(
    "scalar",
    *[f"results/S{i}/values.csv" for i in range(1, 11)],
    *[f"results/S{i}/meta.json" for i in range(1, 11)],
    "results/S1/gradients.csv", "results/S2/nudges.csv", "results/S3/routes.csv",
    "results/S4/variants.csv", "results/S5/sweep.csv", "results/S5/slopes.csv",
    "results/S6/sweep.csv", "results/S6/controls.csv", "results/S7/directions.csv",
    "results/S8/modes.csv", "results/S9/per_process.csv", "results/S9/calibration.csv",
    "results/S10/mlp_grads.csv", "results/S10/mlp_nodes_by_op.csv", "results/S10/backward_steps.csv",
    "results/S10/reuse_steps.csv",
    "results/S5/valley.svg", "results/S9/samples.svg",
)
