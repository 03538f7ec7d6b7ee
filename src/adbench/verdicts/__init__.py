"""Verdicts: the documented table, tolerances, one row's verdict, the comparison job and the summary."""
