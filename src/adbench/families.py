"""A measurement family, declared once in its package as `FAMILY = Family(...)` (src/adbench/<key>/family.py).

The rules (workflow/rules/common.smk), the claims registry, the config checks, the renderer and the tests all
read the declarations through `declared()`; none keeps a list of its own. Reading them imports only the family
modules (pure data: no torch, no sibling module), so the rules read them at parse time; no measurement module
imports its family's declaration, so editing one re-runs no measurement (the code hash does not follow it).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass, fields
from functools import lru_cache
SECTION = "section.html.j2"  # a family's report section, in its folder


@dataclass(frozen=True)
class Family:
    key: str  # its folder src/adbench/<key>/ and its rules file workflow/rules/<key>.smk
    title: str
    ids: tuple[str, ...]
    order: int  # position in the report (smaller first)
    # modules of the package (names relative to it) whose @relation functions test its claims
    claims: tuple[str, ...] = ("claims",)
    # files of its folder the report is rendered from; the first is its report section
    templates: tuple[str, ...] = (SECTION,)
    # rules whose jobs time code (sized(timing=True)): alone on the machine, a SLURM node of their own
    timing_rules: tuple[str, ...] = ()
    # files under results/ that hold stopwatch output (globs), and *_volatile columns per file glob
    volatile_files: tuple[str, ...] = ()
    volatile_columns: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def as_dict(self) -> dict:
        """What the report's jobs read, as plain rule params (a change re-renders the report)."""
        return {"key": self.key, "title": self.title, "ids": list(self.ids), "order": self.order}

    @property
    def rules(self) -> str:
        """Its rules file, relative to the checkout."""
        return f"workflow/rules/{self.key}.smk"

    @property
    def config_section(self) -> str:
        """Its top-level key in config.yaml and the schema."""
        return self.key

    @property
    def letter(self) -> str:
        """The catalog letter of its IDs ('X' for X1, X2, ...)."""
        return self.ids[0].rstrip("0123456789")

    def module(self, name: str) -> str:
        """The dotted name of one of its modules."""
        return f"adbench.{self.key}.{name}"


def numbered(prefix: str, n: int) -> tuple[str, ...]:
    """numbered('X', 3) -> ('X1', 'X2', 'X3')."""
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


def check(fam: Family, package: str) -> Family:
    """A declaration whose key is not its folder would split the family: refuse it, naming the fix."""
    if not isinstance(fam, Family):
        raise TypeError(f"adbench.{package}.family.FAMILY must be a Family, got {type(fam).__name__}")
    if fam.key != package:
        raise ValueError(f"adbench.{package}.family.FAMILY has key {fam.key!r}: set key={package!r} (its folder)")
    if not fam.ids or not fam.templates:
        raise ValueError(f"family {fam.key!r}: declare at least one ID and its report section template")
    return fam


@lru_cache(maxsize=None)
def _declared() -> tuple[Family, ...]:
    import adbench

    found = []
    for info in pkgutil.iter_modules(adbench.__path__):
        name = f"adbench.{info.name}.family"
        if info.ispkg and importlib.util.find_spec(name) is not None:
            found.append(check(getattr(importlib.import_module(name), "FAMILY", None), info.name))
    orders = [f.order for f in found]
    if len(set(orders)) != len(orders):
        raise ValueError(f"two families share a report position: {sorted(orders)}; give each its own `order`")
    return tuple(sorted(found, key=lambda f: f.order))


def declared() -> list[Family]:
    """Every family package's declaration, in report order."""
    return list(_declared())


def by_key() -> dict[str, Family]:
    """key -> declaration."""
    return {f.key: f for f in _declared()}


def id_order() -> str:
    """The catalog letters in report order ("STLODPGC" today): documented.csv and claims.csv sort by it."""
    return "".join(f.letter for f in _declared())


def from_dicts(rows: list[dict]) -> list[Family]:
    """Families from render_report's params, in report order."""
    names = {f.name for f in fields(Family)}
    return sorted((Family(**{k: tuple(v) if k == "ids" else v for k, v in r.items() if k in names}) for r in rows),
                  key=lambda f: f.order)
