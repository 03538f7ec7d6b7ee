# G family (+ P9): GPT-2 probes. Three measurement jobs share forward/backward passes:
# gpt2_prompt (G1-G4, one prompt), gpt2_sequence (G5, G7, G8, P9, one corpus sequence) and
# gpt2_memory (G6, saved tensors and checkpoint timing, on transformers' GPT-2 and on a nanoGPT-style copy
# holding the same weights); each still writes results/<ID>/.
# gpt2_model resolves the model once (HF cache or gpt2.path when present, else a seeded random init
# with a BPE trained on the corpus) into results/gpt2/model.json, which every GPT-2 job reads.
from adbench.gpt2.locate import weights_location

GPT2 = config["gpt2"]
GPT2_PACKAGES = ("torch", "numpy", "transformers", "tokenizers")
GPT2_LOCATE = ("source", "revision", "path", "allow_other_revision")  # weights_location's arguments, in order


use rule measure as gpt2_model with:
    input:
        # the snapshot (or gpt2.path) directory when it is on this machine: new weights re-run the GPT-2 jobs
        lambda wc: [w for w in [weights_location(*(GPT2[k] for k in GPT2_LOCATE))] if w],
        corpus_text=rules.corpus.output.corpus,
    output:
        model="results/gpt2/model.json",
        tokenizer="results/gpt2/tokenizer/tokenizer.json",
        meta="results/gpt2/meta.json",
    priority: PRIORITY["first"]  # gpt2_memory, a timing job, waits for it
    resources:
        **sized(runtime=10, uses_device=True, first=True),  # mem_mb: its measured peak (common.smk, sized)
    params:
        **job(
            "adbench.gpt2.resolve:record_model",
            packages=GPT2_PACKAGES,
            seed=GPT2["seed"],
            args={k: GPT2[k] for k in (*GPT2_LOCATE, "seed", "random_config", "tokenizer_vocab_size")},
        ),


use rule measure as gpt2_prompt with:
    input:
        rules.gpt2_model.output.tokenizer,  # the model record names it
        model=rules.gpt2_model.output.model,
    output:
        **id_outputs("G1", "values", "target"),
        **id_outputs("G2", "values", "states"),
        **id_outputs("G3", "values", "qkv"),
        **id_outputs("G4", "values", "direction"),
    priority: PRIORITY["long"]
    threads: GPT2["threads"]
    # mem_mb from config (gpt2.mem_mb: the reference run's peak RSS with common.smk's headroom); runtime ~3x its wall
    resources:
        **sized(uses_device=True, mem_mb=GPT2["mem_mb"]["prompt"], runtime=5),
    params:
        **job(
            "adbench.gpt2.prompt:measure_prompt",
            packages=GPT2_PACKAGES,
            seed=GPT2["seed"],
            uses_device=True,
            args=dict(
                prompt=GPT2["prompt"],
                target=GPT2["target"],
                g3_layers=GPT2["g3_layers"],
                g4_layer=GPT2["g4_layer"],
                g4_distance=GPT2["g4_distance"],
                device=config["device"],
            ),
        ),


use rule measure as gpt2_sequence with:
    input:
        rules.gpt2_model.output.tokenizer,  # the model record names it
        model=rules.gpt2_model.output.model,
        text=rules.corpus.output.corpus,
    output:
        **id_outputs("G5", "values", "surprise", "extremes", "summary"),
        **id_outputs("G7", "values", "clipping"),
        **id_outputs("G8", "values", "blocks"),
        **id_outputs("P9", "values", "summary", "autocast"),
    priority: PRIORITY["long"]
    threads: GPT2["threads"]
    resources:
        **sized(uses_device=True, mem_mb=GPT2["mem_mb"]["sequence"], runtime=11),
    params:
        **job(
            "adbench.gpt2.sequence:measure_sequence",
            packages=GPT2_PACKAGES,
            seed=GPT2["seed"],
            uses_device=True,
            args=dict(
                seq_len=GPT2["seq_len"],
                text_offset=GPT2["text_offset"],
                worst_fraction=GPT2["worst_fraction"],
                extremes=GPT2["extremes"],
                context_tokens=GPT2["context_tokens"],
                clip_max_norm=GPT2["clip_max_norm"],
                starved_ratio=GPT2["starved_ratio"],
                runaway_ratio=GPT2["runaway_ratio"],
                loss_scale=GPT2["loss_scale"],
                device=config["device"],
            ),
        ),


use rule measure as gpt2_memory with:
    input:
        rules.gpt2_model.output.tokenizer,  # the model record names it
        model=rules.gpt2_model.output.model,
        text=rules.corpus.output.corpus,
    output:
        **id_outputs(
            "G6", "values", "saved", "by_node", "summary", "timing", "timing_pairs", "attention", "architectures"
        ),
    priority: PRIORITY["timing"]
    # G6 times checkpointing against a plain step with gpt2.threads, like every GPT-2 job: a timing job,
    # alone on the machine (sized(timing=True)), so its threads are not shared with any other job
    threads: GPT2["threads"]
    resources:
        **sized(uses_device=True, mem_mb=GPT2["mem_mb"]["memory"], runtime=73, timing=True),
    params:
        **job(
            "adbench.gpt2.memory:measure_memory",
            packages=GPT2_PACKAGES,
            seed=GPT2["seed"],
            uses_device=True,
            args=dict(
                seq_len=GPT2["seq_len"],
                batch=GPT2["batch"],
                timing_batch=GPT2["timing_batch"],
                timing_rounds=GPT2["timing_rounds"],
                timing_warmup=GPT2["timing_warmup"],
                seed=config["timing"]["seed"],
                device=config["device"],
                timing_retries=config["timing"]["retries"],
            ),
        ),


use rule measure as gpt2_plots with:
    input:
        states=rules.gpt2_prompt.output.G2__states,
        surprise=rules.gpt2_sequence.output.G5__surprise,
        blocks=rules.gpt2_sequence.output.G8__blocks,
        model=rules.gpt2_model.output.model,
    output:
        states=report("results/G2/states.svg", caption="../captions/figure.rst", category="GPT-2", labels={"ID": "G2"}),
        surprise=report(
            "results/G5/surprise.svg", caption="../captions/figure.rst", category="GPT-2", labels={"ID": "G5"}
        ),
        blocks=report("results/G8/blocks.svg", caption="../captions/figure.rst", category="GPT-2", labels={"ID": "G8"}),
    params:
        **job("adbench.gpt2.plots:gpt2_figures", packages=("matplotlib",)),


# the weights every GPT-2 job loaded: claims with model gpt2 and the report's GPT-2 banner read it
model_record("gpt2", rules.gpt2_model.output.model)


register(
    "gpt2",
    rules.gpt2_model.output,
    rules.gpt2_prompt.output,
    rules.gpt2_sequence.output,
    rules.gpt2_memory.output,
    rules.gpt2_plots.output,
)
