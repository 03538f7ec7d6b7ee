"""The C1 family's cross-key configuration checks: steps it reads, its heads, and the corpus it trains on."""

from typing import Iterator

from ..config import clash, corpus_text

IN_RANGE = [
    ("charlm.early_step", 1, "charlm.train.steps", int, "a step the run takes"),
    ("charlm.final_window", 1, "charlm.train.steps", int, "the final loss averages the last final_window steps"),
    ("charlm.train.log_every", 1, "charlm.train.steps", int,
     "an interval within the run; any larger value logs only step 1 and the last step"),
]


def checks(cfg: dict) -> Iterator[str]:
    """Each head gets n_embd / n_head channels; training draws windows of block_size + 1 characters from the
    corpus's training split."""
    t = cfg["charlm"]["train"]
    if t["n_embd"] % t["n_head"]:
        yield clash([("charlm.train.n_embd", t["n_embd"]), ("charlm.train.n_head", t["n_head"])],
                    "n_embd must be a multiple of n_head (each head gets n_embd / n_head channels)")
    text = corpus_text(cfg)
    if isinstance(text, tuple):  # (train, whole): the corpus as the corpus rule reads it
        train, _ = text
        if len(train) < t["block_size"] + 2:
            yield clash([("charlm.train.block_size", t["block_size"]), ("corpus.path", cfg["corpus"]["path"])],
                        f"the training split has {len(train)} characters; a window needs block_size + 2")
