# Shared text corpus (C1 training/evaluation and the GPT-2 family): full text, a
# deterministic split (the last corpus.heldout_fraction held out), sha256 and source.

# The user's corpus file is an input (editing it re-runs the rule); the default has none.
CORPUS_SOURCE = [config["corpus"]["path"]] if config["corpus"]["path"] else []


rule corpus:
    input:
        CORPUS_SOURCE,
    output:
        corpus="results/corpus/corpus.txt",
        train="results/corpus/train.txt",
        heldout="results/corpus/heldout.txt",
        stats="results/corpus/stats.csv",
        meta="results/corpus/meta.json",
    params:
        args=dict(path=config["corpus"]["path"], heldout_fraction=config["corpus"]["heldout_fraction"]),
        prov=prov("adbench.corpus", packages=()),
    priority: 10  # long chains to the report: start them first
    log:
        "logs/corpus.log",
    benchmark:
        "benchmarks/corpus.tsv"
    conda:
        ENV
    script:
        "../../scripts/corpus.py"


register("charlm", "results/corpus/stats.csv", "results/corpus/meta.json")
