"""adbench.verdicts.summary: outcome counts and the reproduction score per family and overall, beside each
family's claims counts; and the report's summary section that shows them."""

import pandas as pd
import pytest

from adbench.render import TEMPLATES
from adbench.verdicts.summary import CLAIMS_COLUMNS, summary_table, with_claims
from adbench.verdicts.verdict import STATUSES
from documented_fixture import FAMS


def _cmp(statuses, ids=None):
    return pd.DataFrame([dict(id=(ids or ["S1"] * len(statuses))[i], quantity=f"q{i}", description=f"row {i}",
                              documented="1", unit="", measured=1.0, measured_printed="1", kind="exact", status=s,
                              note="", model_source="", tolerance="") for i, s in enumerate(statuses)])


def test_summary_table_counts_five_outcomes_and_scores_judged_rows():
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
    cmp = _cmp(["match", "match", "MISMATCH"], ids=["S1", "T1", "C1"])
    claims = pd.DataFrame([{"family": "scalar", "holds": 3, "fails": 1, "not judged": 2, "claims": 6},
                           {"family": "tensor", "holds": 2, "fails": 0, "not judged": 0, "claims": 2},
                           {"family": "all", "holds": 5, "fails": 1, "not judged": 2, "claims": 8}])
    table = with_claims(summary_table(cmp, FAMS), claims)
    assert list(table.columns[-len(CLAIMS_COLUMNS):]) == list(CLAIMS_COLUMNS.values())
    t = table.set_index("family")
    counted = ["claims_holds", "claims_fails", "claims_not_judged", "claims"]
    assert t.loc["scalar", counted].tolist() == [3, 1, 2, 6]
    assert t.loc["charlm", counted].tolist() == [0, 0, 0, 0]   # no claims row: 0
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
