"""The gpt2 family, declared once: the rules, the claims registry, the config checks, the report and the
tests read this (adbench.families.declared)."""

from ..families import SECTION, Family, numbered

FAMILY = Family(
    "gpt2",
    "GPT-2 probes",
    numbered("G", 8),
    order=70,
    claims=("claims", "claims_bugs", "claims_memory", "claims_sequence"),
    templates=(SECTION, "banner.html.j2"),
    timing_rules=("gpt2_memory",),  # G6's checkpoint timing
    volatile_files=("G6/timing.csv",),
    volatile_columns=(("G6/saved.csv", ("forward_s_volatile",)),
                      ("G6/summary.csv", ("peak_rss_bytes_volatile", "checkpoint_time_ratio_volatile",
                                          "plain_median_s_volatile", "checkpoint_median_s_volatile",
                                          "timing_retries_volatile", "plain_minor_faults_volatile",
                                          "checkpoint_minor_faults_volatile"))),
)
