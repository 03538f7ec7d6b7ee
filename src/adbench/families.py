"""A measurement family as its rules file declares it (key, title, catalog IDs, report position)."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from pathlib import Path


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


def from_workflow(root: str | Path, configfiles: tuple[str, ...] = ("config.yaml",)) -> list[Family]:
    """Parse the Snakefile under `root` (no jobs run) and return the families its rules files declare."""
    return inspect_workflow(root, configfiles, lambda wf: from_dicts(wf.globals["family_params"]()))


def inspect_workflow(root: str | Path, configfiles: tuple[str, ...], look):
    """`look(workflow)` on the parsed Snakefile under `root` (no jobs run): its rules and globals."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    root = Path(root).resolve()
    saved_path = list(sys.path)  # the Snakefile puts its own src/ first; keep the caller's imports as they were
    try:
        with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
            wf = api.workflow(resource_settings=ResourceSettings(),
                              config_settings=ConfigSettings(configfiles=[root / c for c in configfiles]),
                              snakefile=root / "Snakefile", workdir=root)
            # WorkflowApi parses the Snakefile on first access of its workflow; the registry is a global there.
            return look(wf._workflow)
    finally:
        sys.path[:] = saved_path
