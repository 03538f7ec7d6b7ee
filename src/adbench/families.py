"""A measurement family as its rules file declares it (key, title, catalog IDs, report position)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Family:
    key: str
    title: str
    ids: tuple[str, ...]
    order: int  # position in the report (smaller first)

    def as_dict(self) -> dict:
        """Plain data for rule params (a change re-renders the report)."""
        return {**asdict(self), "ids": list(self.ids)}


def numbered(prefix: str, n: int) -> tuple[str, ...]:
    """numbered('X', 3) -> ('X1', 'X2', 'X3')."""
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


def from_dicts(rows: list[dict]) -> list[Family]:
    """Families from render_report's params, in report order."""
    return sorted((Family(r["key"], r["title"], tuple(r["ids"]), r["order"]) for r in rows), key=lambda f: f.order)
