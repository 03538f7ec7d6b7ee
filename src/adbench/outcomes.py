"""The outcome names every layer shares: a claim's verdict and a documented row's status.

One tiny module so that the strict check, the history and the report read the same strings without
importing the claims or the verdict machinery.
"""

from __future__ import annotations

# A claim: it holds or fails on this run's tables, is not judged (with the reason), or is a definition: a
# relation that re-checks the arithmetic that produced its own number, shown but never counted as evidence.
HOLDS, FAILS, NOT_JUDGED, DEFINITION = "holds", "fails", "not judged", "definition"
CLAIM_VERDICTS = (HOLDS, FAILS, NOT_JUDGED, DEFINITION)

# A documented row against its measured value (adbench.verdicts.verdict says what each means).
MATCH, DIFFERS, MISMATCH, MISSING = "match", "differs", "MISMATCH", "MISSING"
STATUSES = (MATCH, DIFFERS, NOT_JUDGED, MISMATCH, MISSING)
LOUD = (MISMATCH, MISSING)  # what the report lists at the top, and strict mode fails on
