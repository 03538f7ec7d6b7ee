"""The scalar family, declared once: the rules, the claims registry, the config checks, the report and the
tests read this (adbench.families.declared)."""

from ..families import SECTION, Family, numbered

FAMILY = Family(
    "scalar",
    "Scalar tape and numerical derivatives",
    numbered("S", 10),
    order=10,
    claims=("claims", "claims_bugs", "claims_checks", "claims_engines"),
    templates=(SECTION, "stepper.js"),
    timing_rules=("scalar_s9_calibrate", "scalar_s9_run"),
    volatile_files=("S9/calibration.csv", "S9/runs/*/samples.csv", "S9/samples.csv", "S9/per_process.csv",
                    "S9/values.csv"),
)
