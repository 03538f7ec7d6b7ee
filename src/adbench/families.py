"""The measurement families: report order, titles and catalog IDs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    key: str
    title: str
    ids: tuple[str, ...]


def _ids(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


FAMILIES: tuple[Family, ...] = (
    Family("scalar", "Scalar tape and numerical derivatives", _ids("S", 10)),
    Family("tensor", "Tensor backward rules", _ids("T", 4)),
    Family("lifetimes", "Graph lifetimes, accumulation and memory", _ids("L", 7)),
    Family("optim", "Optimization", _ids("O", 3)),
    Family("depth", "Depth: vanishing and exploding chains", _ids("D", 2)),
    Family("precision", "Precision: fp16, bf16 and loss scaling", _ids("P", 9)),
    Family("gpt2", "GPT-2 probes", _ids("G", 8)),
    Family("charlm", "A character model trained five ways", ("C1",)),
)


def family_of(measurement_id: str) -> Family:
    """The family an ID such as 'S5' belongs to."""
    for fam in FAMILIES:
        if measurement_id in fam.ids:
            return fam
    raise KeyError(f"unknown measurement id {measurement_id!r}")
