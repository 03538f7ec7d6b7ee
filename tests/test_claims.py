"""The claims table is validated at load; the judge gives every claim holds, fails or not judged with a
reason; the job writes the claims and their per-family counts; the report shows them."""

from __future__ import annotations


import pandas as pd
import pytest

from adbench.claims import judge, table
import inspect

from adbench.claims.relations import FAILS, HOLDS, NOT_JUDGED, RELATIONS, VOLATILE
from adbench.families import Family
from adbench.jobs import call_arguments
from adbench.render import TEMPLATES
from adbench.render.page import render
from claims_synthetic import VIOLATIONS, good_tables


def _table(rows: list[dict]) -> pd.DataFrame:
    base = {"claim": "S3.routes-add", "id": "S3", "doc": "000", "section": "s", "conclusion": "Routes add.",
            "relation": "routes_add", "tolerance": "float64 rounding", "scope": "any", "size": "independent", "note": ""}
    return pd.DataFrame([{**base, **r} for r in rows], columns=table.COLUMNS)


# ---- the table ----------------------------------------------------------------------------------
def test_the_shipped_table_loads_and_covers_every_family():
    claims = table.load()
    assert len(claims) >= 40
    assert {c[0] for c in claims.id} >= set("STLODPGC")
    assert set(claims.relation) <= set(RELATIONS)


def test_a_wellformed_row_passes():
    table.validate(_table([{}]))


@pytest.mark.parametrize("edit, message", [
    ({"relation": "no_such_test"}, "unknown relation"),
    ({"scope": "sometimes"}, "bad scope"),
    ({"size": "large"}, "bad size"),
    ({"conclusion": "  "}, "empty conclusion"),
    ({"tolerance": ""}, "empty tolerance"),
    ({"doc": "007"}, "bad doc"),
    ({"claim": "S4.routes-add"}, "does not start with its measurement id"),
    ({"claim": "routes add"}, "claim id must read"),
    ({"scope": "pretrained"}, "must say in note"),
])
def test_a_malformed_row_is_an_error(edit, message):
    with pytest.raises(ValueError, match=message):
        table.validate(_table([edit]))


def test_a_duplicate_claim_id_is_an_error():
    with pytest.raises(ValueError, match="duplicate claim id"):
        table.validate(_table([{}, {"conclusion": "Again."}]))


def test_load_reads_text_and_validates(tmp_path):
    path = tmp_path / "claims.csv"
    _table([{"relation": "nope"}]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="unknown relation"):
        table.load(path)


# ---- the judge, end to end on a synthetic result set --------------------------------------------
SYNTHETIC = _table([
    {"claim": "S3.routes-add"},
    {"claim": "S5.central-beats-forward", "id": "S5", "relation": "central_beats_forward", "note": "why it fails here"},
    {"claim": "G3.value-largest", "id": "G3", "relation": "value_slice_largest", "scope": "pretrained",
     "note": "trained weights"},
    {"claim": "O1.seed0-stalls", "id": "O1", "relation": "xor_seed0_stalls", "scope": "setup", "note": "their seed draw"},
    {"claim": "C1.detached-ends-worse", "id": "C1", "relation": "detached_positions_end_worse", "size": "dependent"},
    {"claim": "L7.scores-quadratic", "id": "L7", "relation": "scores_grow_quadratically"},
])


def _synthetic_run() -> dict:
    t = good_tables()
    VIOLATIONS["central_beats_forward"](t)  # one claim this run breaks
    del t["L7/sweep"]  # one measurement this run lacks
    return t


