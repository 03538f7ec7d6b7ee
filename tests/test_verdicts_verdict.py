"""The comparison: printed-digit tolerances, verdicts per kind, the documented table."""

import math

import pandas as pd
import pytest

from adbench.verdicts import documented
from adbench.verdicts.verdict import KINDS, compare, format_like, parse_printed, verdict, within
from workflow_inspect import from_workflow
from conftest import ROOT


@pytest.mark.parametrize("printed, value, tol", [
    ("0.2710599584", 0.2710599584, 0.5e-10), ("6.68e-12", 6.68e-12, 0.5e-14), ("124,439,808", 124439808, 0.5),
    ("-3", -3.0, 0.5), ("0.0000000000", 0.0, 0.5e-10), ("17.98%", 17.98, 0.005), ("inf", math.inf, 0.0)])
def test_parse_printed_gives_half_unit_of_last_digit(printed, value, tol):
    v, t = parse_printed(printed)
    assert v == value and t == pytest.approx(tol, rel=1e-12)


def test_text_is_not_a_number():
    assert parse_printed("TypeError") is None


def test_within_the_printed_digits_uses_exact_decimal_arithmetic():
    # The binary double nearest -0.18070663892364855 prints as ...6485 with 16 decimals.
    assert within("-0.1807066389236485", -0.18070663892364855)
    assert not within("-0.1807066389236485", -0.18070663892364858)
    assert within("6.1", (3.1 ** 2 - 9) / 0.1)
    assert not within("0.993", 0.9936)
    assert within("0.000e+00", 0.0) and not within("0.000e+00", 5.96e-8)


@pytest.mark.parametrize("kind", ["exact", "derived"])
def test_exact_kinds_mismatch_outside_printed_digits(kind):
    assert verdict(kind, "0.2710599584", 0.2710599584)[0] == "match"
    assert verdict(kind, "0.2710599584", 0.2710599590)[0] == "MISMATCH"


def test_non_exact_kinds_differ_within_an_order_and_mismatch_beyond():
    for kind in ("shape", "timing"):
        status, note = verdict(kind, "0.004327", 0.0244)
        assert status == "differs" and note
        assert verdict(kind, "0.004327", 0.5)[0] == "MISMATCH"
        assert verdict(kind, "0.004327", -0.004327)[0] == "MISMATCH"


def test_missing_and_text_rows():
    assert verdict("exact", "1.0", None)[0] == "MISSING"
    assert verdict("exact", "TypeError", "TypeError")[0] == "match"
    assert verdict("exact", "is at version 1; expected version 0", "x is at version 2; expected version 0")[0] == "MISMATCH"


def test_format_like_copies_the_documented_notation():
    assert format_like("6.68e-12", 6.679407e-12) == "6.68e-12"
    assert format_like("1e-5", 1e-05) == "1e-5"
    assert format_like("124,439,808", 124439808.0) == "124,439,808"
    assert format_like("0.0000000000", -0.0) in ("0.0000000000", "-0.0000000000")
    assert format_like("8.784e-04", 8.7838e-4) == "8.784e-04"
    assert format_like("0.0322432", 1.405505474e-11) == "1.406e-11"


def test_compare_joins_on_id_and_quantity():
    doc = pd.DataFrame([{"id": "X1", "quantity": "q", "description": "d", "documented": "2.50",
                         "unit": "", "kind": "exact", "doc": "000", "section": "s", "note": "",
                         "tolerance": "", "pattern": ""}])
    out = compare(doc, pd.DataFrame([{"id": "X1", "quantity": "q", "value": 2.504, "note": ""}]))
    assert out.loc[0, "status"] == "match" and out.loc[0, "measured_printed"] == "2.50"
    out = compare(doc, pd.DataFrame([{"id": "X1", "quantity": "other", "value": 2.5, "note": ""}]))
    assert out.loc[0, "status"] == "MISSING"


def test_documented_table_is_well_formed():
    df = documented.load()
    assert set(df.kind) <= set(KINDS)
    ids = {i for f in from_workflow(ROOT) for i in f.ids}  # as the rules files declare them
    assert set(df.id) <= ids, set(df.id) - ids
    # Every numeric documented value parses; text values are deliberate (error names, messages).
    numeric = df[df.documented.map(parse_printed).notna()]
    assert len(numeric) > 0.8 * len(df)
    assert {"S1", "S5", "S9", "S10"} <= set(df.id)


def test_band_widens_only_rows_that_declare_it():
    assert verdict("shape", "9.89e-13", 4.4e-11)[0] == "MISMATCH"
    assert verdict("shape", "9.89e-13", 4.4e-11, band=100)[0] == "differs"
    assert verdict("shape", "9.89e-13", 4.4e-9, band=100)[0] == "MISMATCH"


def test_reduced_runs_judge_only_exact_kinds():
    assert verdict("shape", "13.91", 0.29, reduced=True)[0] == "not judged"
    assert verdict("exact", "6.1", 6.2, reduced=True)[0] == "MISMATCH"


def test_pretrained_text_rows_are_never_compared_on_a_random_model():
    assert verdict("pretrained", "none", "none", model_source="random")[0] == "not judged"
