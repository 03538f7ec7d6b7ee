"""One missing-value rule (adbench.missing), with the values that must not count as missing."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import adbench.missing
from adbench.missing import is_blank, is_missing


@pytest.mark.parametrize("x", [None, math.nan, float("nan"), np.nan, np.float64("nan"), np.float32("nan"),
                               pd.NA, pd.NaT])
def test_missing_values(x):
    assert is_missing(x) and is_blank(x)


@pytest.mark.parametrize("x", [0, 0.0, -0.0, "0", "nan", "NaN", "None", False, True, math.inf, np.float32(0),
                               np.int64(0), "", " ", "\n"])
def test_numbers_and_texts_are_never_missing(x):
    assert not is_missing(x)


@pytest.mark.parametrize("x, blank", [("", True), ("  \n", True), ("0", False), ("nan", False), (0, False),
                                      (0.0, False), (False, False), ("x", False)])
def test_blank_is_missing_or_empty_text(x, blank):
    assert is_blank(x) is blank


def test_a_cell_read_back_from_csv_is_missing_exactly_where_the_csv_is_empty():
    df = pd.read_csv(pd.io.common.StringIO("a,b\n,0\n1,nan-text\n"))
    assert [is_missing(v) for v in df.a] == [True, False] and not any(is_missing(v) for v in df.b)


def test_the_module_does_not_import_torch():
    code = "import sys, adbench.missing; print('torch' in sys.modules)"
    src = str(Path(adbench.missing.__file__).parents[1])  # this checkout's package, not an installed one
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip() == "False"
