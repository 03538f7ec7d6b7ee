"""adbench.verdicts.verdict and .tolerance: printed-digit tolerances, one verdict per row and kind (each rule
beside a negative case), the join of measured to documented values, and the reproduction score."""

import math

import pandas as pd
import pytest

from adbench.verdicts import documented
from adbench.verdicts.tolerance import parse_spec
from adbench.verdicts.verdict import compare, format_like, parse_printed, score, verdict, within
from documented_fixture import row, table


# --- printed numbers and tolerances (tolerance.py) ----------------------------------------------

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


@pytest.mark.parametrize("spec, inside, outside", [
    ("sig:3", 6.6849e-12, 6.6851e-12),   # half a unit of the 3rd digit of 6.68e-12 is 5e-15
    ("rel:0.5", 3.35e-12, 3.33e-12),
    ("abs:1e-12", 7.67e-12, 7.69e-12),
])
def test_declared_tolerances(spec, inside, outside):
    assert within("6.68e-12", inside, parse_spec(spec))
    assert not within("6.68e-12", outside, parse_spec(spec))


def test_about_makes_a_whole_numbers_trailing_zeros_not_significant():
    """"About 820 MB" (004:31, :93): two significant digits, ±5, where the printed digits alone give ±0.5."""
    about = parse_spec("about")
    assert within("820", 817, about) and within("820", 825, about)
    assert not within("820", 790, about) and not within("820", 826, about)  # negative controls: past ±5
    assert not within("820", 817)  # the printed digits without the sentence's "about": 817 differs
    assert verdict("shape", "820", 817.0, tolerance="about") == ("match", "")
    assert verdict("shape", "820", 790.0, tolerance="about")[0] == "differs"
    assert within("1,000", 1400, about) and not within("1,000", 1600, about)  # about a thousand: one digit
    # digits written after a point, or in an exponent's mantissa, were written on purpose: they stay significant
    assert within("2.0", 2.04, about) and not within("2.0", 2.06, about)
    assert not within("8.20e2", 817, about)
    assert within("0", 0.0, about) and not within("0", 1e-300, about)  # a printed zero is still exactly 0


def test_the_documented_rows_written_about_820_are_read_so():
    rows = documented.load().set_index(["id", "quantity"])
    g6 = rows.loc[("G6", "per_sequence_saved_mb")]
    assert g6.documented == "820" and parse_spec(g6.tolerance) == ("about", 0.0)
    assert verdict(g6.kind, g6.documented, 817.0, tolerance=g6.tolerance)[0] == "match"  # the nanoGPT-style model


@pytest.mark.parametrize("bad", ["sig:0", "sig:2.5", "rel:-1", "abs:x", "rel", "pct:3", "about:2", "About"])
def test_malformed_tolerances_are_refused(bad):
    with pytest.raises(ValueError, match="tolerance"):
        parse_spec(bad)


def test_format_like_copies_the_documented_notation():
    assert format_like("6.68e-12", 6.679407e-12) == "6.68e-12"
    assert format_like("1e-5", 1e-05) == "1e-5"
    assert format_like("124,439,808", 124439808.0) == "124,439,808"
    assert format_like("0.0000000000", -0.0) in ("0.0000000000", "-0.0000000000")
    assert format_like("8.784e-04", 8.7838e-4) == "8.784e-04"
    assert format_like("0.0322432", 1.405505474e-11) == "1.406e-11"


# --- printed zeros -------------------------------------------------------------------------------

@pytest.mark.parametrize("printed", ["0", "0.0", "0.0000000000", "0.000e+00"])
@pytest.mark.parametrize("measured", [1e-300, 0.04, 0.3, -5e-324])
def test_a_printed_zero_means_exactly_zero(printed, measured):
    assert verdict("exact", printed, measured)[0] == "MISMATCH"
    assert verdict("exact", printed, 0.0)[0] == "match"
    assert verdict("exact", printed, -0.0)[0] == "match"


