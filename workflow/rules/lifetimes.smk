# L family: accumulation, leaves and saved-value lifetimes, checkpoint memory and time, shape arithmetic.
# L6 is a memory job plus a calibrate -> run{process} -> summary timing chain (like S9).

LIFE = config["lifetimes"]
LIFE_DATA = dict(in_features=LIFE["in_features"], out_features=LIFE["out_features"], seed=LIFE["seed"])
LIFE_CKPT = LIFE["checkpoint"]


# L1-L5 share one job (one torch import); each ID still writes results/<ID>/ and its own meta.json.
rule lifetimes_graph:
    output:
        l1_values="results/L1/values.csv",
        l1_zero_grad="results/L1/zero_grad.csv",
        meta_L1="results/L1/meta.json",
        l2_values="results/L2/values.csv",
        l2_schemes="results/L2/schemes.csv",
        meta_L2="results/L2/meta.json",
        l3_values="results/L3/values.csv",
        l3_ranks="results/L3/ranks.csv",
        meta_L3="results/L3/meta.json",
        l4_values="results/L4/values.csv",
        l4_tensors="results/L4/tensors.csv",
        meta_L4="results/L4/meta.json",
        l5_values="results/L5/values.csv",
        l5_errors="results/L5/errors.csv",
        meta_L5="results/L5/meta.json",
    params:
        args=dict(
            L1=dict(n_examples=LIFE["accumulation_examples"], **LIFE_DATA),
            L2=dict(n_examples=LIFE["accumulation_examples"], split=LIFE["split"], nanogpt_steps=LIFE["nanogpt_steps"],
                  nanogpt_micro=LIFE["nanogpt_micro"], **LIFE_DATA),
            L3=dict(split=LIFE["split"], **LIFE_DATA),
            L4=dict(x=LIFE["leaf_x"]),
            L5=dict(x=LIFE["leaf_x"], shift=LIFE["inplace_shift"], cube_at=LIFE["cube_at"]),
        ),
        prov=prov("adbench.lifetimes.accumulation", "adbench.lifetimes.graph"),
    log:
        "logs/lifetimes_graph.log",
    benchmark:
        "benchmarks/lifetimes_graph.tsv"
    conda:
        ENV
    script:
        "../../scripts/lifetimes_graph.py"

rule lifetimes_l6_memory:
    output:
        values="results/L6/values.csv",
        accounting="results/L6/accounting.csv",
        per_block="results/L6/per_block.csv",
        checks="results/L6/checks.csv",
        saved="results/L6/saved.csv",
        meta="results/L6/meta.json",
    params:
        args=LIFE_CKPT,
        prov=prov("adbench.lifetimes.checkpoint_probe", "adbench.lifetimes.checkpoint"),
    log:
        "logs/lifetimes_l6_memory.log",
    benchmark:
        "benchmarks/lifetimes_l6_memory.tsv"
    conda:
        ENV
    script:
        "../../scripts/lifetimes_l6_memory.py"


rule lifetimes_l6_calibrate:
    output:
        calibration="results/L6/timing/calibration.csv",
        meta="results/L6/timing/calibration.meta.json",
    params:
        args=dict(target_ms=config["timing"]["target_ms"], **LIFE_CKPT),
        prov=prov("adbench.lifetimes.checkpoint_probe", "adbench.lifetimes.checkpoint", threads=1),
    # Timing jobs take every core so nothing else runs beside them (torch itself uses one);
    # timing.exclusive: false (smoke tests) lets them share.
    threads: workflow.cores if config["timing"]["exclusive"] else 1
    log:
        "logs/lifetimes_l6_calibrate.log",
    benchmark:
        "benchmarks/lifetimes_l6_calibrate.tsv"
    conda:
        ENV
    script:
        "../../scripts/lifetimes_l6_calibrate.py"


