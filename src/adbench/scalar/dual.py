"""Forward-mode dual numbers (value, tangent) with an operation counter (S8)."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass


@dataclass
class OpCounter:
    ops: int = 0


_COUNTER: list[OpCounter] = []


@contextlib.contextmanager
def count_ops():
    """Count graph operations evaluated on Duals inside the block."""
    c = OpCounter()
    _COUNTER.append(c)
    try:
        yield c
    finally:
        _COUNTER.pop()


def _tick() -> None:
    if _COUNTER:
        _COUNTER[-1].ops += 1


@dataclass(frozen=True)
class Dual:
    """A value and its derivative along one seeded input direction."""

    value: float
    tangent: float

    def __add__(self, other: "Dual") -> "Dual":
        _tick()
        return Dual(self.value + other.value, self.tangent + other.tangent)

    def __mul__(self, other: "Dual") -> "Dual":
        _tick()  # product rule
        return Dual(self.value * other.value, self.tangent * other.value + self.value * other.tangent)

    def tanh(self) -> "Dual":
        _tick()
        t = math.tanh(self.value)
        return Dual(t, (1 - t * t) * self.tangent)
