# S family: scalar tape, numerical derivatives, forward vs reverse mode, tape speed.
# One rule per measurement ID; S9 is the timing chain (calibrate -> run{process} -> summary -> plot, timing.smk).


use rule measure as scalar_s1 with:
    output:
        **id_outputs("S1", "values", "gradients"),
    params:
        **job(
            "adbench.scalar.probes:measure_s1",
            args=dict(a=config["scalar"]["a"], b=config["scalar"]["b"], reference_h=config["scalar"]["reference_h"]),
        ),


use rule measure as scalar_s2 with:
    output:
        **id_outputs("S2", "values", "nudges"),
    params:
        **job(
            "adbench.scalar.probes:measure_s2",
            args=dict(nudge_x=config["scalar"]["nudge_x"], nudges=config["scalar"]["nudges"]),
        ),


use rule measure as scalar_s3 with:
    output:
        **id_outputs("S3", "values", "routes"),
    params:
        **job("adbench.scalar.probes:measure_s3", args=dict(a=config["scalar"]["a"], b=config["scalar"]["b"])),


use rule measure as scalar_s4 with:
    output:
        **id_outputs("S4", "values", "variants", "factor", "dedup_grads", "dedup_calls"),
    params:
        **job(
            "adbench.scalar.probes:measure_s4",
            args=dict(a=config["scalar"]["a"], b=config["scalar"]["b"], factor_b=config["scalar"]["factor_b"]),
        ),


use rule measure as scalar_s5 with:
    output:
        **id_outputs("S5", "values", "sweep", "slopes"),
    params:
        **job(
            "adbench.scalar.numeric:measure_s5",
            args=dict(
                a=config["scalar"]["a"],
                b=config["scalar"]["b"],
                sweep_h=config["scalar"]["sweep_h"],
                slope_fit_h=config["scalar"]["slope_fit_h"],
            ),
        ),


use rule measure as scalar_s6 with:
    output:
        **id_outputs("S6", "values", "sweep", "controls"),
    params:
        **job(
            "adbench.scalar.numeric:measure_s6",
            args=dict(
                a=config["scalar"]["a"],
                b=config["scalar"]["b"],
                complex_h=config["scalar"]["complex_h"],
                complex_controls_at=config["scalar"]["complex_controls_at"],
            ),
        ),


use rule measure as scalar_s7 with:
    output:
        **id_outputs("S7", "values", "directions", "blind_spots", "dropout", "relu_kink", "mutations"),
    params:
        **job("adbench.scalar.numeric:measure_s7", args=config["scalar"]["directional"]),


use rule measure as scalar_s8 with:
    output:
        **id_outputs("S8", "values", "modes", "reconstruction", "nonscalar", "vjp"),
    params:
        **job(
            "adbench.scalar.numeric:measure_s8",
            args=dict(
                modes_x=config["scalar"]["modes_x"],
                modes_seed=config["scalar"]["modes_seed"],
                vjp_v=config["scalar"]["vjp_v"],
            ),
        ),


use rule measure as scalar_s10 with:
    output:
        **id_outputs("S10", "values", "mlp_grads", "mlp_nodes_by_op", "backward_steps", "reuse_steps"),
    params:
        **job(
            "adbench.scalar.probes:measure_s10",
            args=dict(
                expression=config["scalar"]["expression"],
                mlp=config["scalar"]["mlp"],
                reuse_x=config["scalar"]["reuse_x"],
            ),
        ),


use rule measure as scalar_s5_plot with:
    input:
        sweep=rules.scalar_s5.output.S5__sweep,
        slopes=rules.scalar_s5.output.S5__slopes,
    output:
        figure=report("results/S5/valley.svg", caption="../captions/figure.rst", category="Scalar", labels={"ID": "S5"}),
    params:
        **job("adbench.scalar.plots:plot_valley", packages=("matplotlib",)),


# S9's timing chain: the four steps of timing.smk.
use rule timing_calibrate as scalar_s9_calibrate with:
    output:
        calibration="results/S9/calibration.csv",
        meta="results/S9/calibration.meta.json",
    params:
        **job("adbench.scalar.speed:measure_calibration", args=timing_args("dot_length", "target_ms", "seed")),


use rule timing_run as scalar_s9_run with:
    input:
        calibration=rules.scalar_s9_calibrate.output.calibration,
    output:
        samples="results/S9/runs/{process}/samples.csv",
        meta="results/S9/runs/{process}/meta.json",
    params:
        **job(
            "adbench.scalar.speed:measure_run",
            args=timing_args("dot_length", "rounds", "warmup", "seed", "retries"),
        ),


use rule timing_summary as scalar_s9_summary with:
    input:
        samples=expand(rules.scalar_s9_run.output.samples, process=TIMING_PROCESSES),
    output:
        **id_outputs("S9", "values", "per_process", "samples"),
    params:
        **job("adbench.scalar.speed:measure_summary", args=timing_args("bootstrap", "seed")),


use rule timing_plot as scalar_s9_plot with:
    input:
        samples=rules.scalar_s9_summary.output.S9__samples,
    output:
        figure=report(
            "results/S9/samples.svg", caption="../captions/figure.rst", category="Scalar", labels={"ID": "S9"}
        ),
    params:
        **job("adbench.scalar.plots:plot_timing", packages=("matplotlib",)),


register(
    "scalar",
    *(getattr(rules, f"scalar_s{i}").output for i in (1, 2, 3, 4, 5, 6, 7, 8, 10)),
    rules.scalar_s9_calibrate.output,
    expand(rules.scalar_s9_run.output, process=TIMING_PROCESSES),
    rules.scalar_s9_summary.output,
    rules.scalar_s5_plot.output,
    rules.scalar_s9_plot.output,
)
