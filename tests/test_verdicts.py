"""Verdicts that cannot lie: every rule of issue 10 with a negative case, and one end-to-end judgement."""

import csv

from pathlib import Path

import pandas as pd
import pytest

from adbench.render import TEMPLATES
from adbench.verdicts import documented
from adbench.verdicts.verdict import STATUSES, compare, score, verdict
from adbench.families import Family
from adbench.verdicts.job import compare_documented
from adbench.verdicts.tolerance import parse_spec, within


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
])
def test_a_text_that_merely_contains_the_documented_text_is_a_mismatch(documented, measured):
    assert verdict("exact", documented, measured)[0] == "MISMATCH"
    assert verdict("property", documented, measured, model_source="random")[0] == "MISMATCH"


def test_texts_match_after_whitespace_normalisation_only():
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


# --- rounding rows -------------------------------------------------------------------------------

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


@pytest.mark.parametrize("spec, inside, outside", [
    ("sig:3", 6.6849e-12, 6.6851e-12),   # half a unit of the 3rd digit of 6.68e-12 is 5e-15
    ("rel:0.5", 3.35e-12, 3.33e-12),
    ("abs:1e-12", 7.67e-12, 7.69e-12),
])
def test_declared_tolerances(spec, inside, outside):
    assert within("6.68e-12", inside, parse_spec(spec))
    assert not within("6.68e-12", outside, parse_spec(spec))


@pytest.mark.parametrize("bad", ["sig:0", "sig:2.5", "rel:-1", "abs:x", "rel", "pct:3"])
def test_malformed_tolerances_are_refused(bad):
    with pytest.raises(ValueError, match="tolerance"):
        parse_spec(bad)


# --- rows that are not judged --------------------------------------------------------------------

def test_absolute_times_are_not_judged_but_ratios_are():
    assert verdict("timing", "6474.8", 1e9, unit="µs") == (
        "not judged", "absolute wall-clock time measures the CPU as much as the code; only ratios are judged")
    assert verdict("timing", "642.6", 1e9, unit="×")[0] == "MISMATCH"
    assert verdict("timing", "642.6", 900.0, unit="×")[0] == "differs"


def test_pretrained_rows_on_a_random_model_are_not_judged():
    status, note = verdict("pretrained", "3.434449", 10.9, model_source="random")
    assert status == "not judged" and "random" in note
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


def test_score_counts_judged_rows_only():
    statuses = pd.Series(["match", "match", "differs", "MISMATCH", "MISSING", "not judged"])
    assert score(statuses) == (2, 5)
    assert score(pd.Series(["not judged"])) == (0, 0)


# --- bands and the table itself ------------------------------------------------------------------

HEADER = documented.COLUMNS


def _table(tmp_path, rows):
    path = tmp_path / "documented.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        for r in rows:
            w.writerow([r.get(c, "") for c in HEADER])
    return path


def _row(**kw):
    base = {"id": "X1", "quantity": "q", "description": "d", "documented": "1.0", "kind": "shape", "doc": "000",
            "section": "s"}
    return {**base, **kw}


def test_band_above_100_is_refused_at_load(tmp_path):
    with pytest.raises(ValueError, match=r"X1/q: band '150'"):
        documented.load(_table(tmp_path, [_row(band="150", note="this row's own reason")]))
    assert len(documented.load(_table(tmp_path, [_row(band="100", note="this row's own reason")]))) == 1
    with pytest.raises(ValueError, match="band"):
        documented.load(_table(tmp_path, [_row(band="1", note="this row's own reason")]))


def test_band_reason_must_be_specific_to_the_row(tmp_path):
    boiler = "different corpus, model size and seed"
    rows = [_row(band="50", note=boiler), _row(quantity="q2", note=boiler)]
    with pytest.raises(ValueError, match="X1/q: a row with a band"):
        documented.load(_table(tmp_path, rows))
    rows[0]["note"] = "only this loss sits at the memorisation floor"
    assert len(documented.load(_table(tmp_path, rows))) == 2


