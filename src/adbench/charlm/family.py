"""The charlm family, declared once: the rules, the claims registry, the config checks, the report and the
tests read this (adbench.families.declared)."""

from ..families import Family

FAMILY = Family(
    "charlm",
    "A character model trained five ways",
    ("C1",),
    order=80,
    claims=("claims", "claims_bugs", "claims_grads", "claims_runs"),
    volatile_columns=(("C1/train/*/run.csv", ("train_seconds_volatile",)),
                      ("C1/summary.csv", ("train_seconds_volatile",))),
)
