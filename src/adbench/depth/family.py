"""The depth family, declared once: the rules, the claims registry, the config checks, the report and the
tests read this (adbench.families.declared)."""

from ..families import SECTION, Family, numbered

FAMILY = Family(
    "depth",
    "Depth: vanishing and exploding chains",
    numbered("D", 2),
    order=50,
    claims=("claims", "claims_bugs"),
    templates=(SECTION, "explorer.js.j2"),
)
