# P family: fp16/bf16 landmarks, casts and spacing (one job), loss scaling and swamping (one job),
# and their figures. P9 (GPT-2 gradients in 16 bits) lives in gpt2.smk; its section is ours.


PREC = config["precision"]


use rule measure as precision_formats with:
    output:
        **id_outputs("P1", "values", "landmarks"),
        **id_outputs("P2", "values", "casts"),
        **id_outputs("P3", "values", "errors", "sweep"),
        **id_outputs("P7", "values", "spacing"),
        **id_outputs("P8", "values", "casts", "gaps"),
    params:
        **job(
            "adbench.precision.formats:measure_formats",
            args=dict(
                grads=PREC["fp16_grads"],
                rel_error_x=PREC["rel_error_x"],
                rel_error_sweep=PREC["rel_error_sweep"],
                spacing_weights=PREC["spacing_weights"],
                update=PREC["update"],
                bf16_values=PREC["bf16_values"],
            ),
        ),


use rule measure as precision_scaling with:
    output:
        **id_outputs("P4", "values", "static", "leaf_grads"),
        **id_outputs("P5", "values", "attempts", "settled", "grad_scaler"),
        **id_outputs("P6", "values", "trajectory", "wide_sum", "direct_update"),
    params:
        **job(
            "adbench.precision.scaling:measure_scaling",
            args=dict(
                static_grads=PREC["static_grads"],
                static_scale=PREC["static_scale"],
                dynamic_grads=PREC["dynamic_grads"],
                dynamic_start=PREC["dynamic_start"],
                weight=PREC["weight"],
                update=PREC["update"],
                steps=PREC["steps"],
                record_every=PREC["record_every"],
                grad_scaler=PREC["grad_scaler"],
                wide_sum=PREC["wide_sum"],
            ),
        ),


use rule measure as precision_plot with:
    input:
        sweep=rules.precision_formats.output.P3__sweep,
        landmarks=rules.precision_formats.output.P1__landmarks,
        trajectory=rules.precision_scaling.output.P6__trajectory,
    output:
        error_sweep=report(
            "results/P3/error_sweep.svg", caption="../captions/figure.rst", category="Precision", labels={"ID": "P3"}
        ),
        swamping=report(
            "results/P6/swamping.svg", caption="../captions/figure.rst", category="Precision", labels={"ID": "P6"}
        ),
    params:
        **job("adbench.precision.plots:plot_precision", packages=("matplotlib",)),


register("precision", rules.precision_formats.output, rules.precision_scaling.output, rules.precision_plot.output)
