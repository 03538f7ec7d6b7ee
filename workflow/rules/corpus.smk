# Shared text corpus, read by the families that train or evaluate on text (no family of its own: one of them
# registers its outputs): full text, a deterministic split (the last corpus.heldout_fraction held out), sha256, source.

# The user's corpus file is an input (editing it re-runs the rule); the default has none.
CORPUS_SOURCE = [config["corpus"]["path"]] if config["corpus"]["path"] else []


use rule measure as corpus with:
    input:
        CORPUS_SOURCE,
    output:
        corpus="results/corpus/corpus.txt",
        train="results/corpus/train.txt",
        heldout="results/corpus/heldout.txt",
        stats="results/corpus/stats.csv",
        meta="results/corpus/meta.json",
    priority: PRIORITY["first"]  # a timing job waits for it: alone, before anything (common.smk)
    resources:
        **sized(first=True),
    params:
        **job(
            "adbench.corpus:build_corpus",
            args=dict(path=config["corpus"]["path"], heldout_fraction=config["corpus"]["heldout_fraction"]),
            packages=(),
        ),
