"""Provenance: versions, code hashes and the per-job meta.json record."""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata as md
import importlib.util
import json
import os
import platform
import re
import sys
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from . import machine

PACKAGES = ("python", "torch", "transformers", "numpy", "pandas", "snakemake")
# Test hook: JSON object of {package: version} that replaces installed versions. It lets
# the test suite prove that a version bump re-runs exactly the affected jobs.
VERSION_OVERRIDE_ENV = "ADBENCH_VERSION_OVERRIDE"
# The one hashed lock (runtime + test) that set-up installs from; `make lock` writes it. A version-matrix
# entry's inner run names its own lock here instead (adbench.matrix.run), the one its environment holds.
LOCK_ENV = "ADBENCH_LOCK"
LOCK = Path(os.environ.get(LOCK_ENV) or Path(__file__).resolve().parents[2] / "envs" / "lock.txt")


def installed_version(package: str) -> str:
    """Installed version of `package` (or python) without importing it."""
    override = json.loads(os.environ.get(VERSION_OVERRIDE_ENV) or "{}")
    if package in override:
        return str(override[package])
    if package == "python":
        return platform.python_version()
    try:
        return md.version(package)
    except md.PackageNotFoundError:
        return "not installed"


def versions(packages: Iterable[str] = PACKAGES) -> dict[str, str]:
    """Map of package -> installed version, for rule params and meta.json."""
    return {p: installed_version(p) for p in packages}


def lock_sha256(path: Path = LOCK) -> str:
    """sha256 of the project's lock, envs/lock.txt, or of $ADBENCH_LOCK ("not found" outside a checkout).
    Set-up installs exactly it; `packages` in the same meta.json shows what the job's environment really held."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "not found"


# Each torch variant's whole lock (runtime + test) and the runtime part of it, which `make report` installs.
# $ADBENCH_LOCK (a matrix entry's runtime-only lock) is its own runtime part.
_ENVS = LOCK.parent if os.environ.get(LOCK_ENV) else Path(__file__).resolve().parents[2] / "envs"
VARIANT_LOCKS = ((LOCK, LOCK),) if os.environ.get(LOCK_ENV) else (
    (_ENVS / "lock.txt", _ENVS / "requirements.txt"), (_ENVS / "lock-pypi.txt", _ENVS / "requirements-pypi.txt"))
# In every environment set-up makes, yet never in a lock: the project itself and the venv's installer.
NOT_LOCKED = frozenset({"adbench", "pip"})
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;\s*([^\\]*?))?\s*\\?$")


def _norm(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(text: str) -> dict[str, tuple[str, str]]:
    """name -> (version, environment marker or "") of a `uv pip compile` lock; hash and comment lines skipped."""
    return {_norm(m[1]): (m[2], (m[3] or "").strip()) for m in map(_PIN.match, text.splitlines()) if m}


def marker_applies(marker: str) -> bool:
    """Whether a lock line's environment marker holds here (a universal lock gates e.g. nvidia-* to Linux)."""
    if not marker:
        return True
    try:
        from packaging.markers import Marker
    except ImportError:  # an environment of the user's own may lack packaging; pip vendors it
        try:
            from pip._vendor.packaging.markers import Marker
        except ImportError:
            return True  # cannot tell: count the package as wanted, never silently drop it
    return Marker(marker).evaluate()


def lock_differences(full: dict, runtime: dict, installed: dict[str, str]) -> list[str]:
    """Names where `installed` is not `runtime` plus any of `full`'s other packages, each at its locked version."""
    wanted = {n: v for n, (v, mk) in runtime.items() if marker_applies(mk)}
    differ = {n for n, v in wanted.items() if installed.get(n) != v}
    extra = set(installed) - wanted.keys() - NOT_LOCKED  # e.g. the test extra: allowed only at the lock's version
    differ |= {n for n in extra if full.get(n, (None,))[0] != installed[n]}
    return sorted(differ)


