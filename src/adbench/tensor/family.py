"""The tensor family, declared once: the rules, the claims registry, the config checks, the report and the
tests read this (adbench.families.declared)."""

from ..families import Family, numbered

FAMILY = Family(
    "tensor",
    "Tensor backward rules",
    numbered("T", 4),
    order=20,
    claims=("claims", "claims_bugs", "claims_kernels", "claims_reading"),
)
