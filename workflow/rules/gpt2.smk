# G family (+ P9): GPT-2 probes. Three measurement jobs share forward/backward passes:
# gpt2_prompt (G1-G4, one prompt), gpt2_sequence (G5, G7, G8, P9, one corpus sequence) and
# gpt2_memory (G6, saved tensors and checkpoint timing); each still writes results/<ID>/.
# gpt2_model resolves the model once (HF cache or gpt2.path when present, else a seeded random init
# with a BPE trained on the corpus) into results/gpt2/model.json, which every GPT-2 job reads.
from adbench.gpt2.locate import weights_location

family("gpt2", "GPT-2 probes", numbered("G", 8), order=70)

GPT2 = config["gpt2"]
GPT2_PACKAGES = ("torch", "numpy", "transformers", "tokenizers")


rule gpt2_model:
    input:
        corpus=rules.corpus.output.corpus,
        # the snapshot (or gpt2.path) directory when it is on this machine: new weights re-run the GPT-2 jobs
        weights=lambda wc: [w for w in [weights_location(GPT2["source"], GPT2["revision"], GPT2["path"])] if w],
    output:
        model="results/gpt2/model.json",
        tokenizer="results/gpt2/tokenizer/tokenizer.json",
        meta="results/gpt2/meta.json",
    params:
        args={k: GPT2[k] for k in ("source", "revision", "path", "seed", "random_config", "tokenizer_vocab_size")},
        prov=prov("adbench.gpt2.resolve", packages=GPT2_PACKAGES, seed=GPT2["seed"]),
    priority: 10  # long chains to the report: start them first
    resources: **sized(mem_mb=2000, runtime=10, uses_device=True)  # new rule, no full-run benchmark yet: BPE training headroom
    log: LOG("gpt2_model")
    benchmark: BENCH("gpt2_model")
    conda: ENV
    script: SCRIPT("gpt2_model")


rule gpt2_prompt:
    input:
        model=rules.gpt2_model.output.model,
        tokenizer=rules.gpt2_model.output.tokenizer,
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
        **id_outputs("G2"),
        **id_outputs("G3"),
        **id_outputs("G4"),
    params:
        args=dict(prompt=GPT2["prompt"], target=GPT2["target"], g3_layers=GPT2["g3_layers"],
                  g4_layer=GPT2["g4_layer"], g4_distance=GPT2["g4_distance"], device=config["device"]),
        prov=prov("adbench.gpt2.prompt", packages=GPT2_PACKAGES, seed=GPT2["seed"], threads=GPT2["threads"],
                  uses_device=True),
    threads: GPT2["threads"]
    # mem_mb from config (gpt2.mem_mb: >= 1.5x the full run's peak RSS of each job); runtime ~3x its wall time
    resources: **sized(uses_device=True, mem_mb=GPT2["mem_mb"]["prompt"], runtime=5, threads=GPT2["threads"])
    priority: 10  # long chains to the report: start them first
    log: LOG("gpt2_prompt")
    benchmark: BENCH("gpt2_prompt")
    conda: ENV
    script: SCRIPT("gpt2_prompt")


rule gpt2_sequence:
    input:
        model=rules.gpt2_model.output.model,
        tokenizer=rules.gpt2_model.output.tokenizer,
        corpus=rules.corpus.output.corpus,
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
        **id_outputs("G7"),
        **id_outputs("G8"),
        **id_outputs("P9"),
    params:
        args=dict(seq_len=GPT2["seq_len"], text_offset=GPT2["text_offset"],
                  worst_fraction=GPT2["worst_fraction"], extremes=GPT2["extremes"],
                  context_tokens=GPT2["context_tokens"], clip_max_norm=GPT2["clip_max_norm"],
                  starved_ratio=GPT2["starved_ratio"], runaway_ratio=GPT2["runaway_ratio"],
                  loss_scale=GPT2["loss_scale"], device=config["device"]),
        prov=prov("adbench.gpt2.sequence", packages=GPT2_PACKAGES, seed=GPT2["seed"], threads=GPT2["threads"],
                  uses_device=True),
    threads: GPT2["threads"]
    resources: **sized(uses_device=True, mem_mb=GPT2["mem_mb"]["sequence"], runtime=11, threads=GPT2["threads"])
    priority: 10  # long chains to the report: start them first
    log: LOG("gpt2_sequence")
    benchmark: BENCH("gpt2_sequence")
    conda: ENV
    script: SCRIPT("gpt2_sequence")


rule gpt2_memory:
    input:
        model=rules.gpt2_model.output.model,
        tokenizer=rules.gpt2_model.output.tokenizer,
        corpus=rules.corpus.output.corpus,
    output:
        values="results/G6/values.csv",
        saved="results/G6/saved.csv",
        by_node="results/G6/by_node.csv",
        summary="results/G6/summary.csv",
        timing="results/G6/timing.csv",
        meta="results/G6/meta.json",
    params:
        args=dict(seq_len=GPT2["seq_len"], batch=GPT2["batch"],
                  timing_batch=GPT2["timing_batch"], timing_rounds=GPT2["timing_rounds"],
                  timing_warmup=GPT2["timing_warmup"], seed=config["timing"]["seed"], device=config["device"],
                  timing_retries=config["timing"]["retries"]),
        prov=prov("adbench.gpt2.memory", packages=GPT2_PACKAGES, seed=GPT2["seed"], threads=GPT2["threads"],
                  uses_device=True),
    threads: GPT2["threads"]
    resources: **sized(uses_device=True, mem_mb=GPT2["mem_mb"]["memory"], runtime=73, threads=GPT2["threads"])
    priority: 10  # long chains to the report: start them first
    log: LOG("gpt2_memory")
    benchmark: BENCH("gpt2_memory")
    conda: ENV
    script: SCRIPT("gpt2_memory")


rule gpt2_plots:
    input:
        states="results/G2/states.csv",
        surprise="results/G5/surprise.csv",
        blocks="results/G8/blocks.csv",
        model=rules.gpt2_model.output.model,
    output:
        states=report("results/G2/states.svg", caption="../report/figure.rst", category="GPT-2", labels={"ID": "G2"}),
        surprise=report("results/G5/surprise.svg", caption="../report/figure.rst", category="GPT-2", labels={"ID": "G5"}),
        blocks=report("results/G8/blocks.svg", caption="../report/figure.rst", category="GPT-2", labels={"ID": "G8"}),
    params:
        prov=prov("adbench.plots.gpt2", packages=("matplotlib",)),
    resources: **sized()
    log: LOG("gpt2_plots")
    benchmark: BENCH("gpt2_plots")
    conda: ENV
    script: SCRIPT("gpt2_plots")


register(
    "gpt2",
    rules.gpt2_model.output.model,
    rules.gpt2_model.output.meta,
    rules.gpt2_prompt.output,
    rules.gpt2_sequence.output,
    rules.gpt2_memory.output,
    rules.gpt2_plots.output,
)