def lock_record(installed: dict[str, str] | None = None,
                locks: Iterable[tuple[Path, Path]] = VARIANT_LOCKS) -> dict[str, Any]:
    """meta.json's lock fields: the lock this environment holds and its sha256, or lock_sha256 None and
    `lock_differs` (the nearest lock, count and names of the packages that differ from it)."""
    installed = {_norm(n): v for n, v in (installed_packages() if installed is None else installed).items()}
    nearest: tuple[int, str, list[str]] | None = None
    for full_path, runtime_path in locks:
        try:
            full, runtime = lock_pins(full_path.read_text()), lock_pins(runtime_path.read_text())
        except OSError:
            continue
        differ = lock_differences(full, runtime, installed)
        if not differ:
            return {"lock": full_path.name, "lock_sha256": lock_sha256(full_path)}
        if nearest is None or len(differ) < nearest[0]:
            nearest = (len(differ), full_path.name, differ)
    if nearest is None:
        return {"lock": None, "lock_sha256": None, "lock_differs": {"lock": None, "count": None, "packages": []}}
    count, name, differ = nearest
    return {"lock": None, "lock_sha256": None, "lock_differs": {"lock": name, "count": count, "packages": differ}}


@lru_cache(maxsize=1)
def installed_packages() -> dict[str, str]:
    """Every distribution importable here, name -> version: the whole stack, not only PACKAGES."""
    found: dict[str, str] = {}
    for dist in md.distributions():  # first on sys.path wins, as for an import
        name = dist.metadata["Name"]
        if name:
            found.setdefault(re.sub(r"[-_.]+", "-", name).lower(), dist.version)  # PEP 503 name
    return dict(sorted(found.items()))


def _module_file(name: str) -> Path | None:
    """Source file of module `name`, found on disk without importing it (or its parents)."""
    top, *rest = name.split(".")
    spec = importlib.util.find_spec(top)  # a top-level lookup executes nothing
    if spec is None or not spec.submodule_search_locations:
        return Path(spec.origin) if spec and spec.origin and spec.origin.endswith(".py") and not rest else None
    for base in map(Path, spec.submodule_search_locations):
        stem = base.joinpath(*rest)
        for path in (stem / "__init__.py", stem.with_suffix(".py")):
            if path.is_file():
                return path
    return None  # `from pkg.mod import attr` names an attribute, not a module


def _local_imports(name: str, path: Path, root: str) -> set[str]:
    """Modules of package `root` imported by the module `name` stored at `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in found if m == root or m.startswith(root + ".")}


def module_closure(modules: Iterable[str]) -> dict[str, Path]:
    """The given modules plus every module of the same package they import, transitively."""
    todo = list(modules)
    seen: dict[str, Path] = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            continue
        seen[name] = path
        todo.extend(_local_imports(name, path, name.split(".")[0]) - seen.keys())
    return dict(sorted(seen.items()))


def code_hash(*modules: str) -> str:
    """sha256 over the source of `modules` and their intra-package imports."""
    h = hashlib.sha256()
    for name, path in module_closure(modules).items():
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def config_hash(obj: Any) -> str:
    """Stable short hash of a JSON-serialisable configuration fragment."""
    blob = json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def cpu_model() -> str:
    """Human-readable CPU model name, best effort across Linux and macOS (adbench.machine)."""
    return machine.cpu_model()


def slurm_context(env: dict | None = None) -> dict[str, str]:
    """SLURM job id and node when this process runs inside a SLURM job, else {}."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return {}
    # the jobstep plugin strips allocation variables before a grouped job: fall back to the host
    node = env.get("SLURMD_NODENAME") or env.get("SLURM_JOB_NODELIST") or platform.node().split(".")[0]
    return {"slurm_job_id": job, "slurm_node": node}


def meta_record(*, rule: str, wildcards: dict, args: Any, seed: Any, device: str,
                threads: int | None, wall_s: float, extra: dict | None = None) -> dict:
    """The meta.json payload every job writes beside its CSVs."""
    return {
        "rule": rule,
        "wildcards": wildcards,
        "versions": versions(),
        **lock_record(),
        "packages": dict(installed_packages()),  # a copy: the cached one is shared
        "device": device,
        "torch_threads": threads,
        "seed": seed,
        "config_hash": config_hash(args),
        "wall_time_s": round(wall_s, 6),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        # CPU model, vector extensions, logical CPUs, memory, GPU: "what changed" tells machines apart by it
        "machine": machine.identity(),
        "platform": platform.platform(),
        "python_executable": sys.executable,
        "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **slurm_context(),
        **(extra or {}),
    }