def test_a_rounded_zero_needs_its_declared_absolute_tolerance():
    assert verdict("exact", "0.0000", 3e-17, tolerance="abs:1e-15")[0] == "match"
    assert verdict("exact", "0.0000", 3e-14, tolerance="abs:1e-15")[0] == "MISMATCH"
    assert verdict("exact", "0.0000", 3e-17)[0] == "MISMATCH"  # without it, 0.0000 means 0


def test_shape_zero_is_also_exact():
    # The ×10 guard cannot save a nonzero value against a documented 0 either.
    assert verdict("shape", "0", 1e-300)[0] == "MISMATCH"


# --- texts ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("documented, measured", [
    ("None", "not cleared: None, tensor(1.)"),
    ("exactly", "not exactly"),
    ("TypeError", "TypeError: '>' not supported"),
    ("no", "no?"),
    ("is at version 1; expected version 0", "x is at version 2; expected version 0"),
])
def test_a_text_that_merely_contains_the_documented_text_is_a_mismatch(documented, measured):
    assert verdict("exact", documented, measured)[0] == "MISMATCH"
    assert verdict("property", documented, measured, model_source="random")[0] == "MISMATCH"


def test_texts_match_after_whitespace_normalisation_only():
    assert verdict("exact", "TypeError", "TypeError")[0] == "match"
    assert verdict("exact", "exactly", "  exactly\n")[0] == "match"
    assert verdict("exact", "is at  version 1;\nexpected", "is at version 1; expected")[0] == "match"
    assert verdict("exact", "exactly", "Exactly")[0] == "MISMATCH"


def test_a_declared_pattern_must_match_the_whole_text():
    pattern = r"None for all \d+ parameters"
    assert verdict("exact", "None", "None for all 2 parameters", pattern=pattern)[0] == "match"
    assert verdict("exact", "None", "None for all 2 parameters, tensor(1.)", pattern=pattern)[0] == "MISMATCH"
    assert verdict("exact", "None", "not None for all 2 parameters", pattern=pattern)[0] == "MISMATCH"


def test_an_empty_documented_text_is_refused():
    with pytest.raises(ValueError, match="empty"):
        verdict("exact", "", "anything at all")
    with pytest.raises(ValueError, match="empty"):
        verdict("exact", "   ", "anything at all")


# --- numbers by kind -----------------------------------------------------------------------------

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


def test_band_widens_only_rows_that_declare_it():
    assert verdict("shape", "9.89e-13", 4.4e-11)[0] == "MISMATCH"
    assert verdict("shape", "9.89e-13", 4.4e-11, band=100)[0] == "differs"
    assert verdict("shape", "9.89e-13", 4.4e-9, band=100)[0] == "MISMATCH"


def test_a_rounding_row_off_in_its_first_digit_is_a_mismatch():
    # S5's estimate with a step-size bug: -0.36 against -0.1807066 used to read "differs" (libm).
    assert verdict("rounding", "-0.1807066", -0.36, tolerance="sig:5")[0] == "MISMATCH"
    assert verdict("rounding", "6.68e-12", 9.9e-12, tolerance="sig:1")[0] == "MISMATCH"
    assert verdict("rounding", "6.68e-12", 6.679407e-12, tolerance="sig:1")[0] == "match"
    status, note = verdict("rounding", "-0.180706638542", -0.1807066386, tolerance="sig:9")
    assert status == "differs" and "libm" in note
    assert verdict("rounding", "-0.180706638542", -0.1807066396, tolerance="sig:9")[0] == "MISMATCH"


def test_rounding_rows_must_declare_sig_or_rel():
    with pytest.raises(ValueError, match="sig"):
        verdict("rounding", "6.68e-12", 6.68e-12)
    with pytest.raises(ValueError, match="sig"):
        verdict("rounding", "6.68e-12", 6.68e-12, tolerance="abs:1e-12")


# --- rows that are not judged, and missing rows --------------------------------------------------

