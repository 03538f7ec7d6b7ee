"""The claims table is validated at load; the judge gives each claim its verdict, margin and fragility with a
reason; the job writes the claims, their counts and the coverage; the report puts what needs attention first."""

from __future__ import annotations

import pandas as pd
import pytest

from adbench.claims import judge, table
from adbench.families import Family, id_order
from adbench.jobs import call_arguments, read_input
from adbench.outcomes import DEFINITION, FAILS, HOLDS, NOT_JUDGED
from adbench.render import TEMPLATES
from adbench.render.page import render_report, render
from claims_fixture import load

REAL = load()


def _table(rows: list[dict]) -> pd.DataFrame:
    base = {"claim": "S3.routes-add", "id": "S3", "doc": "000", "line": "71", "section": "s",
            "conclusion": "Routes add.", "relation": "routes_add", "tolerance": "64 ulps", "scope": "any",
            "size": "independent", "model": "", "config": "", "scope_note": ""}
    return pd.DataFrame([{**base, **r} for r in rows], columns=table.COLUMNS)


# ---- the table ------------------------------------------------------------------------------------------
def test_the_shipped_table_loads_and_covers_every_family():
    claims = table.load()
    assert {c[0] for c in claims.id} >= set(id_order())  # every declared family's letter


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
    ({"scope": "pretrained", "model": "gpt2"}, "must say in scope_note"),
    ({"scope": "pretrained", "scope_note": "trained weights"}, "must name its model"),
    ({"line": "0"}, "line '0' must be"),
    ({"line": "eight"}, "line 'eight' must be"),
    ({"config": "scalar.b"}, "config: config dependency 'scalar.b' must read key=value"),
])
def test_a_malformed_row_is_an_error(edit, message):
    with pytest.raises(ValueError, match=message):
        table.validate(_table([edit]))


def test_a_duplicate_claim_id_is_an_error():
    with pytest.raises(ValueError, match="duplicate claim id"):
        table.validate(_table([{}, {"conclusion": "Again."}]))


def test_every_claim_cites_a_line_inside_its_seed_document():
    """doc:line points into the seed file (when the seeds are at hand: ../shared/seeds beside the checkout)."""
    from pathlib import Path

    seeds = Path(__file__).resolve().parents[2] / "shared" / "seeds"
    files = {p.name[:3]: p for p in seeds.glob("*.txt")}
    if not files:
        pytest.skip("the seed documents are not beside this checkout")
    lengths = {d: len(p.read_text(encoding="utf-8").splitlines()) for d, p in files.items()}
    claims = table.load()
    over = claims[[int(r.line) > lengths[r.doc] for r in claims.itertuples()]]
    assert over.empty, over[["claim", "doc", "line"]]


# ---- the judge ----------------------------------------------------------------------------------------------
TEST_CLAIMS = _table([
    {"claim": "S3.routes-add"},
    {"claim": "S5.central-beats-forward", "id": "S5", "relation": "central_beats_forward"},
    {"claim": "S1.secant-not-rounding", "id": "S1", "relation": "secant_gap_exceeds_rounding", "scope": "pretrained",
     "model": "gpt2", "scope_note": "trained weights"},
    {"claim": "S4.wrong-order-silent-zero", "id": "S4", "relation": "wrong_order_leaves_zero_silently",
     "scope": "setup", "scope_note": "their seed draw"},
    {"claim": "S5.truncation-orders", "id": "S5", "relation": "truncation_orders", "size": "dependent"},
    {"claim": "S1.tape-matches-torch64", "id": "S1", "relation": "tape_equals_torch64",
     "config": "scalar.reference_h=0.1"},
])


def _broken() -> dict:
    """The real tables with one claim broken (the best forward error moved next to the best central one)."""
    t = dict(REAL)
    sweep = t["S5/sweep"].copy()
    sweep.loc[sweep.forward_err.idxmin(), "forward_err"] = 2 * sweep.central_err.min()
    t["S5/sweep"] = sweep
    return t


