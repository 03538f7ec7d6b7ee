"""G6's two architectures by name, torch-free (the history's timing statistics read it too).

The documents' figures describe a nanoGPT-style model: the documented G6 quantity names carry its rows,
transformers' figures the same names with a suffix; each architecture's timing candidates carry a prefix
(timing.csv: plain, checkpoint, nanogpt_plain, nanogpt_checkpoint)."""

from __future__ import annotations

DOC_ARCH = "nanogpt"  # the architecture the documented rows are judged on
SUFFIX = {"nanogpt": "", "transformers": "_transformers"}  # quantity name suffix per architecture
CANDIDATE = {"transformers": "", "nanogpt": "nanogpt_"}  # timing candidate prefix per architecture


def quantity_arch(quantity: str) -> str:
    """The architecture a G6 quantity name belongs to ('..._transformers' -> transformers, else the documents')."""
    return next((a for a, s in SUFFIX.items() if s and quantity.endswith(s)), DOC_ARCH)


def arch_candidates(quantity: str, candidates: list[str]) -> list[str]:
    """Of a samples file's candidates, the ones the quantity's architecture timed (sorted)."""
    mine = CANDIDATE[quantity_arch(quantity)]
    others = [p for p in CANDIDATE.values() if p and p != mine]
    return sorted(c for c in candidates if c.startswith(mine) and not any(c.startswith(o) for o in others))
