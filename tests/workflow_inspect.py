"""The parsed workflow, for tests: the families its rules files declare, and any look at its rules or globals.

Test-only (it reads Snakemake's WorkflowApi internals), so it lives beside the tests, not in the package."""

from __future__ import annotations

import sys
from pathlib import Path

from adbench.families import Family, from_dicts


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