def test_the_judge_gives_each_verdict_with_its_reason():
    run = judge.Run(reduced=True, models={"gpt2": "random-init"}, settings={"scalar": {"reference_h": 0.2}})
    out = judge.judge(TEST_CLAIMS, _broken(), run).set_index("claim")
    assert list(out.columns) == judge.OUTPUT[1:]
    assert out.verdict.to_dict() == {
        "S3.routes-add": HOLDS, "S5.central-beats-forward": FAILS, "S1.secant-not-rounding": NOT_JUDGED,
        "S4.wrong-order-silent-zero": NOT_JUDGED, "S5.truncation-orders": NOT_JUDGED,
        "S1.tape-matches-torch64": NOT_JUDGED}
    r = out.reason
    assert "needs the pretrained gpt2 weights; this run used random-init" in r["S1.secant-not-rounding"]
    assert "would read holds" in r["S1.secant-not-rounding"]
    assert "their seed draw" in r["S4.wrong-order-silent-zero"] and "reduced sizes" in r["S5.truncation-orders"]
    assert ("configuration differs from the documents (scalar.reference_h = 0.2; documents 0.1)"
            in r["S1.tape-matches-torch64"])
    assert "best central error" in r["S5.central-beats-forward"]  # a failure is explained by its own numbers
    assert out.margin["S5.central-beats-forward"] < 0 and out.margin_unit["S5.central-beats-forward"] == "decades"


def test_a_full_size_failure_is_explained_by_this_runs_numbers_and_a_missing_table_is_not_measured():
    t = _broken()
    del t["S3/routes"]
    out = judge.judge(TEST_CLAIMS, t, judge.Run(models={"gpt2": "pretrained"})).set_index("claim")
    best = t["S5/sweep"].central_err.min()  # the moved cell: forward = 2 x central, printed by the relation itself
    assert out.reason["S5.central-beats-forward"] == (f"best central error {best:.4g} vs best forward error "
                                                      f"{2 * best:.4g} (x2); margin -0.699 decades (best forward "
                                                      "over best central, at least x10)")
    assert out.verdict["S1.secant-not-rounding"] == HOLDS and out.verdict["S5.truncation-orders"] == HOLDS
    assert out.reason["S3.routes-add"] == "not measured: no S3/routes"
    assert out.verdict["S4.wrong-order-silent-zero"] == NOT_JUDGED  # a setup claim stays unjudged everywhere


def test_a_relation_that_raises_is_not_judged_with_the_error():
    t = dict(REAL)
    t["S1/gradients"] = t["S1/gradients"].drop(columns="dL_db")
    out = judge.judge(TEST_CLAIMS, t).set_index("claim")
    assert out.verdict["S1.tape-matches-torch64"] == NOT_JUDGED
    assert "the relation failed on this run's tables: AttributeError" in out.reason["S1.tape-matches-torch64"]


def test_definitions_timing_and_margins_mark_fragility():
    from adbench.claims import judged, near
    from adbench.claims.registry import Relation

    def slope(t):
        return judged("slope", near(t["S5/slopes"].slope.iloc[1], 2.0, 0.1, "central slope", "slope", 0.02))
    rels = {"near_edge": Relation("near_edge", slope, ("S5/slopes",)),
            "timed": Relation("timed", slope, ("S5/slopes",), rests_on="timing"),
            "defined": Relation("defined", slope, ("S5/slopes",), definition=True)}
    claims = _table([{"claim": f"S5.{n.replace('_', '-')}", "id": "S5", "relation": n} for n in rels])
    t = dict(REAL)
    s = t["S5/slopes"].copy()
    s.loc[1, "slope"] = 2.09  # 0.01 inside its boundary, within the 0.02 band
    t["S5/slopes"] = s
    rows = [judge.judge_one(c, t, judge.Run(), rels) for _, c in claims.iterrows()]
    by = {r["claim"]: r for r in rows}
    assert by["S5.near-edge"]["fragile"].startswith("margin +0.01 slope within its band of 0.02")
    assert by["S5.timed"]["fragile"] == "rests on timing (host and load dependent)"
    assert by["S5.defined"]["verdict"] == DEFINITION
    assert judge.judge_one(claims.iloc[0], REAL, judge.Run(), rels)["fragile"] == ""  # control: the real slope


def test_counts_keep_proxies_apart():
    claims = _table([{"claim": "S3.routes-add"}, {"claim": "S3.routes-add-proxy", "scope": "proxy",
                                                  "scope_note": "a stand-in"}])
    out = judge.judge(claims, REAL)
    fams = [Family("scalar", "Scalar", ("S3",), 1)]
    c = judge.counts(out, fams).set_index("family").loc["all"]
    assert (c[HOLDS], c["proxy holds"], c["claims"]) == (1, 1, 2)


