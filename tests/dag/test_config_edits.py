"""A valid edit of a documented parameter still gives a complete report: the rows measured under the documents'
settings read "not judged: configuration differs from the documents (...)", nothing is MISSING, no claim's
relation fails on a label built from a configured value.

On a copy of the session's completed smoke run, with four edits at once (a reviewer found that the first two
stopped the run with no report); Snakemake re-runs only the jobs whose parameters changed, then the report."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from conftest import MEASURED, SMOKE, copy_completed, snakemake

pytestmark = [pytest.mark.slow, pytest.mark.dag]

EDITS = {"scalar": {"reference_h": 0.2}, "lifetimes": {"nanogpt_steps": 20},
         "charlm": {"train": {"loss_scale": 10.0}},
         "gpt2": {"prompt": "The capital of Italy is", "target": " Rome"}}
# documented rows that depend on each edited key, and so must say that their configuration differs
AFFECTED = {("S1", "central_dL_da"): "scalar.reference_h", ("L2", "nanogpt_microbatches"): "lifetimes.nanogpt_steps",
            ("G1", "target_nll"): "gpt2.prompt"}


@pytest.fixture(scope="module")
def edited(smoke, tmp_path_factory):
    import time
    project = copy_completed(smoke[0], tmp_path_factory.mktemp("edited") / "project")
    (project / "edits.yaml").write_text(yaml.safe_dump(EDITS))
    t0 = time.perf_counter()
    res = snakemake(project, "--cores", "2", *SMOKE, "edits.yaml")
    MEASURED["smoke run with four documented parameters edited (re-runs only what they touch)"] = \
        time.perf_counter() - t0
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    return project


def test_the_report_is_complete_and_nothing_is_missing(edited, smoke):
    report = edited / "report/report.html"
    assert report.stat().st_mtime > (smoke[0] / "report/report.html").stat().st_mtime  # rendered again
    comparison = pd.read_csv(edited / "results/comparison.csv", dtype=str, keep_default_na=False)
    assert not (comparison.status == "MISSING").any(), comparison[comparison.status == "MISSING"]
    assert not (comparison.status == "MISMATCH").any(), comparison[comparison.status == "MISMATCH"]


def test_the_rows_that_depend_on_an_edited_key_say_so(edited):
    comparison = pd.read_csv(edited / "results/comparison.csv", dtype=str, keep_default_na=False)
    rows = comparison.set_index(["id", "quantity"])
    for key, setting in AFFECTED.items():
        status, note = rows.loc[key, ["status", "note"]]
        assert status == "not judged" and note.startswith("configuration differs from the documents") \
            and setting in note, (key, status, note)
    labelled = comparison.note.str.startswith("configuration differs from the documents")
    assert labelled.sum() >= len(AFFECTED)
    # control: a row that depends on none of the edited keys is judged as before
    assert rows.loc[("S1", "tape_dL_da"), "status"] == "match"


def test_no_claim_breaks_on_a_configured_value(edited):
    claims = pd.read_csv(edited / "results/claims.csv", dtype=str, keep_default_na=False)
    broken = claims[claims.reason.str.startswith("the relation failed")]
    assert broken.empty, broken[["claim", "reason"]]
    html = (edited / "report/report.html").read_text(encoding="utf-8")
    assert 'id="claims-summary"' in html and "configuration differs from the documents" in html
