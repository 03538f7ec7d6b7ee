# P family: fp16/bf16 landmarks, casts and spacing (one job), loss scaling and swamping (one job),
# and their figures. P9 (GPT-2 gradients in 16 bits) lives in gpt2.smk; its section is ours.

family("precision", "Precision: fp16, bf16 and loss scaling", numbered("P", 9), order=60)

PREC = config["precision"]


rule precision_formats:
    output:
        p1_values="results/P1/values.csv",
        p1_landmarks="results/P1/landmarks.csv",
        p2_values="results/P2/values.csv",
        p2_casts="results/P2/casts.csv",
        p3_values="results/P3/values.csv",
        p3_errors="results/P3/errors.csv",
        p3_sweep="results/P3/sweep.csv",
        p7_values="results/P7/values.csv",
        p7_spacing="results/P7/spacing.csv",
        p8_values="results/P8/values.csv",
        p8_casts="results/P8/casts.csv",
        p8_gaps="results/P8/gaps.csv",
        meta="results/P1/meta.json",
    params:
        measure="adbench.precision.formats:measure_formats",
        args=dict(grads=PREC["fp16_grads"], rel_error_x=PREC["rel_error_x"],
                  rel_error_sweep=PREC["rel_error_sweep"], spacing_weights=PREC["spacing_weights"],
                  update=PREC["update"], bf16_values=PREC["bf16_values"]),
        prov=prov("adbench.precision.formats"),
    resources: **sized()
    log: LOG("precision_formats")
    benchmark: BENCH("precision_formats")
    conda: ENV
    script: SCRIPT("measure")


rule precision_scaling:
    output:
        p4_values="results/P4/values.csv",
        p4_static="results/P4/static.csv",
        p5_values="results/P5/values.csv",
        p5_attempts="results/P5/attempts.csv",
        p5_settled="results/P5/settled.csv",
        p6_values="results/P6/values.csv",
        p6_trajectory="results/P6/trajectory.csv",
        meta="results/P4/meta.json",
    params:
        measure="adbench.precision.scaling:measure_scaling",
        args=dict(static_grads=PREC["static_grads"], static_scale=PREC["static_scale"],
                  dynamic_grads=PREC["dynamic_grads"], dynamic_start=PREC["dynamic_start"],
                  weight=PREC["weight"], update=PREC["update"], steps=PREC["steps"],
                  record_every=PREC["record_every"]),
        prov=prov("adbench.precision.scaling"),
    resources: **sized()
    log: LOG("precision_scaling")
    benchmark: BENCH("precision_scaling")
    conda: ENV
    script: SCRIPT("measure")


rule precision_plot:
    input:
        sweep="results/P3/sweep.csv",
        landmarks="results/P1/landmarks.csv",
        trajectory="results/P6/trajectory.csv",
    output:
        error_sweep=report("results/P3/error_sweep.svg", caption="../captions/figure.rst", category="Precision", labels={"ID": "P3"}),
        swamping=report("results/P6/swamping.svg", caption="../captions/figure.rst", category="Precision", labels={"ID": "P6"}),
    params:
        measure="adbench.plots.precision:plot_precision",
        prov=prov("adbench.plots.precision", packages=("matplotlib",)),
    resources: **sized()
    log: LOG("precision_plot")
    benchmark: BENCH("precision_plot")
    conda: ENV
    script: SCRIPT("measure")


register("precision", rules.precision_formats.output, rules.precision_scaling.output, rules.precision_plot.output)
