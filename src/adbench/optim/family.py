"""The optim family, declared once: the rules, the claims registry, the config checks, the report and the
tests read this (adbench.families.declared)."""

from ..families import Family, numbered

FAMILY = Family(
    "optim",
    "Optimization",
    numbered("O", 3),
    order=40,
    claims=("claims", "claims_bugs", "claims_memory"),
)
