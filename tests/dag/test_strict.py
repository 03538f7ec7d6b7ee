"""Strict mode on a copy of the completed smoke run (no DAG of its own): the check after the report fails
the run, naming the claim that regressed against the compared archive and the MISMATCH row; it leaves the
report written and no stamp, and a non-strict run then has nothing to redo."""

from pathlib import Path

import pandas as pd
import pytest

from adbench.history.archive import snapshot

from conftest import SMOKE, copy_completed, dry_run, snakemake

pytestmark = [pytest.mark.slow, pytest.mark.dag]


def _edit(path: Path, column: str, key, **cells) -> None:
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    rows = df[column] == key
    assert rows.sum() == 1, (path, key)
    for col, value in cells.items():
        df.loc[rows, col] = value
    df.to_csv(path, index=False)


def test_strict_mode_fails_after_the_report_and_leaves_nothing_to_redo(smoke, tmp_path):
    project = copy_completed(smoke[0], tmp_path / "project")
    results = project / "results"
    claims = pd.read_csv(results / "claims.csv", dtype=str, keep_default_na=False)
    held = claims[claims.verdict == "holds"]
    regressed, improved = held.claim.iloc[0], held.claim.iloc[1]
    # the compared archive: this run, except that `improved` failed then (fails -> holds: no regression)
    files = [str(p) for p in results.rglob("*") if p.suffix in (".csv", ".json") and ".manifests" not in p.parts]
    (project / "archive").mkdir(exist_ok=True)
    snapshot(files, str(results), str(project / "archive/base"), False,
             {"label": "base", "versions": {"torch": "2.13.0"}, "device": "cpu"})
    _edit(project / "archive/base/claims.csv", "claim", improved, verdict="fails", reason="failed then")
    # this run, as after an upgrade: one claim that held fails now, one documented row is MISMATCH
    _edit(results / "claims.csv", "claim", regressed, verdict="fails", reason="broken by the upgrade")
    cmp = pd.read_csv(results / "comparison.csv", dtype=str, keep_default_na=False)
    row = cmp[cmp.status == "match"].iloc[0]
    cmp.loc[row.name, "status"] = "MISMATCH"
    cmp.to_csv(results / "comparison.csv", index=False)
    before = (project / "report/report.html").stat().st_mtime_ns

    res = snakemake(project, "--cores", "2", *SMOKE, "--config", "strict=True", "compare_to=[base]")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    ident = claims.set_index("claim").id[regressed]
    assert f"adbench strict: claim {regressed} ({ident}) fails now and held in base: broken by the upgrade" in out
    assert f"adbench strict: MISMATCH {row.id} {row.quantity}: documented {row.documented}" in out
    assert ("adbench strict: FAILED: 1 claim(s) that held in the compared run fail now, 1 row(s) MISMATCH or "
            "MISSING") in out
    assert f"claim {improved}" not in out                                         # fails -> holds: not listed
    assert "Error in rule render_strict_check" in out
    # the report is written (after the check's inputs) and lists the changed claims; no stamp of a pass
    html = (project / "report/report.html").read_text()
    assert (project / "report/report.html").stat().st_mtime_ns > before
    assert f'href="#claim-{regressed}"' in html[html.index('<section id="changes">'):]
    assert not (results / "strict_check.txt").exists()
    # nothing but the check is left to do: not in strict mode, nothing; in strict mode, the check alone
    assert dry_run(project, "--config", "compare_to=[base]") == set()
    assert dry_run(project, "--config", "strict=True", "compare_to=[base]") == {"render_strict_check"}
