# S family: scalar tape, numerical derivatives, forward vs reverse mode, tape speed.
# One rule per measurement ID; S9 is a calibrate -> run{process} -> summary chain.

family("scalar", "Scalar tape and numerical derivatives", numbered("S", 10), order=10)

rule scalar_s1:
    output:
        values="results/S1/values.csv",
        gradients="results/S1/gradients.csv",
        meta="results/S1/meta.json",
    params:
        measure="adbench.scalar.probes:measure_s1",
        args=dict(a=config['scalar']['a'], b=config['scalar']['b'], reference_h=config['scalar']['reference_h']),
        prov=prov("adbench.scalar.probes"),
    resources: **sized()
    log: LOG("scalar_s1")
    benchmark: BENCH("scalar_s1")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s2:
    output:
        values="results/S2/values.csv",
        nudges="results/S2/nudges.csv",
        meta="results/S2/meta.json",
    params:
        measure="adbench.scalar.probes:measure_s2",
        args=dict(nudge_x=config['scalar']['nudge_x'], nudges=config['scalar']['nudges']),
        prov=prov("adbench.scalar.probes"),
    resources: **sized()
    log: LOG("scalar_s2")
    benchmark: BENCH("scalar_s2")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s3:
    output:
        values="results/S3/values.csv",
        routes="results/S3/routes.csv",
        meta="results/S3/meta.json",
    params:
        measure="adbench.scalar.probes:measure_s3",
        args=dict(a=config['scalar']['a'], b=config['scalar']['b']),
        prov=prov("adbench.scalar.probes"),
    resources: **sized()
    log: LOG("scalar_s3")
    benchmark: BENCH("scalar_s3")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s4:
    output:
        values="results/S4/values.csv",
        variants="results/S4/variants.csv",
        meta="results/S4/meta.json",
    params:
        measure="adbench.scalar.probes:measure_s4",
        args=dict(a=config['scalar']['a'], b=config['scalar']['b']),
        prov=prov("adbench.scalar.probes"),
    resources: **sized()
    log: LOG("scalar_s4")
    benchmark: BENCH("scalar_s4")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s5:
    output:
        values="results/S5/values.csv",
        sweep="results/S5/sweep.csv",
        slopes="results/S5/slopes.csv",
        meta="results/S5/meta.json",
    params:
        measure="adbench.scalar.numeric:measure_s5",
        args=dict(a=config['scalar']['a'], b=config['scalar']['b'], sweep_h=config['scalar']['sweep_h'], slope_fit_h=config['scalar']['slope_fit_h']),
        prov=prov("adbench.scalar.numeric"),
    resources: **sized()
    log: LOG("scalar_s5")
    benchmark: BENCH("scalar_s5")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s6:
    output:
        values="results/S6/values.csv",
        sweep="results/S6/sweep.csv",
        controls="results/S6/controls.csv",
        meta="results/S6/meta.json",
    params:
        measure="adbench.scalar.numeric:measure_s6",
        args=dict(a=config['scalar']['a'], b=config['scalar']['b'], complex_h=config['scalar']['complex_h'], complex_controls_at=config['scalar']['complex_controls_at']),
        prov=prov("adbench.scalar.numeric"),
    resources: **sized()
    log: LOG("scalar_s6")
    benchmark: BENCH("scalar_s6")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s7:
    output:
        values="results/S7/values.csv",
        directions="results/S7/directions.csv",
        meta="results/S7/meta.json",
    params:
        measure="adbench.scalar.numeric:measure_s7",
        args=config['scalar']['directional'],
        prov=prov("adbench.scalar.numeric"),
    resources: **sized()
    log: LOG("scalar_s7")
    benchmark: BENCH("scalar_s7")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s8:
    output:
        values="results/S8/values.csv",
        modes="results/S8/modes.csv",
        meta="results/S8/meta.json",
    params:
        measure="adbench.scalar.numeric:measure_s8",
        args=dict(modes_x=config['scalar']['modes_x']),
        prov=prov("adbench.scalar.numeric"),
    resources: **sized()
    log: LOG("scalar_s8")
    benchmark: BENCH("scalar_s8")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s10:
    output:
        values="results/S10/values.csv",
        mlp_grads="results/S10/mlp_grads.csv",
        mlp_nodes_by_op="results/S10/mlp_nodes_by_op.csv",
        backward_steps="results/S10/backward_steps.csv",
        reuse_steps="results/S10/reuse_steps.csv",
        meta="results/S10/meta.json",
    params:
        measure="adbench.scalar.probes:measure_s10",
        args=dict(expression=config['scalar']['expression'], mlp=config['scalar']['mlp'],
                  reuse_x=config['scalar']['reuse_x']),
        prov=prov("adbench.scalar.probes"),
    resources: **sized()
    log: LOG("scalar_s10")
    benchmark: BENCH("scalar_s10")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s9_calibrate:
    output:
        calibration="results/S9/calibration.csv",
        meta="results/S9/calibration.meta.json",
    params:
        measure="adbench.scalar.speed:measure_calibration",
        args=dict(dot_length=config["timing"]["dot_length"], target_ms=config["timing"]["target_ms"],
                  seed=config["timing"]["seed"]),
        prov=prov("adbench.scalar.speed", threads=TIMING_THREADS),
    resources: **sized(timing=True)  # alone on the machine (see sized in common.smk)
    log: LOG("scalar_s9_calibrate")
    benchmark: BENCH("scalar_s9_calibrate")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s9_run:
    input:
        calibration="results/S9/calibration.csv",
    output:
        samples="results/S9/runs/{process}/samples.csv",
        meta="results/S9/runs/{process}/meta.json",
    params:
        measure="adbench.scalar.speed:measure_run",
        args=lambda wc: dict(dot_length=config["timing"]["dot_length"], rounds=config["timing"]["rounds"],
                             warmup=config["timing"]["warmup"], seed=config["timing"]["seed"],
                             retries=config["timing"]["retries"], process=int(wc.process)),
        prov=prov("adbench.scalar.speed", threads=TIMING_THREADS),
    wildcard_constraints:
        process=r"\d+",
    resources: **sized(timing=True)  # alone on the machine (see sized in common.smk)
    log: LOG("scalar_s9_run_{process}")
    benchmark: BENCH("scalar_s9_run_{process}")
    conda: ENV
    script: SCRIPT("measure")


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
        measure="adbench.scalar.speed:measure_summary",
        args=dict(bootstrap=config["timing"]["bootstrap"], seed=config["timing"]["seed"]),
        prov=prov("adbench.scalar.speed"),
    resources: **sized()
    log: LOG("scalar_s9_summary")
    benchmark: BENCH("scalar_s9_summary")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s5_plot:
    input:
        sweep="results/S5/sweep.csv",
        slopes="results/S5/slopes.csv",
    output:
        figure=report("results/S5/valley.svg", caption="../captions/figure.rst", category="Scalar", labels={"ID": "S5"}),
    params:
        measure="adbench.plots.scalar:plot_valley",
        prov=prov("adbench.plots.scalar", packages=("matplotlib",)),
    resources: **sized()
    log: LOG("scalar_s5_plot")
    benchmark: BENCH("scalar_s5_plot")
    conda: ENV
    script: SCRIPT("measure")


rule scalar_s9_plot:
    input:
        samples="results/S9/samples.csv",
    output:
        figure=report("results/S9/samples.svg", caption="../captions/figure.rst", category="Scalar", labels={"ID": "S9"}),
    params:
        measure="adbench.plots.scalar:plot_timing",
        prov=prov("adbench.plots.scalar", packages=("matplotlib",)),
    resources: **sized()
    log: LOG("scalar_s9_plot")
    benchmark: BENCH("scalar_s9_plot")
    conda: ENV
    script: SCRIPT("measure")


register(
    "scalar",
    *(getattr(rules, f"scalar_s{i}").output for i in (1, 2, 3, 4, 5, 6, 7, 8, 10)),
    rules.scalar_s9_calibrate.output.calibration,
    rules.scalar_s9_summary.output,
    rules.scalar_s5_plot.output,
    rules.scalar_s9_plot.output,
)