@pytest.mark.parametrize("row, message", [
    (_row(documented=""), "empty documented value"),
    (_row(kind="rounding", documented="6.68e-12", note="libm"), "rounding row must declare"),
    (_row(tolerance="abs:1e-3"), "say why in note"),
    (_row(documented="None", pattern="(", note="n"), "pattern does not compile"),
    (_row(pattern="x", note="n"), "pattern is only for text rows"),
    (_row(kind="guess"), "unknown kind"),
])
def test_malformed_rows_are_refused_at_load(tmp_path, row, message):
    with pytest.raises(ValueError, match=message):
        documented.load(_table(tmp_path, [row]))


def test_shipped_table_declares_every_printed_zero_exactly():
    df = documented.load()
    from adbench.verdicts.tolerance import is_printed_zero
    zeros = df[df.documented.map(is_printed_zero)]
    assert len(zeros) >= 15
    # a printed zero is judged as exactly 0 unless the row declares abs: and says why
    assert set(zeros.kind) <= {"exact", "derived", "property"}, zeros[["id", "quantity", "kind"]]
    assert (zeros.tolerance.eq("") | zeros.tolerance.str.startswith("abs:")).all()
    assert not df[df.tolerance != ""].note.eq("").any()
    assert (df[df.kind == "rounding"].tolerance.str.match(r"^(sig|rel):")).all()


# --- end to end ----------------------------------------------------------------------------------

def test_end_to_end_judgement_of_a_synthetic_run(tmp_path):
    rows = [
        _row(id="A1", quantity="zero", documented="0", kind="exact"),
        _row(id="A1", quantity="digits", documented="0.2710599584", kind="exact"),
        _row(id="A1", quantity="text", documented="exactly", kind="property"),
        _row(id="A2", quantity="est", documented="-0.180706638542", kind="rounding", tolerance="sig:7",
             note="libm decides the digits after the 7th"),
        _row(id="A2", quantity="shape_near", documented="0.004327", kind="shape"),
        _row(id="A2", quantity="shape_far", documented="0.004327", kind="shape"),
        _row(id="A2", quantity="shape_banded", documented="9.89e-13", kind="shape", band="100",
             note="rounding noise of a central difference at this state only"),
        _row(id="A3", quantity="tape_us", documented="6474.8", unit="µs", kind="timing"),
        _row(id="A3", quantity="ratio", documented="1.53", unit="×", kind="timing"),
        _row(id="A3", quantity="grid", documented="28", unit="count", kind="config"),
        _row(id="A3", quantity="gpt2", documented="3.434449", kind="pretrained"),
        _row(id="A3", quantity="absent", documented="7", kind="exact"),
        _row(id="A3", quantity="full_only", documented="12", kind="exact", note="size-dependent: 12 blocks"),
    ]
    doc = _table(tmp_path, rows)
    values = pd.DataFrame([
        ("A1", "zero", 1e-300, "", ""), ("A1", "digits", 0.27105995838, "", ""), ("A1", "text", "exactly", "", ""),
        ("A2", "est", -0.18070664, "", ""), ("A2", "shape_near", 0.0244, "", ""), ("A2", "shape_far", 0.5, "", ""),
        ("A2", "shape_banded", 4.4e-11, "", ""), ("A3", "tape_us", 1e9, "", ""),
        ("A3", "ratio", 1.6, "processes disagreed", ""), ("A3", "grid", 28, "", ""),
        ("A3", "gpt2", 10.9, "", "random"), ("A3", "full_only", 4, "", ""),
    ], columns=["id", "quantity", "value", "unjudged_reason", "model_source"])
    paths = []
    for i, part in enumerate((values.iloc[:4], values.iloc[4:])):
        p = tmp_path / f"v{i}.csv"
        part.to_csv(p, index=False)
        paths.append(str(p))
    fams = [f.as_dict() for f in FAMS]
    full = compare_documented(paths, paths, str(doc), fams, reduced=False)["comparison"].set_index("quantity")
    expected = {"zero": "MISMATCH", "digits": "match", "text": "match", "est": "differs",
                "shape_near": "differs", "shape_far": "MISMATCH", "shape_banded": "differs",
                "tape_us": "not judged", "ratio": "not judged", "grid": "not judged", "gpt2": "not judged",
                "absent": "MISSING", "full_only": "MISMATCH"}
    assert full.status.to_dict() == expected
    assert set(full.status) == set(STATUSES)
    assert "×10" in full.loc["shape_far", "note"] and "processes disagreed" in full.loc["ratio", "note"]
    assert score(full.status) == (2, 9)  # 2 match; 3 differs + 3 MISMATCH + 1 MISSING + 2 match judged
    reduced = compare_documented(paths, paths, str(doc), fams, reduced=True)["comparison"].set_index("quantity")
    assert reduced.loc["shape_far", "status"] == "not judged" and reduced.loc["full_only", "status"] == "not judged"
    assert reduced.loc["zero", "status"] == "MISMATCH"  # exact rows stay judged at reduced sizes


