"""Which configured values a documented figure (or a claim) was measured under, and whether this run used them.

A row of the documented table or the claims table may declare, in its `config` column, the settings its value
depends on, as the documents had them: `family.step=0.1; family.inputs=[1, 2]` (dotted keys of config.yaml,
values in YAML flow syntax). When the run's configuration differs, the row is not judged, and says which key
differs and how: a user who changes a documented parameter gets a complete report, not a MISMATCH.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import yaml


def parse(spec: str) -> list[tuple[str, Any]]:
    """'a.b=1; c=[1, 2]' -> [('a.b', 1), ('c', [1, 2])]; ValueError names a malformed item."""
    out = []
    for item in (s.strip() for s in str(spec or "").split(";")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"config dependency {item!r} must read key=value")
        out.append((key.strip(), yaml.safe_load(value.strip())))
    return out


def lookup(settings: Mapping[str, Any], dotted: str) -> Any:
    """settings['a']['b'][0]['c'] for 'a.b[0].c'; KeyError names the first missing part."""
    node: Any = settings
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", dotted):
        if part.startswith("["):
            i = int(part[1:-1])
            if not isinstance(node, (list, tuple)) or i >= len(node):
                raise KeyError(f"no configuration key {dotted!r} (no item {i})")
            node = node[i]
        elif isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            raise KeyError(f"no configuration key {dotted!r} (missing {part!r})")
    return node


def _norm(v: Any) -> Any:
    """Numbers compare as numbers whichever way YAML read them ('1e-5' is text to YAML 1.1, 1e-05 to Python)."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v.strip()
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _norm(x) for k, x in v.items()}
    return v


def differences(spec: str, settings: Mapping[str, Any] | None) -> list[str]:
    """'family.step = 0.2; documents 0.1' for each declared key whose run value differs (none without
    settings: a caller that does not know the run's configuration judges as before)."""
    if settings is None:
        return []
    out = []
    for key, documented in parse(spec):
        try:
            value = lookup(settings, key)
        except KeyError:
            out.append(f"{key} is not configured; documents {documented!r}")
            continue
        if _norm(value) != _norm(documented):
            out.append(f"{key} = {value!r}; documents {documented!r}")
    return out


def not_judged_reason(spec: str, settings: Mapping[str, Any] | None) -> str:
    """The not-judged reason for a row measured under other settings than the documents', or ''."""
    diff = differences(spec, settings)
    return f"configuration differs from the documents ({'; '.join(diff)})" if diff else ""
