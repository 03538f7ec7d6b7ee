"""A scalar reverse-mode tape small enough to read in one sitting.

Each op computes its forward value and leaves a closure that knows its local
derivative. Three deliberate bugs (S4) are switches of this same code, not copies:
`Tape(overwrite=True)` makes closures assign instead of accumulate,
`backward(order="forward")` runs closures in build order instead of reversed, and
`Tape(dedup=False)` makes the sort forget its visited set (a node enters once per path).
The tape also counts graph nodes and executed closures (S8, S10). Division is
micrograd's decomposition `a * b**-1`, so it adds no primitive of its own.
"""

from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass, field
from typing import Callable, Iterable


@dataclass
class Tape:
    """Engine settings and counters; activate with `with Tape(...) as t:`."""

    overwrite: bool = False          # S4 bug (a): `=` instead of `+=`
    dedup: bool = True               # False: S4 bug (c), the sort keeps no visited set
    nodes: int = 0                   # Values created while active (leaves and constants too)
    ops: int = 0                     # Values created by an operation
    closures_run: int = 0            # backward closures executed
    _token: contextvars.Token | None = field(default=None, repr=False)

    def __enter__(self) -> "Tape":
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.reset(self._token)


_ACTIVE: contextvars.ContextVar[Tape] = contextvars.ContextVar("tape", default=Tape())


def _give(node: "Value", contribution: float) -> None:
    """Deliver a gradient contribution: accumulate (correct) or overwrite (bug)."""
    if _ACTIVE.get().overwrite:
        node.grad = contribution
    else:
        node.grad += contribution


class Value:
    """A scalar that remembers the operation and inputs that produced it."""

    __slots__ = ("data", "grad", "parents", "op", "_backward")

    def __init__(self, data: float, parents: tuple["Value", ...] = (), op: str = ""):
        self.data = data
        self.grad = 0.0
        self.parents = parents
        self.op = op
        self._backward: Callable[[], None] | None = None
        tape = _ACTIVE.get()
        tape.nodes += 1
        tape.ops += bool(op)

    def __repr__(self) -> str:
        return f"Value(data={self.data!r}, grad={self.grad!r})"

    @staticmethod
    def lift(x: "Value | float") -> "Value":
        """Wrap a plain number as a constant node, as micrograd does."""
        return x if isinstance(x, Value) else Value(x)

    def __add__(self, other: "Value | float") -> "Value":
        other = Value.lift(other)
        out = Value(self.data + other.data, (self, other), "+")

        def backward() -> None:
            _give(self, out.grad)    # d(out)/d(self) = 1
            _give(other, out.grad)
        out._backward = backward
        return out

    def __mul__(self, other: "Value | float") -> "Value":
        other = Value.lift(other)
        out = Value(self.data * other.data, (self, other), "*")

        def backward() -> None:
            _give(self, other.data * out.grad)
            _give(other, self.data * out.grad)
        out._backward = backward
        return out

    def __pow__(self, k: float) -> "Value":
        out = Value(self.data ** k, (self,), f"**{k}")

        def backward() -> None:
            _give(self, k * self.data ** (k - 1) * out.grad)
        out._backward = backward
        return out

    def tanh(self) -> "Value":
        t = math.tanh(self.data)
        out = Value(t, (self,), "tanh")

        def backward() -> None:
            _give(self, (1 - t * t) * out.grad)
        out._backward = backward
        return out

    def relu(self) -> "Value":
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def backward() -> None:
            _give(self, (out.data > 0) * out.grad)
        out._backward = backward
        return out

    def exp(self) -> "Value":
        e = math.exp(self.data)  # OverflowError above ~709.78, as math.exp
        out = Value(e, (self,), "exp")

        def backward() -> None:
            _give(self, e * out.grad)  # d exp(x)/dx = exp(x)
        out._backward = backward
        return out

    def log(self) -> "Value":
        if self.data <= 0:
            raise ValueError(f"log of a non-positive value: {self.data!r}")
        out = Value(math.log(self.data), (self,), "log")

        def backward() -> None:
            _give(self, out.grad / self.data)  # d log(x)/dx = 1/x
        out._backward = backward
        return out

    # micrograd's derived ops: each builds the same primitive nodes it would.
    def __neg__(self) -> "Value":
        return self * -1

    def __sub__(self, other: "Value | float") -> "Value":
        return self + (-other)

    def __radd__(self, other: float) -> "Value":
        return self + other

    def __rmul__(self, other: float) -> "Value":
        return self * other

    def __rsub__(self, other: float) -> "Value":
        return other + (-self)

    def __truediv__(self, other: "Value | float") -> "Value":
        return self * other ** -1  # a / b = a * b**-1: a pow node (or constant) and a mul

    def __rtruediv__(self, other: float) -> "Value":
        return other * self ** -1

    def backward(self, order: str = "reverse") -> None:
        """Seed dL/dL = 1 and run every closure; order='forward' is the S4 bug (b)."""
        tape = _ACTIVE.get()
        topo = topological(self, dedup=tape.dedup)
        self.grad = 1.0
        for node in (reversed(topo) if order == "reverse" else topo):
            if node._backward is not None:
                node._backward()
                tape.closures_run += 1


def topological(root: Value, dedup: bool = True) -> list[Value]:
    """Depth-first order: every node after the nodes it consumed; dedup=False lists a node once per path."""
    order: list[Value] = []
    seen: set[int] = set()
    stack: list[tuple[Value, bool]] = [(root, False)]
    while stack:  # iterative, so 10^4-deep chains do not hit the recursion limit
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if dedup and id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((p, False) for p in reversed(node.parents) if not dedup or id(p) not in seen)
    return order


def graph_size(root: Value) -> int:
    """Number of distinct nodes reachable from `root`."""
    return len(topological(root))
