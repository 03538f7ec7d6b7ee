"""Per-entry locks: the override file uv resolves with, the lock's packages and dependency graph, digests.

A lock here is `uv pip compile --generate-hashes` output (the format of envs/requirements.txt):

    matplotlib==3.10.9 \\
        --hash=sha256:8e43...
        # via
        #   --override .matrix/envs/matplotlib3.10.9.overrides.txt
        #   adbench (pyproject.toml)
    kiwisolver==1.5.0 \\
        --hash=sha256:...
        # via matplotlib
"""

from __future__ import annotations

import hashlib
import json
import re

from .entries import canonical

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")
# `# via x` (one parent) or, under `# via`, one `#   x` line per parent; `-r f`, `-c f`, `--override f`
# and `adbench (pyproject.toml)` name where a requirement came from, not a package that requires it.
_VIA = re.compile(r"^\s+#\s+(?:via\s+)?(\S.*)$")


def override_text(overrides: dict[str, str]) -> str:
    """The file `uv pip compile --override` reads: 'matplotlib==3.10.9\\n', one exact pin per line."""
    return "".join(f"{canonical(k)}=={v}\n" for k, v in overrides.items())


def versions(lock: str) -> dict[str, str]:
    """{package: version} of a lock's `name==version` lines (PEP 503 names, hashes and comments skipped)."""
    return {canonical(m.group(1)): m.group(2) for m in map(_PIN.match, lock.splitlines()) if m}


def parents(lock: str) -> dict[str, set[str]]:
    """{package: the packages that require it}, from the lock's `# via` annotations."""
    found: dict[str, set[str]] = {}
    current = None
    for line in lock.splitlines():
        pin = _PIN.match(line)
        if pin:
            current = canonical(pin.group(1))
            found[current] = set()
            continue
        via = _VIA.match(line)
        if current and via:
            who = via.group(1).strip()
            if who and who != "via" and not who.startswith("-") and "(" not in who:
                found[current].add(canonical(who))
    return found


def changed(old: dict[str, str], new: dict[str, str]) -> dict[str, tuple[str, str]]:
    """{package: (old version, new version)} for every package added, removed or moved ('' = absent)."""
    return {p: (old.get(p, ""), new.get(p, "")) for p in sorted(old.keys() | new.keys()) if old.get(p) != new.get(p)}


def dependencies(lock: str, roots: set[str]) -> set[str]:
    """`roots` and everything they require, directly or not, according to the lock's `# via` graph."""
    children: dict[str, set[str]] = {}
    for child, ps in parents(lock).items():
        for p in ps:
            children.setdefault(p, set()).add(child)
    seen, todo = set(), [canonical(r) for r in roots]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(children.get(p, ()))
    return seen


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def inputs_digest(runtime_lock: bytes, pyproject: bytes, overrides: dict[str, str], python: str) -> str:
    """What a per-entry lock is resolved from: the runtime lock (preferred versions), pyproject.toml
    (the direct pins), the overrides and the interpreter version. Unchanged -> the lock is kept."""
    blob = json.dumps({"lock": sha256(runtime_lock), "pyproject": sha256(pyproject),
                       "overrides": {canonical(k): v for k, v in sorted(overrides.items())}, "python": python},
                      sort_keys=True).encode()
    return sha256(blob)[:16]


def env_digest(lock_sha256: str, python: str) -> str:
    """What an entry's environment is built from: exactly its lock, on this interpreter version."""
    return sha256(json.dumps({"lock": lock_sha256, "python": python}, sort_keys=True).encode())[:16]
