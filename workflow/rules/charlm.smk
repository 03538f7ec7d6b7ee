# C1: a four-block character GPT trained five ways (one `variant` wildcard job each),
# scored on held-out text by an independent evaluation path, then summarized and plotted.

from adbench.charlm.variants import VARIANTS

# The five of the documents, then a control: no_zero_grad with gradient clipping switched on
# (adbench.charlm.variants, torch-free, is the one list; the rules only read it).
C1_VARIANTS = list(VARIANTS)


use rule measure as charlm_train with:
    input:
        corpus_text=rules.corpus.output.corpus,
        train_text=rules.corpus.output.train,
    output:
        curve="results/C1/train/{variant}/curve.csv",
        grad_norms="results/C1/train/{variant}/grad_norms.csv",
        weights="results/C1/weights/{variant}.pt",
        run="results/C1/train/{variant}/run.csv",
        meta="results/C1/train/{variant}/meta.json",
    wildcard_constraints:
        variant="|".join(C1_VARIANTS),
    priority: PRIORITY["long"]
    resources:
        # ~50 s CPU per variant (GEMMs on the faster backend, adbench.charlm.backend); 17 = 3x the slowest wall (339 s) of a
        # full default run on 2 cores shared with other work
        **sized(runtime=17),
    params:
        **job(
            "adbench.charlm.train:measure_train",
            args=dict(**config["charlm"]["train"], gemm_backend=config["charlm"]["gemm_backend"]),
            seed=config["charlm"]["train"]["seed"],
        ),


use rule measure as charlm_eval with:
    input:
        weights=expand(rules.charlm_train.output.weights, variant=C1_VARIANTS),
        corpus_text=rules.corpus.output.corpus,
        train_text=rules.corpus.output.train,
        heldout_text=rules.corpus.output.heldout,
    output:
        heldout="results/C1/heldout.csv",
        baselines="results/C1/baselines.csv",
        meta="results/C1/eval.meta.json",
    priority: PRIORITY["chain"]
    params:
        **job("adbench.charlm.evaluate:measure_eval", args=dict(variants=C1_VARIANTS)),


# The trained correct model as a stand-in for the GPT-2 probes that need trained weights (proxy claims of
# G2, G3, G5): its per-character surprise on the held-out text, and one held-out target's backward pass
# (residual-state gradient norms, the q/k/v split of each attention projection's gradient).
use rule measure as charlm_proxy with:
    input:
        weights=one(rules.charlm_train.output.weights, variant="correct"),
        corpus_text=rules.corpus.output.corpus,
        heldout_text=rules.corpus.output.heldout,
    output:
        surprise="results/C1/surprise.csv",
        surprise_extremes="results/C1/surprise_extremes.csv",
        states="results/C1/states.csv",
        qkv="results/C1/qkv.csv",
        meta="results/C1/proxy.meta.json",
    priority: PRIORITY["chain"]
    params:
        **job(
            "adbench.charlm.proxy:measure_proxy",
            args=dict(
                surprise_context=config["charlm"]["surprise_context"],
                surprise_extremes=config["charlm"]["surprise_extremes"],
            ),
        ),


# The scaled loss (x charlm.train.loss_scale) under plain SGD and one AdamW step (C1 model, float64, its first batches), how far each
# run's weights moved from the shared initial state (rebuilt from the seed), and the unshifted run's held-out score through the
# training loop's own data path (seconds): no training numbers change.
use rule measure as charlm_checks with:
    input:
        weights=expand(rules.charlm_train.output.weights, variant=C1_VARIANTS),
        corpus_text=rules.corpus.output.corpus,
        train_text=rules.corpus.output.train,
        heldout_text=rules.corpus.output.heldout,
    output:
        sgd_steps="results/C1/checks/sgd_steps.csv",
        one_step="results/C1/checks/one_step.csv",
        drift="results/C1/checks/drift.csv",
        shared_path="results/C1/checks/shared_path.csv",
        meta="results/C1/checks/meta.json",
    priority: PRIORITY["chain"]
    params:
        **job(
            "adbench.charlm.checks:measure_checks",
            args=dict(
                variants=C1_VARIANTS,
                scale_steps=config["charlm"]["scale_steps"],
                **{
                    k: config["charlm"]["train"][k]
                    for k in (
                        "batch_size",
                        "block_size",
                        "n_layer",
                        "n_head",
                        "n_embd",
                        "lr",
                        "weight_decay",
                        "betas",
                        "loss_scale",
                        "seed",
                    )
                },
            ),
            seed=config["charlm"]["train"]["seed"],
        ),


use rule measure as charlm_summary with:
    input:
        heldout=rules.charlm_eval.output.heldout,
        baselines=rules.charlm_eval.output.baselines,
        curves=expand(rules.charlm_train.output.curve, variant=C1_VARIANTS),
        grad_norms=expand(rules.charlm_train.output.grad_norms, variant=C1_VARIANTS),
        runs=expand(rules.charlm_train.output.run, variant=C1_VARIANTS),
    output:
        **id_outputs("C1", "values", "summary", "curves", "grad_norms"),
    priority: PRIORITY["chain"]
    params:
        **job(
            "adbench.charlm.summary:measure_summary",
            args=dict(
                final_window=config["charlm"]["final_window"],
                early_step=config["charlm"]["early_step"],
                surprise_probabilities=config["charlm"]["surprise_probabilities"],
                loss_scale=config["charlm"]["train"]["loss_scale"],
            ),
        ),


use rule measure as charlm_plot with:
    input:
        curves=rules.charlm_summary.output.C1__curves,
        grad_norms=rules.charlm_summary.output.C1__grad_norms,
        heldout=rules.charlm_eval.output.heldout,
        baselines=rules.charlm_eval.output.baselines,
    output:
        curves=report(
            "results/C1/curves.svg", caption="../captions/figure.rst", category="Character model", labels={"ID": "C1"}
        ),
        heldout=report(
            "results/C1/heldout.svg", caption="../captions/figure.rst", category="Character model", labels={"ID": "C1"}
        ),
        grad_norms=report(
            "results/C1/grad_norms.svg",
            caption="../captions/figure.rst",
            category="Character model",
            labels={"ID": "C1"},
        ),
    priority: PRIORITY["chain"]
    params:
        **job("adbench.charlm.plots:plot_c1", packages=("matplotlib",)),


register(
    "charlm",
    rules.corpus.output,
    rules.charlm_eval.output,
    rules.charlm_proxy.output,
    rules.charlm_checks.output,
    rules.charlm_summary.output,
    rules.charlm_plot.output,
    expand(rules.charlm_train.output, variant=C1_VARIANTS),
)
