# C1: a four-block character GPT trained five ways (one `variant` wildcard job each),
# scored on held-out text by an independent evaluation path, then summarized and plotted.

family("charlm", "A character model trained five ways", ("C1",), order=80)

# The five of the documents, then a control: no_zero_grad with gradient clipping switched on.
C1_VARIANTS = ["correct", "no_zero_grad", "unshifted_targets", "loss_x40", "detached_positions",
               "no_zero_grad_clipped"]


rule charlm_train:
    input:
        corpus="results/corpus/corpus.txt",
        train="results/corpus/train.txt",
    output:
        curve="results/C1/train/{variant}/curve.csv",
        grad_norms="results/C1/train/{variant}/grad_norms.csv",
        weights="results/C1/weights/{variant}.pt",
        run="results/C1/train/{variant}/run.csv",
        meta="results/C1/train/{variant}/meta.json",
    params:
        args=config["charlm"]["train"],
        prov=prov("adbench.charlm.train", seed=config["charlm"]["train"]["seed"], threads=1),
    wildcard_constraints:
        variant="|".join(C1_VARIANTS),
    priority: 10  # long chains to the report: start them first
    resources: **sized(runtime=31)
    log: LOG("charlm_train_{variant}")
    benchmark: BENCH("charlm_train_{variant}")
    conda: ENV
    script: SCRIPT("charlm_train")


rule charlm_eval:
    input:
        weights=expand("results/C1/weights/{variant}.pt", variant=C1_VARIANTS),
        corpus="results/corpus/corpus.txt",
        train="results/corpus/train.txt",
        heldout="results/corpus/heldout.txt",
    output:
        heldout="results/C1/heldout.csv",
        baselines="results/C1/baselines.csv",
        surprise="results/C1/surprise.csv",
        surprise_extremes="results/C1/surprise_extremes.csv",
        meta="results/C1/eval.meta.json",
    params:
        args=dict(surprise_context=config["charlm"]["surprise_context"],
                  surprise_extremes=config["charlm"]["surprise_extremes"]),
        prov=prov("adbench.charlm.evaluate", threads=1),
    priority: 10  # long chains to the report: start them first
    resources: **sized()
    log: LOG("charlm_eval")
    benchmark: BENCH("charlm_eval")
    conda: ENV
    script: SCRIPT("charlm_eval")


rule charlm_summary:
    input:
        heldout="results/C1/heldout.csv",
        baselines="results/C1/baselines.csv",
        curves=expand("results/C1/train/{variant}/curve.csv", variant=C1_VARIANTS),
        grad_norms=expand("results/C1/train/{variant}/grad_norms.csv", variant=C1_VARIANTS),
        runs=expand("results/C1/train/{variant}/run.csv", variant=C1_VARIANTS),
    output:
        values="results/C1/values.csv",
        summary="results/C1/summary.csv",
        curves="results/C1/curves.csv",
        grad_norms="results/C1/grad_norms.csv",
        meta="results/C1/meta.json",
    params:
        args=dict(final_window=config["charlm"]["final_window"], early_step=config["charlm"]["early_step"],
                  surprise_probabilities=config["charlm"]["surprise_probabilities"]),
        prov=prov("adbench.charlm.summary"),
    priority: 10  # long chains to the report: start them first
    resources: **sized()
    log: LOG("charlm_summary")
    benchmark: BENCH("charlm_summary")
    conda: ENV
    script: SCRIPT("charlm_summary")


rule charlm_plot:
    input:
        curves="results/C1/curves.csv",
        grad_norms="results/C1/grad_norms.csv",
        heldout="results/C1/heldout.csv",
        baselines="results/C1/baselines.csv",
    output:
        curves=report("results/C1/curves.svg", caption="../captions/figure.rst", category="Character model", labels={"ID": "C1"}),
        heldout=report("results/C1/heldout.svg", caption="../captions/figure.rst", category="Character model", labels={"ID": "C1"}),
        grad_norms=report("results/C1/grad_norms.svg", caption="../captions/figure.rst", category="Character model", labels={"ID": "C1"}),
    params:
        measure="adbench.plots.charlm:plot_c1",
        prov=prov("adbench.plots.charlm", packages=("matplotlib",)),
    priority: 10  # long chains to the report: start them first
    resources: **sized()
    log: LOG("charlm_plot")
    benchmark: BENCH("charlm_plot")
    conda: ENV
    script: SCRIPT("measure")


register(
    "charlm",
    rules.corpus.output.stats,
    rules.corpus.output.meta,
    rules.charlm_eval.output,
    rules.charlm_summary.output,
    rules.charlm_plot.output,
    expand(rules.charlm_train.output.meta, variant=C1_VARIANTS),
)
