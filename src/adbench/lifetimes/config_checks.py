"""The L family's cross-key configuration checks: checkpoint segments, the microbatch split, L7's sweep."""

IN_RANGE = [
    ("lifetimes.checkpoint.segments", 1, "lifetimes.checkpoint.blocks", int,
     "checkpoint_sequential needs at least one block per segment"),
]

# (key listing the parts, key holding the whole, why). L2's nanoGPT simulation needs no entry: it draws
# exactly nanogpt_steps x nanogpt_micro examples, so its microbatches partition its batch by construction.
PARTITIONS = [
    ("lifetimes.split", "lifetimes.accumulation_examples",
     "L2 cuts the full batch into these microbatches, weighted by size to match the full-batch gradient"),
]

MONOTONIC = [
    ("lifetimes.shapes.sweep_seq", "monotonic", "L7 draws the sweep as one line in list order"),
]
