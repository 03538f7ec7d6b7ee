"""The precision family, declared once: the rules, the claims registry, the config checks, the report and the
tests read this (adbench.families.declared)."""

from ..families import Family, numbered

FAMILY = Family(
    "precision",
    "Precision: fp16, bf16 and loss scaling",
    numbered("P", 9),
    order=60,
    claims=("claims", "claims_bugs", "claims_torch", "claims_update"),
)
