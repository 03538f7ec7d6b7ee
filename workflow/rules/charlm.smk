# C1: a four-block character GPT trained five ways (one `variant` wildcard job each),
# scored on held-out text by an independent evaluation path, then summarized and plotted.

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
    log:
        "logs/charlm_train_{variant}.log",
    benchmark:
        "benchmarks/charlm_train_{variant}.tsv"
    conda:
        ENV
    script:
        "../../scripts/charlm_train.py"


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
    log:
        "logs/charlm_eval.log",
    benchmark:
        "benchmarks/charlm_eval.tsv"
    conda:
        ENV
    script:
        "../../scripts/charlm_eval.py"


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
    log:
        "logs/charlm_summary.log",
    benchmark:
        "benchmarks/charlm_summary.tsv"
    conda:
        ENV
    script:
        "../../scripts/charlm_summary.py"


rule charlm_plot:
    input:
        curves="results/C1/curves.csv",
        grad_norms="results/C1/grad_norms.csv",
        heldout="results/C1/heldout.csv",
        baselines="results/C1/baselines.csv",
    output:
        curves=report("results/C1/curves.svg", caption="../report/figure.rst", category="Character model", labels={"ID": "C1"}),
        heldout=report("results/C1/heldout.svg", caption="../report/figure.rst", category="Character model", labels={"ID": "C1"}),
        grad_norms=report("results/C1/grad_norms.svg", caption="../report/figure.rst", category="Character model", labels={"ID": "C1"}),
    params:
        prov=prov("adbench.plots.charlm", packages=("matplotlib",)),
    priority: 10  # long chains to the report: start them first
    log:
        "logs/charlm_plot.log",
    benchmark:
        "benchmarks/charlm_plot.tsv"
    conda:
        ENV
    script:
        "../../scripts/charlm_plot.py"


register(
    "charlm",
    "results/C1/values.csv", "results/C1/meta.json", "results/C1/summary.csv",
    "results/C1/heldout.csv", "results/C1/baselines.csv", "results/C1/surprise.csv",
    "results/C1/surprise_extremes.csv", "results/C1/grad_norms.csv",
    "results/C1/curves.svg", "results/C1/heldout.svg", "results/C1/grad_norms.svg",
    *expand("results/C1/train/{variant}/meta.json", variant=C1_VARIANTS),
)
