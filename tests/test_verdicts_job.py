"""adbench.verdicts.job: the comparison job end to end (every values.csv against the documented table, at full
and at reduced sizes), its per-family summary, and no verdict from a file changed after its job wrote it."""

from pathlib import Path

import pandas as pd

from adbench.verdicts.job import compare_documented
from adbench.verdicts.verdict import STATUSES, score
from documented_fixture import FAMS, row, table


def test_end_to_end_judgement_of_a_synthetic_run(tmp_path):
    rows = [
        row(id="A1", quantity="zero", documented="0", kind="exact"),
        row(id="A1", quantity="digits", documented="0.2710599584", kind="exact"),
        row(id="A1", quantity="text", documented="exactly", kind="property"),
        row(id="A2", quantity="est", documented="-0.180706638542", kind="rounding", tolerance="sig:7",
            note="libm decides the digits after the 7th"),
        row(id="A2", quantity="shape_near", documented="0.004327", kind="shape"),
        row(id="A2", quantity="shape_far", documented="0.004327", kind="shape"),
        row(id="A2", quantity="shape_banded", documented="9.89e-13", kind="shape", band="100",
            note="rounding noise of a central difference at this state only"),
        row(id="A3", quantity="tape_us", documented="6474.8", unit="µs", kind="timing"),
        row(id="A3", quantity="ratio", documented="1.53", unit="×", kind="timing"),
        row(id="A3", quantity="grid", documented="28", unit="count", kind="config"),
        row(id="A3", quantity="gpt2", documented="3.434449", kind="pretrained"),
        row(id="A3", quantity="absent", documented="7", kind="exact"),
        row(id="A3", quantity="full_only", documented="12", kind="exact", note="size-dependent: 12 blocks"),
    ]
    doc = table(tmp_path, rows)
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


def test_comparison_job_returns_the_per_family_summary(tmp_path):
    doc = table(tmp_path, [row(id="S1", documented="2"), row(id="S1", quantity="q2", documented="0", kind="exact")])
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
    doc = table(tmp_path, [row(id="S1", documented="2"), row(id="S2", documented="3")])
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
