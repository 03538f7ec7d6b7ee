"""Measurement-level controls: a realistic bug injected into the measurement itself must flip a claim.

A boundary control (registry.Edge/Flip) moves one cell of a real table; it shows the relation *could* fail on
some table. A `Bug` shows more: the measurement function, run with a realistic bug switched on (a dropped factor,
`=` for `+=`, the wrong eps, a missing shift, a detached input, a wrong reduction), produces tables on which the
claims in `flips` no longer hold, while the same function without the bug produces tables on which they do.
That is what makes two computations independent in fact rather than by a declared label.

A family lists its bugs as plain data, `BUGS = [Bug(...), ...]`, in any claims module its declaration
(`<family>/family.py`) names; nothing registers on import. tests/test_claims_bugs.py runs every one.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Mapping

import pandas as pd
import yaml

from ..families import Family, declared

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


@lru_cache(maxsize=1)
def _default_config() -> dict:
    path = Path(__file__).resolve().parents[3] / "config.yaml"
    if not path.exists():
        raise FileNotFoundError(f"{path}: the measurement-level controls read the default config from the checkout")
    return yaml.safe_load(path.read_text())


def default_config(section: str) -> dict:
    """config.yaml's `section` as the source checkout ships it: a control judges the tables a default run writes,
    with the bug as the only difference."""
    return _default_config()[section]


def family_bugs(family: Family) -> list[Bug]:
    """Every `Bug` in the `BUGS` lists of the claims modules `family` declares."""
    out: list[Bug] = []
    for name in family.claims:
        found = getattr(importlib.import_module(f"adbench.{family.key}.{name}"), "BUGS", ())
        out += [b for b in found if isinstance(b, Bug)]
    return out


def all_bugs() -> list[Bug]:
    """Every declared family's bugs."""
    return [b for f in declared() for b in family_bugs(f)]


def with_tables(base: Tables, new: Tables) -> dict[str, pd.DataFrame]:
    """`base` with the tables `new` produced put in their place."""
    out = dict(base)
    out.update(new)
    return out
