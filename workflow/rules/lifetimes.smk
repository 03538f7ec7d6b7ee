# L family: accumulation, leaves and saved-value lifetimes, checkpoint memory and time, shape arithmetic.
# L6 is a memory job plus the timing chain (calibrate -> run{process} -> summary -> plot, timing.smk);
# L3's real all-reduce runs several processes in one job of its own.


LIFE = config["lifetimes"]
LIFE_DATA = dict(in_features=LIFE["in_features"], out_features=LIFE["out_features"], seed=LIFE["seed"])
LIFE_CKPT = LIFE["checkpoint"]


# L1-L5 share one job (one torch import); each ID still writes results/<ID>/ and its own meta.json.
# L3's real all-reduce (several processes) is a job of its own: lifetimes_l3_allreduce.
use rule measure as lifetimes_graph with:
    output:
        **id_outputs("L1", "values", "zero_grad", "clearing"),
        **id_outputs("L2", "values", "schemes", "layers"),
        **id_outputs("L3", "values", "ranks", "equal", "wide", "tokens"),
        **id_outputs("L4", "values", "tensors", "branches"),
        **id_outputs("L5", "values", "errors", "inplace", "higher_order", "versions", "saved_by", "lifetime"),
    params:
        **job(
            {
                "L1": "adbench.lifetimes.accumulation:measure_l1",
                "L2": "adbench.lifetimes.batch_layers:measure_l2_layers",
                "L3": "adbench.lifetimes.accumulation:measure_l3",
                "L4": "adbench.lifetimes.graph:measure_l4",
                "L5": "adbench.lifetimes.graph:measure_l5",
            },
            args=dict(
                L1=dict(n_examples=LIFE["accumulation_examples"], **LIFE_DATA),
                L2=dict(
                    n_examples=LIFE["accumulation_examples"],
                    split=LIFE["split"],
                    nanogpt_steps=LIFE["nanogpt_steps"],
                    nanogpt_micro=LIFE["nanogpt_micro"],
                    dropout=LIFE["microbatch_dropout"],
                    equal_split=LIFE["equal_split"],
                    **LIFE_DATA,
                ),
                L3=dict(
                    split=LIFE["split"],
                    equal_split=LIFE["equal_split"],
                    wide_split=LIFE["allreduce"]["wide_split"],
                    tokens=LIFE["tokens"],
                    **LIFE_DATA,
                ),
                L4=dict(x=LIFE["leaf_x"]),
                L5=dict(x=LIFE["leaf_x"], shift=LIFE["inplace_shift"], cube_at=LIFE["cube_at"]),
            ),
        ),


# L3 on a real process group: one gloo process per rank, started by the job itself (torch.multiprocessing
# spawn) and meeting through a file in its temporary folder. One job (one SLURM task) holding one core per rank.
ALLREDUCE_RANKS = max(len(LIFE["split"]), len(LIFE["equal_split"]), len(LIFE["allreduce"]["wide_split"]))


use rule measure as lifetimes_l3_allreduce with:
    output:
        **id_outputs("L3", "reductions", folder="L3/allreduce"),
    threads: ALLREDUCE_RANKS  # one core per rank
    resources:
        # ~300 MB peak RSS per process (each rank imports torch; the launcher too), 1.5x as common.smk sizes
        **sized(mem_mb=500 * (ALLREDUCE_RANKS + 1)),
    params:
        **job(
            "adbench.lifetimes.allreduce:measure_l3_allreduce",
            args=dict(
                split=LIFE["split"],
                equal_split=LIFE["equal_split"],
                wide_split=LIFE["allreduce"]["wide_split"],
                backend=LIFE["allreduce"]["backend"],
                timeout_s=LIFE["allreduce"]["timeout_s"],
                **LIFE_DATA,
            ),
            torch_threads=1,  # the launcher's; each rank sets one for itself
        ),


use rule measure as lifetimes_l6_memory with:
    output:
        **id_outputs("L6", "values", "accounting", "per_block", "checks", "saved", "segments", "rng"),
    params:
        **job(
            "adbench.lifetimes.checkpoint_rng:measure_l6_memory_rng",
            args=dict(**LIFE_CKPT, dropout=LIFE["checkpoint_dropout"]),
        ),


# L6's timing chain: the four steps of timing.smk; its plot also reads the memory job's accounting.
use rule timing_calibrate as lifetimes_l6_calibrate with:
    output:
        calibration="results/L6/timing/calibration.csv",
        meta="results/L6/timing/calibration.meta.json",
    params:
        **job("adbench.lifetimes.checkpoint_probe:measure_calibration", args=timing_args("target_ms", **LIFE_CKPT)),


use rule timing_run as lifetimes_l6_run with:
    input:
        calibration=rules.lifetimes_l6_calibrate.output.calibration,
    output:
        samples="results/L6/timing/runs/{process}/samples.csv",
        meta="results/L6/timing/runs/{process}/meta.json",
    params:
        **job(
            "adbench.lifetimes.checkpoint_probe:measure_run",
            args=timing_args("rounds", "warmup", "retries", **LIFE_CKPT),
        ),


use rule timing_summary as lifetimes_l6_summary with:
    input:
        samples=expand(rules.lifetimes_l6_run.output.samples, process=TIMING_PROCESSES),
    output:
        values="results/L6/timing/values.csv",
        per_process="results/L6/timing/per_process.csv",
        samples="results/L6/timing/samples.csv",
        meta="results/L6/timing/meta.json",
    params:
        **job("adbench.lifetimes.checkpoint_timing:measure_summary", args=timing_args("bootstrap", "seed")),


use rule timing_plot as lifetimes_l6_plot with:
    input:
        accounting=rules.lifetimes_l6_memory.output.L6__accounting,
        samples=rules.lifetimes_l6_summary.output.samples,
    output:
        figure=report(
            "results/L6/memory_time.svg",
            caption="../captions/figure.rst",
            category="Graph lifetimes",
            labels={"ID": "L6"},
        ),
    params:
        **job("adbench.lifetimes.plots:plot_checkpoint", packages=("matplotlib",)),


use rule measure as lifetimes_l7 with:
    output:
        **id_outputs("L7", "values", "sweep", "hooks", "hook_tensors", "saved"),
    params:
        **job("adbench.lifetimes.shapes:measure_l7", args=LIFE["shapes"], packages=("torch", "numpy", "transformers")),


use rule measure as lifetimes_l7_plot with:
    input:
        sweep=rules.lifetimes_l7.output.L7__sweep,
    output:
        figure=report(
            "results/L7/bytes_vs_seq.svg",
            caption="../captions/figure.rst",
            category="Graph lifetimes",
            labels={"ID": "L7"},
        ),
    params:
        **job("adbench.lifetimes.plots:plot_shapes", packages=("matplotlib",)),


register(
    "lifetimes",
    rules.lifetimes_graph.output,
    rules.lifetimes_l3_allreduce.output,
    rules.lifetimes_l6_memory.output,
    rules.lifetimes_l6_calibrate.output,
    expand(rules.lifetimes_l6_run.output, process=TIMING_PROCESSES),
    rules.lifetimes_l6_summary.output,
    rules.lifetimes_l6_plot.output,
    rules.lifetimes_l7.output,
    rules.lifetimes_l7_plot.output,
)