# --- the report's summary ------------------------------------------------------------------------

# A stand-in for the declared families (the real list comes from the rules files' family(...)).
FAMS = [Family("scalar", "Scalar", ("S1", "S2", "S3"), 10), Family("tensor", "Tensor", ("T1",), 20),
        Family("charlm", "Character model", ("C1",), 80)]


def _cmp(statuses, ids=None):
    return pd.DataFrame([dict(id=(ids or ["S1"] * len(statuses))[i], quantity=f"q{i}", description=f"row {i}",
                              documented="1", unit="", measured=1.0, measured_printed="1", kind="exact", status=s,
                              note="", model_source="", tolerance="") for i, s in enumerate(statuses)])


def test_summary_table_counts_five_outcomes_and_scores_judged_rows():
    from adbench.verdicts.summary import summary_table
    cmp = _cmp(["match", "match", "differs", "not judged", "MISMATCH", "match", "not judged"],
               ids=["S1", "S1", "S2", "S3", "T1", "T1", "C1"])
    table = summary_table(cmp, FAMS).set_index("family")
    assert table.loc["scalar", ["match", "differs", "not judged", "MISMATCH", "MISSING"]].tolist() == [2, 1, 1, 0, 0]
    assert table.loc["scalar", "score"] == pytest.approx(2 / 3)
    assert table.loc["tensor", "score"] == pytest.approx(1 / 2)
    assert pd.isna(table.loc["charlm", "score"])  # only a not-judged row: nothing to score
    assert table.loc["all", ["matched", "judged"]].tolist() == [3, 5]


def test_summary_table_carries_each_familys_claims_counts():
    """summary.csv's claims columns copy results/claims_summary.csv per family (and 'all'); a family the
    claims summary lacks, or a run without claims, counts 0, and each row still holds one family."""
    from adbench.verdicts.summary import CLAIMS_COLUMNS, summary_table, with_claims
    cmp = _cmp(["match", "match", "MISMATCH"], ids=["S1", "T1", "C1"])
    claims = pd.DataFrame([{"family": "scalar", "holds": 3, "fails": 1, "not judged": 2, "claims": 6},
                           {"family": "tensor", "holds": 2, "fails": 0, "not judged": 0, "claims": 2},
                           {"family": "all", "holds": 5, "fails": 1, "not judged": 2, "claims": 8}])
    table = with_claims(summary_table(cmp, FAMS), claims)
    assert list(table.columns[-4:]) == list(CLAIMS_COLUMNS.values()) == \
        ["claims_holds", "claims_fails", "claims_not_judged", "claims"]
    t = table.set_index("family")
    assert t.loc["scalar", list(CLAIMS_COLUMNS.values())].tolist() == [3, 1, 2, 6]
    assert t.loc["charlm", list(CLAIMS_COLUMNS.values())].tolist() == [0, 0, 0, 0]   # no claims row: 0
    assert t.loc["all", "claims"] == 8 and t.loc["all", "MISMATCH"] == 1
    assert table.family.tolist() == ["scalar", "tensor", "charlm", "all"]
    none = with_claims(summary_table(cmp, FAMS), None)   # control: no claims judged
    assert (none[list(CLAIMS_COLUMNS.values())] == 0).all().all()
    assert none.drop(columns=list(CLAIMS_COLUMNS.values())).equals(summary_table(cmp, FAMS))


def test_report_summary_shows_every_outcome_and_the_score():
    from adbench.render.page import render
    html = render(str(TEMPLATES), _cmp(list(STATUSES)), {"tables": {}, "figures": {}, "metas": [], "paths": []})
    summary = html[html.index('<section id="summary">'):html.index('<nav class="toc"')]
    assert "Reproduction score: 25.0 % (1 / 4)" in summary
    for s in STATUSES:
        assert f'data-filter="{s}"' in html and f"<th scope=\"col\">{s}</th>" in summary
    assert 'class="status not-judged"' in html
    assert "1 row(s) are MISMATCH or MISSING" not in html and "2 row(s) are MISMATCH or MISSING" in html


