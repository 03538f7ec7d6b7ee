"""What counts as a missing cell, decided once for the verdicts, the history and the renderer.

A value read back from a results CSV is missing when pandas gave nothing for it: None, a float
NaN (numpy floats included), pandas NA or NaT. Text is never missing, not even "" or "nan": a
measurement that printed an empty string or the word nan produced something. Where an empty
documented value or an empty optional column (tolerance, band, note) should count as absent,
use `is_blank`, which says so in its name.

Torch-free and cheap to import: the verdict and history code import it, not the measurements.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["is_missing", "is_blank"]


def is_missing(x) -> bool:
    """None, float NaN, pandas NA or NaT; never a number (0, 0.0, False) and never a string."""
    if x is None or x is pd.NA or x is pd.NaT:
        return True
    # np.float64 subclasses float but np.float32 / np.float16 do not: name numpy's floats too
    return isinstance(x, (float, np.floating)) and math.isnan(x)


def is_blank(x) -> bool:
    """Missing, or text that is empty once whitespace is stripped (an empty optional CSV column)."""
    return is_missing(x) or (isinstance(x, str) and x.strip() == "")
