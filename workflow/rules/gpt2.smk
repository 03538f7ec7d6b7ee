# G family (+ P9): GPT-2 probes. Three measurement jobs share forward/backward passes:
# gpt2_prompt (G1-G4, one prompt), gpt2_sequence (G5, G7, G8, P9, one corpus sequence) and
# gpt2_memory (G6, saved tensors and checkpoint timing); each still writes results/<ID>/.
# The model comes from the HF cache or a directory when present, else a seeded random init.

GPT2 = config["gpt2"]
GPT2_CORPUS = "results/corpus/corpus.txt"
GPT2_MODEL = dict(source=GPT2["source"], revision=GPT2["revision"], path=GPT2["path"], seed=GPT2["seed"],
                  random_config=GPT2["random_config"], tokenizer_vocab_size=GPT2["tokenizer_vocab_size"])
GPT2_PACKAGES = ("torch", "numpy", "transformers", "tokenizers")


rule gpt2_prompt:
    input:
        corpus=GPT2_CORPUS,
    output:
        g1_values="results/G1/values.csv",
        g2_values="results/G2/values.csv",
        g3_values="results/G3/values.csv",
        g4_values="results/G4/values.csv",
        target="results/G1/target.csv",
        states="results/G2/states.csv",
        qkv="results/G3/qkv.csv",
        direction="results/G4/direction.csv",
        meta="results/G1/meta.json",
        meta_G2="results/G2/meta.json",
        meta_G3="results/G3/meta.json",
        meta_G4="results/G4/meta.json",
    params:
        args=dict(model=GPT2_MODEL, prompt=GPT2["prompt"], target=GPT2["target"], g3_layers=GPT2["g3_layers"],
                  g4_layer=GPT2["g4_layer"], g4_distance=GPT2["g4_distance"], corpus=GPT2_CORPUS,
                  device=config["device"]),
        prov=prov("adbench.gpt2.prompt", packages=GPT2_PACKAGES, seed=GPT2["seed"], threads=GPT2["threads"],
                  uses_device=True),
    threads: GPT2["threads"]
    resources:
        mem_mb=GPT2["mem_mb"]["prompt"],
    priority: 10  # long chains to the report: start them first
    log:
        "logs/gpt2_prompt.log",
    benchmark:
        "benchmarks/gpt2_prompt.tsv"
    conda:
        ENV
    script:
        "../../scripts/gpt2_prompt.py"


rule gpt2_sequence:
    input:
        corpus=GPT2_CORPUS,
    output:
        g5_values="results/G5/values.csv",
        g7_values="results/G7/values.csv",
        g8_values="results/G8/values.csv",
        p9_values="results/P9/values.csv",
        surprise="results/G5/surprise.csv",
        extremes="results/G5/extremes.csv",
        g5_summary="results/G5/summary.csv",
        clipping="results/G7/clipping.csv",
        blocks="results/G8/blocks.csv",
        p9_summary="results/P9/summary.csv",
        p9_autocast="results/P9/autocast.csv",
        meta="results/G5/meta.json",
        meta_G7="results/G7/meta.json",
        meta_G8="results/G8/meta.json",
        meta_P9="results/P9/meta.json",
    params:
        args=dict(model=GPT2_MODEL, corpus=GPT2_CORPUS, seq_len=GPT2["seq_len"], text_offset=GPT2["text_offset"],
                  worst_fraction=GPT2["worst_fraction"], extremes=GPT2["extremes"],
                  context_tokens=GPT2["context_tokens"], clip_max_norm=GPT2["clip_max_norm"],
                  starved_ratio=GPT2["starved_ratio"], runaway_ratio=GPT2["runaway_ratio"],
                  loss_scale=GPT2["loss_scale"], device=config["device"]),
        prov=prov("adbench.gpt2.sequence", packages=GPT2_PACKAGES, seed=GPT2["seed"], threads=GPT2["threads"],
                  uses_device=True),
    threads: GPT2["threads"]
    resources:
        mem_mb=GPT2["mem_mb"]["sequence"],
    priority: 10  # long chains to the report: start them first
    log:
        "logs/gpt2_sequence.log",
    benchmark:
        "benchmarks/gpt2_sequence.tsv"
    conda:
        ENV
    script:
        "../../scripts/gpt2_sequence.py"


rule gpt2_memory:
    input:
        corpus=GPT2_CORPUS,
    output:
        values="results/G6/values.csv",
        saved="results/G6/saved.csv",
        by_node="results/G6/by_node.csv",
        summary="results/G6/summary.csv",
        timing="results/G6/timing.csv",
        meta="results/G6/meta.json",
    params:
        args=dict(model=GPT2_MODEL, corpus=GPT2_CORPUS, seq_len=GPT2["seq_len"], batch=GPT2["batch"],
                  timing_batch=GPT2["timing_batch"], timing_rounds=GPT2["timing_rounds"],
                  timing_warmup=GPT2["timing_warmup"], seed=config["timing"]["seed"], device=config["device"],
                  timing_retries=config["timing"]["retries"]),
        prov=prov("adbench.gpt2.memory", packages=GPT2_PACKAGES, seed=GPT2["seed"], threads=GPT2["threads"],
                  uses_device=True),
    threads: GPT2["threads"]
    resources:
        mem_mb=GPT2["mem_mb"]["memory"],
    priority: 10  # long chains to the report: start them first
    log:
        "logs/gpt2_memory.log",
    benchmark:
        "benchmarks/gpt2_memory.tsv"
    conda:
        ENV
    script:
        "../../scripts/gpt2_memory.py"


rule gpt2_plots:
    input:
        states="results/G2/states.csv",
        surprise="results/G5/surprise.csv",
        blocks="results/G8/blocks.csv",
        meta="results/G1/meta.json",
    output:
        states=report("results/G2/states.svg", caption="../report/figure.rst", category="GPT-2", labels={"ID": "G2"}),
        surprise=report("results/G5/surprise.svg", caption="../report/figure.rst", category="GPT-2", labels={"ID": "G5"}),
        blocks=report("results/G8/blocks.svg", caption="../report/figure.rst", category="GPT-2", labels={"ID": "G8"}),
    params:
        prov=prov("adbench.plots.gpt2", packages=("matplotlib",)),
    log:
        "logs/gpt2_plots.log",
    benchmark:
        "benchmarks/gpt2_plots.tsv"
    conda:
        ENV
    script:
        "../../scripts/gpt2_plots.py"


register(
    "gpt2",
    *[f"results/G{i}/values.csv" for i in range(1, 9)],
    *[f"results/G{i}/meta.json" for i in range(1, 9)],
    "results/P9/values.csv", "results/P9/summary.csv", "results/P9/autocast.csv", "results/P9/meta.json",
    "results/G1/target.csv", "results/G2/states.csv", "results/G3/qkv.csv", "results/G4/direction.csv",
    "results/G5/surprise.csv", "results/G5/extremes.csv", "results/G5/summary.csv",
    "results/G6/saved.csv", "results/G6/by_node.csv", "results/G6/summary.csv", "results/G6/timing.csv",
    "results/G7/clipping.csv", "results/G8/blocks.csv",
    "results/G2/states.svg", "results/G5/surprise.svg", "results/G8/blocks.svg",
)