def test_a_torch_version_dependent_row_explains_itself(tmp_path):
    note = "torch-version-dependent: torch 2.9.1 counted 5 dummy tensors more"
    doc = documented.load(_table(tmp_path, [_row(documented="21", note=note), _row(quantity="q2", documented="21")]))
    got = compare(doc, pd.DataFrame({"id": ["X1", "X1"], "quantity": ["q", "q2"], "value": [16.0, 16.0], "note": ""}))
    assert got.status.tolist() == ["differs", "differs"]
    assert got.note[0].startswith("torch-version-dependent:") and not got.note[1].startswith("torch")


def test_comparison_job_returns_the_per_family_summary(tmp_path):
    doc = _table(tmp_path, [_row(id="S1", documented="2"), _row(id="S1", quantity="q2", documented="0", kind="exact")])
    values = tmp_path / "values.csv"
    pd.DataFrame({"id": ["S1", "S1"], "quantity": ["q", "q2"], "value": [2.0, 1e-300], "note": ""}).to_csv(values)
    families = [{"key": "scalar", "title": "Scalar", "ids": ["S1"], "order": 1}]
    claims = pd.DataFrame([{"family": "scalar", "holds": 4, "fails": 1, "not judged": 0, "claims": 5},
                           {"family": "all", "holds": 4, "fails": 1, "not judged": 0, "claims": 5}])
    out = compare_documented([str(values)], [str(values)], str(doc), families, claims_summary=claims)
    summary = out["summary"].set_index("family")
    assert summary.loc["scalar", ["match", "MISMATCH", "judged"]].tolist() == [1, 1, 2]
    assert summary.loc["all", "score"] == 0.5
    assert summary.loc["all", ["claims_holds", "claims_fails", "claims"]].tolist() == [4, 1, 5]


def test_no_verdict_from_a_values_file_that_changed_after_its_job_wrote_it(tmp_path, monkeypatch):
    from adbench.jobs import write_manifest

    monkeypatch.chdir(tmp_path)
    doc = _table(tmp_path, [_row(id="S1", documented="2"), _row(id="S2", documented="3")])
    (tmp_path / "results/S1").mkdir(parents=True)
    (tmp_path / "results/S2").mkdir()
    paths = ["results/S1/values.csv", "results/S2/values.csv"]
    for p, (mid, v) in zip(paths, (("S1", 2.0), ("S2", 3.0))):
        pd.DataFrame({"id": [mid], "quantity": ["q"], "value": [v], "note": ""}).to_csv(p, index=False)
    write_manifest("scalar", {}, paths)
    families = [{"key": "scalar", "title": "Scalar", "ids": ["S1", "S2"], "order": 1}]
    clean = compare_documented(paths, paths, str(doc), families)
    # negative control: untouched files are judged, and the summary has no `untrusted` column
    assert clean["comparison"].status.tolist() == ["match", "match"] and "untrusted" not in clean["summary"]
    Path("results/S2/values.csv").write_text(Path("results/S2/values.csv").read_text().replace("3.0", "2.5"))
    out = compare_documented(paths, paths, str(doc), families)
    cmp = out["comparison"].set_index("id")
    assert cmp.loc["S1", "status"] == "match"
    assert cmp.loc["S2", "status"] == "not judged" and pd.isna(cmp.loc["S2", "measured"])
    assert cmp.loc["S2", "note"] == "results/S2/values.csv changed after its job wrote it"
    summary = out["summary"].set_index("family")
    assert summary.loc["all", "untrusted"] == "results/S2/values.csv: changed after its job wrote it"
    assert summary.loc["all", "judged"] == 1  # the edited row left the score


def test_a_row_absent_at_smoke_sizes_is_not_judged_but_missing_at_full_sizes():
    assert verdict("shape", "4.000015", None, reduced=True)[0] == "not judged"
    assert verdict("exact", "4.000015", None, reduced=True, unjudged="size-dependent")[0] == "not judged"
    assert verdict("shape", "4.000015", None, reduced=False)[0] == "MISSING"
    assert verdict("exact", "4.000015", None, reduced=True)[0] == "MISSING"  # exact rows must exist at any size