rule lifetimes_l6_run:
    input:
        calibration="results/L6/timing/calibration.csv",
    output:
        samples="results/L6/timing/runs/{process}/samples.csv",
        meta="results/L6/timing/runs/{process}/meta.json",
    params:
        args=dict(rounds=config["timing"]["rounds"], warmup=config["timing"]["warmup"], retries=config["timing"]["retries"],
                  **LIFE_CKPT),
        prov=prov("adbench.lifetimes.checkpoint_probe", "adbench.lifetimes.checkpoint", threads=1),
    wildcard_constraints:
        process=r"\d+",
    # Timing jobs take every core so nothing else runs beside them (torch itself uses one);
    # timing.exclusive: false (smoke tests) lets them share.
    threads: workflow.cores if config["timing"]["exclusive"] else 1
    log:
        "logs/lifetimes_l6_run_{process}.log",
    benchmark:
        "benchmarks/lifetimes_l6_run_{process}.tsv"
    conda:
        ENV
    script:
        "../../scripts/lifetimes_l6_run.py"


rule lifetimes_l6_summary:
    input:
        samples=expand("results/L6/timing/runs/{process}/samples.csv",
                       process=range(1, config["timing"]["processes"] + 1)),
    output:
        values="results/L6/timing/values.csv",
        per_process="results/L6/timing/per_process.csv",
        samples="results/L6/timing/samples.csv",
        meta="results/L6/timing/meta.json",
    params:
        args=dict(bootstrap=config["timing"]["bootstrap"], seed=config["timing"]["seed"]),
        prov=prov("adbench.lifetimes.checkpoint_timing"),
    log:
        "logs/lifetimes_l6_summary.log",
    benchmark:
        "benchmarks/lifetimes_l6_summary.tsv"
    conda:
        ENV
    script:
        "../../scripts/lifetimes_l6_summary.py"


rule lifetimes_l6_plot:
    input:
        accounting="results/L6/accounting.csv",
        samples="results/L6/timing/samples.csv",
    output:
        figure=report("results/L6/memory_time.svg", caption="../report/figure.rst", category="Graph lifetimes", labels={"ID": "L6"}),
    params:
        prov=prov("adbench.plots.lifetimes", packages=("matplotlib",)),
    log:
        "logs/lifetimes_l6_plot.log",
    benchmark:
        "benchmarks/lifetimes_l6_plot.tsv"
    conda:
        ENV
    script:
        "../../scripts/lifetimes_l6_plot.py"


rule lifetimes_l7:
    output:
        values="results/L7/values.csv",
        sweep="results/L7/sweep.csv",
        meta="results/L7/meta.json",
    params:
        args=LIFE["shapes"],
        prov=prov("adbench.lifetimes.shapes", packages=("torch", "numpy", "transformers")),
    log:
        "logs/lifetimes_l7.log",
    benchmark:
        "benchmarks/lifetimes_l7.tsv"
    conda:
        ENV
    script:
        "../../scripts/lifetimes_l7.py"


rule lifetimes_l7_plot:
    input:
        sweep="results/L7/sweep.csv",
    output:
        figure=report("results/L7/bytes_vs_seq.svg", caption="../report/figure.rst", category="Graph lifetimes", labels={"ID": "L7"}),
    params:
        prov=prov("adbench.plots.lifetimes", packages=("matplotlib",)),
    log:
        "logs/lifetimes_l7_plot.log",
    benchmark:
        "benchmarks/lifetimes_l7_plot.tsv"
    conda:
        ENV
    script:
        "../../scripts/lifetimes_l7_plot.py"


register(
    "lifetimes",
    *[f"results/L{i}/values.csv" for i in range(1, 8)],
    *[f"results/L{i}/meta.json" for i in range(1, 8)],
    "results/L1/zero_grad.csv", "results/L2/schemes.csv", "results/L3/ranks.csv",
    "results/L4/tensors.csv", "results/L5/errors.csv",
    "results/L6/accounting.csv", "results/L6/per_block.csv", "results/L6/checks.csv",
    "results/L6/timing/values.csv", "results/L6/timing/meta.json", "results/L6/timing/per_process.csv",
    "results/L6/timing/calibration.csv", "results/L6/memory_time.svg",
    "results/L7/sweep.csv", "results/L7/bytes_vs_seq.svg",
)
