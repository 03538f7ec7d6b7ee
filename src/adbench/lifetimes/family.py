"""The lifetimes family, declared once: the rules, the claims registry, the config checks, the report and the
tests read this (adbench.families.declared)."""

from ..families import Family, numbered

FAMILY = Family(
    "lifetimes",
    "Graph lifetimes, accumulation and memory",
    numbered("L", 7),
    order=30,
    claims=("claims", "claims_conditions", "claims_memory", "claims_reductions", "claims_saved", "claims_shapes"),
    timing_rules=("lifetimes_l6_calibrate", "lifetimes_l6_run"),
    volatile_files=("L6/timing/calibration.csv", "L6/timing/runs/*/samples.csv", "L6/timing/samples.csv",
                    "L6/timing/per_process.csv", "L6/timing/values.csv"),
)
