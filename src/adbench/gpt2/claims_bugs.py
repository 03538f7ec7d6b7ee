"""The G family's measurement-level controls (claims/bugs.py): the real prompt and sequence probes, on a tiny
seeded random-init GPT-2 (GPT2Config at a few layers; seconds), with one realistic bug switched on, and the
relations that must then fail. Plain data; nothing registers on import.

The probes' other arguments are config.yaml's `gpt2` defaults; the tiny model stands in for GPT-2 small only in
size: every relation named here holds for any weights (its claim's scope is `any`, or it holds on random-init
weights too), so the bug is the only difference between the two tables.
"""

from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path


from ..claims.bugs import Bug, Tables, default_config
from . import prompt, sequence
from .resolve import record_model

TINY = dict(n_layer=3, n_embd=32, n_head=2, n_positions=64, vocab_size=300)  # GPT2Config overrides
SEQ_LEN = 48  # tokens of the sequence probe (within TINY's n_positions)
TEXT = ("The capital of France is Paris. Gradients flow backward through every block of the model, and the loss "
        "is the average surprise of the next token. ") * 30


def _gpt2() -> dict:
    """config.yaml's `gpt2` section (the source checkout's defaults)."""
    return default_config("gpt2")


@lru_cache(maxsize=1)
def _record() -> dict:
    """What gpt2_model writes for the tiny random model: its record, the trained tokenizer kept in a temp dir."""
    c = _gpt2()
    tokenizer = Path(tempfile.mkdtemp(prefix="adbench-gpt2-bugs-")) / "tokenizer.json"
    out = record_model("random", c["revision"], None, c["seed"], TINY, TINY["vocab_size"], TEXT, str(tokenizer))
    tokenizer.write_bytes(out["tokenizer"])
    return out["model"]


@lru_cache(maxsize=None)
def _prompt(bug: str | None) -> Tables:
    c = _gpt2()
    r = prompt.measure_prompt(_record(), c["prompt"], c["target"], c["g3_layers"], c["g4_layer"], c["g4_distance"],
                              bug=bug)
    return {"G3/qkv": r["G3"]["qkv"], "G4/direction": r["G4"]["direction"]}


@lru_cache(maxsize=None)
def _sequence(bug: str | None) -> Tables:
    c = _gpt2()
    r = sequence.measure_sequence(_record(), TEXT, SEQ_LEN, 0, c["worst_fraction"], c["extremes"],
                                  c["context_tokens"], c["clip_max_norm"], c["starved_ratio"], c["runaway_ratio"],
                                  c["loss_scale"], bug=bug)
    return {"G7/clipping": r["G7"]["clipping"]}


BUGS = [
    Bug(prompt.PROMPT_BUGS[0], "zero_grad(set_to_none=False) after backward, before the q/k/v split reads .grad",
        ("qkv_slices_nonzero",), _prompt),
    Bug(prompt.PROMPT_BUGS[1], "the direction check's signs swapped: 'against' steps with the gradient",
        ("negative_gradient_descends",), _prompt),
    Bug(sequence.SEQUENCE_BUGS[0], "clip_grad_norm_ applied to each parameter tensor on its own, not to the whole "
        "gradient", ("clipping_shortens_never_turns",), _sequence),
    Bug(sequence.SEQUENCE_BUGS[1], "the clip norm logged after clipping (the clipped total) instead of "
        "clip_grad_norm_'s return", ("clip_returns_unclipped_total",), _sequence),
]