def test_the_judge_gives_all_three_verdicts_with_reasons():
    out = judge.judge(SYNTHETIC, _synthetic_run(), reduced=True, model_source="random-reduced").set_index("claim")
    assert list(out.columns) == judge.OUTPUT[1:]
    assert out.verdict.to_dict() == {
        "S3.routes-add": HOLDS, "S5.central-beats-forward": FAILS, "G3.value-largest": NOT_JUDGED,
        "O1.seed0-stalls": NOT_JUDGED, "C1.detached-ends-worse": NOT_JUDGED, "L7.scores-quadratic": NOT_JUDGED}
    assert "pretrained" in out.reason["G3.value-largest"] and "would read holds" in out.reason["G3.value-largest"]
    assert "their seed draw" in out.reason["O1.seed0-stalls"]
    assert "reduced sizes" in out.reason["C1.detached-ends-worse"]
    assert "not measured" in out.reason["L7.scores-quadratic"]
    assert "best central error" in out.reason["S5.central-beats-forward"]
    assert out.reason["S5.central-beats-forward"].endswith("why it fails here")  # a failing claim says why


def test_full_sizes_and_pretrained_weights_judge_what_reduced_random_runs_do_not():
    out = judge.judge(SYNTHETIC, _synthetic_run(), reduced=False, model_source="pretrained").set_index("claim")
    assert out.verdict["G3.value-largest"] == HOLDS and out.verdict["C1.detached-ends-worse"] == HOLDS
    assert out.verdict["O1.seed0-stalls"] == NOT_JUDGED  # a setup claim stays unjudged everywhere


def test_counts_per_family_and_overall():
    out = judge.judge(SYNTHETIC, _synthetic_run(), reduced=True, model_source="random")
    fams = [Family("scalar", "Scalar", ("S3", "S5"), 1), Family("gpt2", "GPT-2", ("G3",), 2)]
    c = judge.counts(out, fams).set_index("family")
    assert c.loc["scalar", [HOLDS, FAILS, NOT_JUDGED]].tolist() == [1, 1, 0]
    assert c.loc["gpt2", NOT_JUDGED] == 1
    assert c.loc["all"].tolist() == [1, 1, 4, 6]


def test_measure_claims_reads_the_registered_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = []
    for key, df in _synthetic_run().items():
        p = tmp_path / "results" / f"{key}.csv"
        p.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(p, index=False)
        paths.append(f"results/{key}.csv")
    claims_path = tmp_path / "claims.csv"
    SYNTHETIC.to_csv(claims_path, index=False)
    left_out = tmp_path / "left_out.csv"
    pd.DataFrame([{"doc": "000", "section": "s", "conclusion": "c", "reason": "r"}]).to_csv(left_out, index=False)
    out = judge.measure_claims(paths, str(claims_path), str(left_out), [{"model_source": "random"}],
                               [{"key": "scalar", "title": "Scalar", "ids": ["S3", "S5"], "order": 1}], reduced=False)
    assert out["claims"].set_index("claim").verdict["S3.routes-add"] == HOLDS
    assert out["claims_summary"].family.tolist() == ["scalar", "all"]
    assert out["claims_coverage"].set_index("doc").loc["all", "left_out"] == 1


def test_coverage_counts_judged_over_testable_per_document():
    claims = judge.judge(SYNTHETIC, _synthetic_run(), reduced=True, model_source="random")
    left = pd.DataFrame([{"doc": "000", "section": "s", "conclusion": f"c{i}", "reason": "r"} for i in range(2)]
                        + [{"doc": "004", "section": "s", "conclusion": "c9", "reason": "r"}])
    cov = judge.coverage(claims, left).set_index("doc")
    judged = int(claims.verdict.isin([HOLDS, FAILS]).sum())
    assert judged == 2  # S3 holds, S5 fails: the rest are not judged at reduced random sizes
    assert cov.loc["all", ["testable", "judged", "left_out"]].tolist() == [len(claims) + 3, judged, 3]
    assert cov.loc["all", "judged_share"] == round(judged / (len(claims) + 3), 4)
    assert cov.loc["000", "testable"] + cov.loc["004", "testable"] == cov.loc["all", "testable"]
    # control: nothing left out and everything judged reads 1
    assert judge.coverage(claims[claims.verdict != NOT_JUDGED], left.iloc[:0]).judged_share.tolist()[-1] == 1.0