def test_absolute_times_are_not_judged_but_ratios_are():
    assert verdict("timing", "6474.8", 1e9, unit="µs") == (
        "not judged", "absolute wall-clock time measures the CPU as much as the code; only ratios are judged")
    assert verdict("timing", "642.6", 1e9, unit="×")[0] == "MISMATCH"
    assert verdict("timing", "642.6", 900.0, unit="×")[0] == "differs"


def test_pretrained_rows_on_a_random_model_are_not_judged():
    status, note = verdict("pretrained", "3.434449", 10.9, model_source="random")
    assert status == "not judged" and "random" in note
    assert verdict("pretrained", "none", "none", model_source="random")[0] == "not judged"  # a text row too
    assert verdict("pretrained", "3.434449", 40.0, model_source="pretrained")[0] == "MISMATCH"
    assert verdict("pretrained", "3.434449", 3.434449, model_source="pretrained")[0] == "match"


def test_a_violated_property_on_a_random_model_is_a_mismatch():
    assert verdict("property", "true", "false", model_source="random")[0] == "MISMATCH"
    assert verdict("property", "true", "true", model_source="random")[0] == "match"
    assert verdict("property", "1.0", 1.25, model_source="random")[0] == "MISMATCH"


def test_config_echoes_are_shown_never_scored():
    assert verdict("config", "40", 40.0)[0] == "not judged"
    assert verdict("config", "40", 41.0)[0] == "not judged"
    assert score(pd.Series(["match", "not judged", "not judged"])) == (1, 1)


def test_a_measurement_can_withhold_its_judgement():
    assert verdict("timing", "1.53", 1.6, unit="×", unjudged="processes disagreed")[0] == "not judged"
    assert verdict("timing", "1.53", 1.6, unit="×")[0] == "differs"


def test_reduced_runs_judge_only_exact_kinds():
    assert verdict("shape", "13.91", 0.29, reduced=True)[0] == "not judged"
    assert verdict("exact", "6.1", 6.2, reduced=True)[0] == "MISMATCH"


def test_a_row_absent_at_smoke_sizes_is_not_judged_but_missing_at_full_sizes():
    assert verdict("shape", "4.000015", None, reduced=True)[0] == "not judged"
    assert verdict("exact", "4.000015", None, reduced=True, unjudged="size-dependent")[0] == "not judged"
    assert verdict("shape", "4.000015", None, reduced=False)[0] == "MISSING"
    assert verdict("exact", "1.0", None)[0] == "MISSING"
    assert verdict("exact", "4.000015", None, reduced=True)[0] == "MISSING"  # exact rows must exist at any size


def test_score_counts_judged_rows_only():
    statuses = pd.Series(["match", "match", "differs", "MISMATCH", "MISSING", "not judged"])
    assert score(statuses) == (2, 5)
    assert score(pd.Series(["not judged"])) == (0, 0)


# --- the join ------------------------------------------------------------------------------------

def test_compare_joins_on_id_and_quantity():
    doc = pd.DataFrame([{"id": "X1", "quantity": "q", "description": "d", "documented": "2.50",
                         "unit": "", "kind": "exact", "doc": "000", "section": "s", "note": "",
                         "tolerance": "", "pattern": ""}])
    out = compare(doc, pd.DataFrame([{"id": "X1", "quantity": "q", "value": 2.504, "note": ""}]))
    assert out.loc[0, "status"] == "match" and out.loc[0, "measured_printed"] == "2.50"
    out = compare(doc, pd.DataFrame([{"id": "X1", "quantity": "other", "value": 2.5, "note": ""}]))
    assert out.loc[0, "status"] == "MISSING"


def test_a_torch_version_dependent_row_explains_itself(tmp_path):
    note = "torch-version-dependent: torch 2.9.1 counted 5 dummy tensors more"
    doc = documented.load(table(tmp_path, [row(documented="21", note=note), row(quantity="q2", documented="21")]))
    got = compare(doc, pd.DataFrame({"id": ["X1", "X1"], "quantity": ["q", "q2"], "value": [16.0, 16.0], "note": ""}))
    assert got.status.tolist() == ["differs", "differs"]
    assert got.note[0].startswith("torch-version-dependent:") and not got.note[1].startswith("torch")