def _reading(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    """A reading: (doc, claims, full_strength) per statement; no claim -> a reason."""
    return pd.DataFrame([{"doc": d, "line": str(i + 1), "statement": f"s{i}", "claims": c, "full_strength": f,
                          "reason": "" if c else "needs CUDA"} for i, (d, c, f) in enumerate(rows)],
                        columns=table.READING_COLUMNS)


# a fabricated judged table: one claim of each kind the coverage must tell apart
JUDGED = pd.DataFrame([("A1.holds", HOLDS, "any"), ("A1.holds-too", HOLDS, "any"), ("A1.fails", FAILS, "any"),
                       ("A1.unjudged", NOT_JUDGED, "pretrained"), ("A1.defined", DEFINITION, "any"),
                       ("A1.stand-in", HOLDS, "proxy")], columns=["claim", "verdict", "scope"])
READING = _reading([
    ("000", "A1.holds", "yes"),                    # counted: holds
    ("000", "A1.holds A1.fails", "yes"),           # counted: fails (one of its claims fails)
    ("000", "A1.holds A1.unjudged", "yes"),        # not judged: one claim is not judged here
    ("000", "A1.defined", "yes"),                  # a definition is shown, never counted
    ("004", "A1.stand-in", "yes"),                 # a proxy
    ("004", "A1.holds-too", "no: too lenient"),    # judged, but below the essay's strength
    ("004", "A1.holds A1.planned", "yes"),         # a planned claim not in the table yet
    ("004", "", ""),                               # no claim (with a reason)
    ("004", "A1.holds-too", "yes"),                # counted: holds
])


def test_coverage_counts_full_strength_statements_over_the_whole_reading():
    cov = judge.coverage(JUDGED, READING).set_index("doc")
    # by hand: 000 has 4 statements, 2 counted (1 holds, 1 fails); 004 has 5, 1 counted; all: 3 of 9
    assert cov.loc["000", ["statements", "judged_full_strength", HOLDS, FAILS]].tolist() == [4, 2, 1, 1]
    assert cov.loc["004", ["statements", "judged_full_strength", HOLDS, FAILS]].tolist() == [5, 1, 1, 0]
    a = cov.loc["all"]
    assert (a.statements, a.judged_full_strength, a.share) == (9, 3, round(3 / 9, 4))
    assert [a[s] for s in judge.STANDINGS] == [1, 1, 1, 1, 1, 1, 2, 1]  # no claim, planned ... holds, fails
    assert sum(a[s] for s in judge.STANDINGS) == a.statements  # every statement has exactly one standing


def test_a_statement_judged_below_the_essays_strength_or_by_a_planned_claim_does_not_count():
    """Negative control: the same reading with every statement marked full strength and the planned claim added
    counts two more (the lenient row and the one that waited on its planned claim)."""
    strong = READING.assign(full_strength=READING.full_strength.where(READING.claims == "", "yes"))
    judged = pd.concat([JUDGED, pd.DataFrame([("A1.planned", HOLDS, "any")], columns=JUDGED.columns)])
    assert judge.coverage(judged, strong).set_index("doc").loc["all", "judged_full_strength"] == 5


def test_judge_claims_reads_the_registered_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = []
    for key, df in REAL.items():
        p = tmp_path / "results" / f"{key}.csv"
        p.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(p, index=False)
        paths.append(f"results/{key}.csv")
    claims_path = tmp_path / "claims.csv"
    TEST_CLAIMS.to_csv(claims_path, index=False)
    reading = tmp_path / "reading.csv"
    _reading([("000", "S1.tape-matches-torch64", "yes"), ("000", "", "")]).to_csv(reading, index=False)
    out = judge.judge_claims(paths, str(claims_path), str(reading), [{"model_source": "random-init"}],
                               [{"key": "scalar", "title": "Scalar", "ids": ["S1", "S3", "S4", "S5"], "order": 1}],
                               settings={"scalar": {"reference_h": 0.1}})
    assert out["claims"].set_index("claim").verdict["S1.tape-matches-torch64"] == HOLDS
    assert out["claims_summary"].family.tolist() == ["scalar", "all"]
    assert out["claims_coverage"].set_index("doc").loc["all", ["statements", "judged_full_strength"]].tolist() == [2, 1]


def test_the_rule_reaches_the_claims_table_not_the_claims_output():
    """The rule's input and output names reach judge_claims' parameters (jobs.call_arguments): an input named
    `claims` would hand it the output path results/claims.csv as the table."""
    inputs = {"files": ["results/S3/routes.csv"], "table": "src/adbench/data/claims.csv",
              "reading": "docs/reading.csv", "model": []}
    outputs = {"claims": "results/claims.csv", "claims_summary": "results/claims_summary.csv",
               "claims_coverage": "results/claims_coverage.csv"}
    args = call_arguments(judge.judge_claims, inputs, {}, outputs, {"reduced": True, "families": []}, reader=str)
    assert args["table_path"] == "src/adbench/data/claims.csv" and args["files_path"] == inputs["files"]
    assert args["reading_path"] == inputs["reading"]


# ---- the report -----------------------------------------------------------------------------------------------
def _cmp(ids):
    return pd.DataFrame([dict(id=i, quantity="q", description="row", documented="1", unit="", measured=1.0,
                              measured_printed="1", kind="exact", status="match", note="", model_source="",
                              tolerance="") for i in ids])


FAMS = [Family("scalar", "Scalar", tuple(f"S{i}" for i in range(1, 11)), 1)]


def test_the_report_puts_failing_fragile_and_unjudged_claims_first(tmp_path):
    """Built as the render rule builds it: its own input files, read by jobs' readers (text cells for the claims and
    the reading, so document 000 prints as 000)."""
    run = judge.Run(reduced=True, models={"gpt2": "random-init"}, settings={"scalar": {"reference_h": 0.2}})
    claims = judge.judge(TEST_CLAIMS, _broken(), run)
    files = {"claims": tmp_path / "claims.csv", "claims_summary": tmp_path / "claims_summary.csv",
             "claims_coverage": tmp_path / "claims_coverage.csv", "comparison": tmp_path / "comparison.csv",
             "changes": tmp_path / "changes.csv", "claims_changes": tmp_path / "claims_changes.csv"}
    claims.to_csv(files["claims"], index=False)
    judge.counts(claims, FAMS).to_csv(files["claims_summary"], index=False)
    _cmp(["S3"]).to_csv(files["comparison"], index=False)
    pd.DataFrame(columns=["archive"]).to_csv(files["changes"], index=False)
    pd.DataFrame(columns=["archive"]).to_csv(files["claims_changes"], index=False)
    reading_path = tmp_path / "reading.csv"  # both documents' ids, which a numeric reader turns into 0 and 4
    reading = _reading([("000", "S3.routes-add", "yes"), ("004", "", ""), ("000", "S5.central-beats-forward", "yes")])
    reading.to_csv(reading_path, index=False)
    judge.coverage(claims, table.load_reading(reading_path)).to_csv(files["claims_coverage"], index=False)
    inputs = {k: str(v) for k, v in files.items()} | {"reading": str(reading_path), "files": [], "model": []}
    args = call_arguments(render_report, inputs, {}, {"html": str(tmp_path / "r.html")}, {}, reader=read_input)
    import yaml
    from pathlib import Path

    settings = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())
    settings["scalar"]["reference_h"] = 0.2
    html = render_report(**args, reduced=True, rules=[], families=[f.as_dict() for f in FAMS],
                          settings=settings)["html"].decode()
    conclusions = html[html.index('id="conclusions"'):html.index('id="family-scalar"')]
    first, rest = conclusions.index('id="claims-attention"'), conclusions.index('id="claims-all"')
    assert first < conclusions.index('id="claim-S5.central-beats-forward"') < rest  # the failing claim: first
    assert conclusions.index('id="claim-S3.routes-add"') > rest  # a claim that holds: after
    summary = " ".join(conclusions[conclusions.index('id="claims-summary"'):].split())
    assert 'Fail: <a href="#claim-S5.central-beats-forward" class="mono">S5.central-beats-forward</a>.' in summary
    assert "000:71" in conclusions and "Tolerance: 64 ulps" in conclusions and "Margin: " in conclusions
    uncounted = conclusions[conclusions.index('id="claims-uncounted"'):]
    assert '<span class="mono doc-line">004:2</span> s1' in uncounted and "needs CUDA" in uncounted
    assert "000:1</span> s0" not in uncounted  # a counted statement is not listed
    cover = " ".join(conclusions[conclusions.index('id="claims-coverage"'):].split())
    assert ("2 of 3 statements of the essays' reading (<code>docs/reading.csv</code>) judged at full strength on "
            "this run (1 hold, 1 fail" in cover)
    assert "000: 2 of 2; 004: 0 of 1" in cover
    assert "http://" not in html and "https://" not in html.replace("https://www.w3.org", "")


def test_the_report_renders_without_claims():
    html = render(str(TEMPLATES), _cmp(["S1"]), {"tables": {}, "figures": {}, "metas": [], "paths": []},
                  families=[Family("scalar", "Scalar", ("S1",), 1)])
    assert "No claims were judged" in html