def test_the_shipped_left_out_table_loads_and_a_malformed_one_is_refused(tmp_path):
    shipped = table.load_left_out()
    assert len(shipped) > 0 and set(shipped.doc) <= set(table.DOCS)
    # nothing listed twice in the left-out table is also a claim's conclusion
    assert not set(shipped.conclusion) & set(table.load().conclusion)
    bad = tmp_path / "bad.csv"
    pd.DataFrame([{"doc": "007", "section": "s", "conclusion": "c", "reason": ""}]).to_csv(bad, index=False)
    with pytest.raises(ValueError, match="bad doc '007'"):
        table.load_left_out(bad)


# ---- the report -----------------------------------------------------------------------------------
def _cmp(ids):
    return pd.DataFrame([dict(id=i, quantity="q", description="row", documented="1", unit="", measured=1.0,
                              measured_printed="1", kind="exact", status="match", note="", model_source="",
                              tolerance="") for i in ids])


def test_the_report_shows_conclusions_and_each_familys_claims():
    claims = judge.judge(SYNTHETIC, _synthetic_run(), reduced=True, model_source="random")
    fams = [Family("scalar", "Scalar", ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10"), 1)]
    left = table.load_left_out()
    html = render(str(TEMPLATES), _cmp(["S3"]), {"tables": {}, "figures": {}, "metas": [], "paths": []}, families=fams,
                  claims=claims, claims_summary=judge.counts(claims, fams), claims_coverage=judge.coverage(claims, left),
                  left_out=left)
    conclusions = html[html.index('id="conclusions"'):html.index('id="family-scalar"')]
    assert html.index('id="summary"') < html.index('id="conclusions"')
    total = judge.counts(claims, fams).set_index("family").loc["all"]
    summary = " ".join(html[html.index('id="summary"'):html.index('<nav class="toc"')].split())
    assert (f'<a href="#conclusions">Claims</a>: {total.holds} hold, {total.fails} fail, {total["not judged"]} '
            f"not judged, of {total.claims}.") in summary
    assert '<a href="#S5">S5</a>' in conclusions and "fails" in conclusions
    cover = " ".join(conclusions[conclusions.index('id="claims-coverage"'):].split())
    assert f"2 of the documents' {len(claims) + len(left)} testable conclusions" in cover
    assert f"{len(left)} are not in the table yet" in cover and 'id="claims-left-out"' in conclusions
    assert 'id="claim-S3.routes-add"' in html[html.index('id="family-scalar"'):]
    assert "http://" not in html and "https://" not in html.replace("https://www.w3.org", "")


def test_the_report_renders_without_claims():
    html = render(str(TEMPLATES), _cmp(["S1"]), {"tables": {}, "figures": {}, "metas": [], "paths": []},
                  families=[Family("scalar", "Scalar", ("S1",), 1)])
    assert "No claims were judged" in html


def test_relations_that_read_timings_are_declared_volatile():
    """Their claims.csv rows are left out of the determinism comparison; a timing relation not
    declared volatile would make tests/dag/test_determinism.py fail, a stable one declared volatile
    would hide a real change."""
    reads_time = {n for n, fn in RELATIONS.items() if any(k in inspect.getsource(fn) for k in ("_volatile", "per_process"))}
    assert reads_time == VOLATILE


def test_the_rule_reaches_the_claims_table_not_the_claims_output():
    """The rule's input and output names reach measure_claims' parameters (jobs.call_arguments): an
    input named `claims` would hand it the output path results/claims.csv as the table."""
    inputs = {"files": ["results/S3/routes.csv"], "table": "src/adbench/data/claims.csv",
              "left_out": "src/adbench/data/claims_left_out.csv", "model": []}
    outputs = {"claims": "results/claims.csv", "claims_summary": "results/claims_summary.csv",
               "claims_coverage": "results/claims_coverage.csv"}
    args = call_arguments(judge.measure_claims, inputs, {}, outputs, {"reduced": True, "families": []}, reader=str)
    assert args["table_path"] == "src/adbench/data/claims.csv" and args["files_path"] == inputs["files"]
    assert args["left_out_path"] == inputs["left_out"]
