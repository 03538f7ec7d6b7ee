"""Measurement-level controls: a realistic bug injected into the measurement itself must flip a claim.

A boundary control (registry.Edge/Flip) moves one cell of a real table; it shows the relation *could* fail on
some table. A `Bug` shows more: the measurement function, run with a realistic bug switched on (a dropped factor,
`=` for `+=`, the wrong eps, a missing shift, a detached input, a wrong reduction), produces tables on which the
claims in `flips` no longer hold, while the same function without the bug produces tables on which they do.
That is what makes two computations independent in fact rather than by a declared label.

A family lists its bugs as plain data, `BUGS = [Bug(...), ...]`, in any of its claims modules; nothing registers
on import. tests/test_claims_bugs.py runs every one.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass, field
from typing import Callable, Mapping

import pandas as pd

Tables = Mapping[str, pd.DataFrame]


@dataclass(frozen=True)
class Bug:
    """`measure(switch)` runs the real measurement with `switch` (None: the correct code; `name`: the bug) and
    returns the tables it writes, keyed like results/ ({"X1/table": DataFrame}); the relations named in
    `flips` must hold on the correct tables and fail on the buggy ones."""
    name: str
    what: str
    flips: tuple[str, ...]
    measure: Callable[[str | None], Tables] = field(repr=False)


def family_bugs(package: str) -> list[Bug]:
    """Every `Bug` in the `BUGS` lists of the modules of `adbench.<package>` whose name starts with "claims" (a
    family's own `BUGS` of another kind, e.g. the names of the bug runs it measures, is not a control)."""
    pkg = importlib.import_module(f"adbench.{package}")
    out: list[Bug] = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("claims"):
            listed = getattr(importlib.import_module(f"adbench.{package}.{info.name}"), "BUGS", ())
            out += [b for b in listed if isinstance(b, Bug)]
    return out


def all_bugs() -> list[Bug]:
    """Every family's bugs (every subpackage of adbench with a claims module)."""
    import adbench

    out: list[Bug] = []
    for info in pkgutil.iter_modules(adbench.__path__):
        if info.ispkg and info.name != "claims" and importlib.util.find_spec(f"adbench.{info.name}.claims"):
            out += family_bugs(info.name)
    return out


def with_tables(base: Tables, new: Tables) -> dict[str, pd.DataFrame]:
    """`base` with the tables `new` produced put in their place."""
    out = dict(base)
    out.update(new)
    return out
