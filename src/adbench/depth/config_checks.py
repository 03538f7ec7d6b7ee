"""The D family's cross-key configuration checks: reported depths and D2's cases lie on the measured grid."""

IN_RANGE = [
    ("depth.d1.chains.*.report_at", 1, "depth.d1.max_depth", int, "every reported depth must be measured"),
    ("depth.d2.cases.*.depth", 1, "depth.d2.max_depth", int, "a case must lie on the grid of depths"),
]

ONE_OF = [
    ("depth.d2.cases.*.scale", "depth.d2.scales",
     "D2 reads each case off the grid, which has only these scales; a missing one reads as NaN"),
]
