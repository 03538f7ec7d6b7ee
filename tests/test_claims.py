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
    out = judge.measure_claims(paths, str(claims_path), [{"model_source": "random"}],
                               [{"key": "scalar", "title": "Scalar", "ids": ["S3", "S5"], "order": 1}], reduced=False)
    assert out["claims"].set_index("claim").verdict["S3.routes-add"] == HOLDS
    assert out["claims_summary"].family.tolist() == ["scalar", "all"]


# ---- the report -----------------------------------------------------------------------------------
def _cmp(ids):
    return pd.DataFrame([dict(id=i, quantity="q", description="row", documented="1", unit="", measured=1.0,
                              measured_printed="1", kind="exact", status="match", note="", model_source="",
                              tolerance="") for i in ids])


def test_the_report_shows_conclusions_and_each_familys_claims():
    claims = judge.judge(SYNTHETIC, _synthetic_run(), reduced=True, model_source="random")
    fams = [Family("scalar", "Scalar", ("S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10"), 1)]
    html = render(str(TEMPLATES), _cmp(["S3"]), {"tables": {}, "figures": {}, "metas": [], "paths": []}, families=fams,
                  claims=claims, claims_summary=judge.counts(claims, fams))
    conclusions = html[html.index('id="conclusions"'):html.index('id="family-scalar"')]
    assert html.index('id="summary"') < html.index('id="conclusions"')
    total = judge.counts(claims, fams).set_index("family").loc["all"]
    summary = " ".join(html[html.index('id="summary"'):html.index('<nav class="toc"')].split())
    assert (f'<a href="#conclusions">Claims</a>: {total.holds} hold, {total.fails} fail, {total["not judged"]} '
            f"not judged, of {total.claims}.") in summary
    assert '<a href="#S5">S5</a>' in conclusions and "fails" in conclusions
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
    inputs = {"files": ["results/S3/routes.csv"], "table": "src/adbench/data/claims.csv", "model": []}
    outputs = {"claims": "results/claims.csv", "claims_summary": "results/claims_summary.csv"}
    args = call_arguments(judge.measure_claims, inputs, {}, outputs, {"reduced": True, "families": []}, reader=str)
    assert args["table_path"] == "src/adbench/data/claims.csv" and args["files_path"] == inputs["files"]
