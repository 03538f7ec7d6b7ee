"""Matrix entries: the project's pins with an entry's overrides, and a stable name for each."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path


def canonical(name: str) -> str:
    """PEP 503 normalised package name ('PyYAML' -> 'pyyaml')."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_pins(pyproject: Path) -> dict[str, str]:
    """{package: version} from pyproject.toml's `name==version` dependencies."""
    deps = tomllib.loads(Path(pyproject).read_text())["project"]["dependencies"]
    pins = {}
    for dep in deps:
        name, sep, version = dep.partition("==")
        if not sep:
            raise ValueError(f"pyproject.toml dependency {dep!r} is not pinned with ==")
        pins[canonical(name.strip())] = version.strip()
    return pins


def entry_name(overrides: dict) -> str:
    """'torch2.14.1_transformers5.24.0': the entry's folder name under .matrix/."""
    raw = "_".join(f"{canonical(k)}{v}" for k, v in overrides.items())
    return re.sub(r"[^A-Za-z0-9._-]+", "-", raw)


def entries(matrix: list[dict]) -> dict[str, dict]:
    """name -> overrides, in config order; duplicate entries are a config error."""
    out: dict[str, dict] = {}
    for i, over in enumerate(matrix):
        if not over:
            raise ValueError(f"config key 'matrix' entry {i} is empty; give at least one {{package: version}}")
        name = entry_name(over)
        if name in out:
            raise ValueError(f"config key 'matrix' lists {over} twice (entries {list(out).index(name)} and {i})")
        out[name] = {canonical(k): str(v) for k, v in over.items()}
    return out


def resolved(pins: dict[str, str], overrides: dict[str, str]) -> dict[str, str]:
    """The pins an entry's environment must hold: the project's, with the entry's versions replacing them."""
    return {**pins, **{canonical(k): v for k, v in overrides.items()}}

