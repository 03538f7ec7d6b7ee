"""A user's run compared with a shipped reference: compare_to names the reference archive by its path, and the report
shows "What changed" against it. At smoke sizes, with a smoke reference made the way `make reference` makes one:
the session's smoke run archived, then compacted (adbench.history.reference.compact) into ref/archive/<label>."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import yaml

from adbench.history.reference import compact, compact_files
from conftest import MEASURED, SMOKE, copy_completed, snakemake

pytestmark = [pytest.mark.slow, pytest.mark.dag]
LABEL = "smoke-reference"


@pytest.fixture(scope="module")
def compared(smoke, tmp_path_factory):
    import time

    project = copy_completed(smoke[0], tmp_path_factory.mktemp("reference") / "project")
    (project / "label.yaml").write_text(yaml.safe_dump({"archive": {"label": LABEL}}))
    res = snakemake(project, "archive", "--cores", "2", *SMOKE, "label.yaml")  # the target before the greedy --configfile
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    manifest = compact(project / "archive" / LABEL, project / "ref" / "archive" / LABEL)
    shutil.rmtree(project / "archive")  # only the reference's path names it now
    (project / "compare.yaml").write_text(yaml.safe_dump({"compare_to": [f"ref/archive/{LABEL}"]}))
    t0 = time.perf_counter()
    res = snakemake(project, "--cores", "2", *SMOKE, "compare.yaml")
    MEASURED["smoke run compared with a reference archive (re-runs what changed and the report)"] = \
        time.perf_counter() - t0
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    return project, manifest


def test_the_compact_archive_holds_what_what_changed_reads_and_no_more(compared):
    project, manifest = compared
    files = set(manifest["files"])
    assert {"comparison.csv", "claims.csv", "S1/values.csv", "S1/meta.json", "S9/samples.csv"} <= files
    assert not any(f.endswith((".pt", ".svg")) or "/runs/" in f for f in files)  # no weights, figures, per-process
    assert sorted(files) == [str(p) for p in compact_files(project / "ref" / "archive" / LABEL)]


def test_what_changed_reads_the_reference(compared):
    project, _ = compared
    changes = pd.read_csv(project / "results/changes.csv", dtype=str, keep_default_na=False)
    assert set(changes.archive) == {LABEL} and len(changes) > 100
    # the same code and data: nothing but timings may move, and no claim changed its verdict
    moved = changes[changes.status == "moved"]
    assert moved.kind.isin(["timing"]).all(), moved[["id", "quantity", "kind"]]
    claims = pd.read_csv(project / "results/claims_changes.csv", dtype=str, keep_default_na=False)
    flipped = claims[(claims.status == "changed") & (claims.fragile == "")]
    assert flipped.empty, flipped[["claim", "old", "new"]]
    html = (project / "report/report.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="changes">'):]
    assert LABEL in section[:section.index("</section>")]
