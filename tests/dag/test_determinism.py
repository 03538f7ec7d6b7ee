"""Two smoke runs in separate directories (the second killed and resumed): every deterministic CSV is identical byte for byte.

Volatile figures (wall times, RSS, stopwatch samples) live either in columns whose name ends in
`_volatile` or in the timing files listed below; everything else must not move between runs.
The lists are explicit, so a newly volatile column or file fails this test until its family.py names it.
"""

import csv
import fnmatch
import io
from pathlib import Path

import pytest

from adbench.families import declared

# Slow as a whole: the comparison of two smoke runs; the negative control of its helpers (which test_slurm.py
# uses too) runs beside it.
pytestmark = [pytest.mark.slow, pytest.mark.dag]

SUFFIX = "_volatile"
# Whole files that are stopwatch output (loop counts calibrated against the clock, raw samples, per-process
# medians and the values computed from them) and *_volatile columns per file: each family declares its own in its
# family.py (volatile_files, volatile_columns); the run's own timeline is the core's.
VOLATILE_FILES = [*(g for f in declared() for g in f.volatile_files),
                  "run_cost.csv"]  # the run's own timeline: wall and CPU seconds of every job
# Columns named *_volatile, per file: the test fails if one appears or disappears unannounced.
VOLATILE_COLUMNS = {glob: set(cols) for f in declared() for glob, cols in f.volatile_columns}
# Timed rows inside otherwise deterministic long tables: (file, id, quantity); comparison.csv also
# carries every row of the volatile values files above.
VOLATILE_ROWS = {(f, "G6", q) for f in ("G6/values.csv", "comparison.csv")
                 for q in ("checkpoint_time_overhead_pct", "checkpoint_time_overhead_pct_transformers")}
TIMED_VALUES = [g for g in VOLATILE_FILES if g.endswith("/values.csv")]  # timed values: S9's, L6's


def timed_claims() -> set[str]:
    """Claims whose test rests on timings (relations registered rests_on="timing"): their claims.csv rows quote them."""
    from adbench.claims import table
    from adbench.claims.registry import load_all

    timed = {name for name, rel in load_all().items() if rel.rests_on == "timing"}
    claims = table.load()
    return set(claims.claim[claims.relation.isin(timed)])


def matches(rel: str, patterns) -> list[str]:
    """The patterns (file globs relative to results/) that `rel` matches."""
    return [p for p in patterns if fnmatch.fnmatchcase(rel, p)]


def rows(text: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a CSV, every cell as its exact text."""
    header, *body = list(csv.reader(io.StringIO(text)))
    return header, body


def stable_view(rel: str, text: str, timed: set[tuple[str, str]]) -> tuple[list[str], list[list[str]]]:
    """The CSV without its volatile columns and rows (cells kept as text, so still a byte comparison)."""
    header, body = rows(text)
    found = {c for c in header if c.endswith(SUFFIX)}
    declared = set().union(*[VOLATILE_COLUMNS[p] for p in matches(rel, VOLATILE_COLUMNS)])
    assert found == declared, f"{rel}: volatile columns {sorted(found)}, declared {sorted(declared)}"
    keep = [i for i, c in enumerate(header) if c not in found]
    skip = {(i, q) for f, i, q in VOLATILE_ROWS if f == rel} | (timed if rel == "comparison.csv" else set())
    if skip:
        ix, iq = header.index("id"), header.index("quantity")
        body = [r for r in body if (r[ix], r[iq]) not in skip]
    if rel == "claims.csv":
        ic, volatile = header.index("claim"), timed_claims()
        body = [r for r in body if r[ic] not in volatile]
    return [header[i] for i in keep], [[r[i] for i in keep] for r in body]


def timed_rows(results: Path) -> set[tuple[str, str]]:
    """(id, quantity) of every row of the wholly volatile values files."""
    out = set()
    for rel in TIMED_VALUES:
        header, body = rows((results / rel).read_text())
        out |= {(r[header.index("id")], r[header.index("quantity")]) for r in body}
    return out


def compare_runs(a: Path, b: Path) -> dict:
    """Compare every CSV under two results/ trees; returns what was compared, identical and excluded."""
    files_a = {str(p.relative_to(a)) for p in a.rglob("*.csv")}
    files_b = {str(p.relative_to(b)) for p in b.rglob("*.csv")}
    assert files_a == files_b, f"different CSV sets: {sorted(files_a ^ files_b)}"
    timed = timed_rows(a)
    report = {"compared": [], "identical": [], "excluded": [], "filtered": [], "differ": []}
    for rel in sorted(files_a):
        if matches(rel, VOLATILE_FILES):
            report["excluded"].append(rel)
            continue
        report["compared"].append(rel)
        ta, tb = (a / rel).read_text(), (b / rel).read_text()
        if ta == tb:
            report["identical"].append(rel)
        view_a, view_b = stable_view(rel, ta, timed), stable_view(rel, tb, timed)
        if ta != tb:
            (report["filtered"] if view_a == view_b else report["differ"]).append(rel)
    for pattern in [*VOLATILE_FILES, *VOLATILE_COLUMNS]:  # every listed exclusion still names a real file
        assert any(fnmatch.fnmatchcase(r, pattern) for r in files_a), f"stale exclusion {pattern}"
    return report


def test_two_smoke_runs_give_identical_deterministic_csvs(smoke, resumed):
    # The session's smoke run is the first run; the second is the session's kill-and-resume run in
    # another directory (conftest `resumed`: a job killed mid-write and re-run must not move a digit either).
    assert resumed["returncode"] == 0, resumed["out"][-3000:]
    report = compare_runs(smoke[0] / "results", resumed["project"] / "results")
    print(f"determinism: {len(report['compared'])} CSVs compared, {len(report['identical'])} identical byte for byte, "
          f"{len(report['filtered'])} identical without their declared volatile columns/rows, "
          f"{len(report['excluded'])} timing files excluded")
    assert not report["differ"], f"deterministic CSVs differ between two runs: {report['differ']}"
    assert len(report["compared"]) > 100 and len(report["excluded"]) >= len(VOLATILE_FILES)


def test_comparison_catches_a_changed_cell_and_an_undeclared_volatile_column(tmp_path):
    # Negative controls for the comparison itself, on tiny fabricated trees.
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        for rel in [*TIMED_VALUES, "S9/calibration.csv", "S9/runs/1/samples.csv", "S9/samples.csv",
                    "S9/per_process.csv", "L6/timing/calibration.csv", "L6/timing/runs/1/samples.csv",
                    "L6/timing/samples.csv", "L6/timing/per_process.csv", "G6/timing.csv", "run_cost.csv"]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("id,quantity,value\nX,t,1\n")
        for rel, cols in [("C1/train/correct/run.csv", "train_seconds_volatile"), ("C1/summary.csv", "train_seconds_volatile"),
                          ("G6/saved.csv", "forward_s_volatile"),
                          ("G6/summary.csv", ",".join(sorted(VOLATILE_COLUMNS["G6/summary.csv"])))]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(f"k,{cols}\n1,{'7,' * cols.count(',')}{root.name}\n")
        (root / "S1").mkdir(exist_ok=True)
    (a / "S1/values.csv").write_text("id,quantity,value\nS1,x,1.0\n")
    (b / "S1/values.csv").write_text("id,quantity,value\nS1,x,1.0\n")
    report = compare_runs(a, b)
    assert report["differ"] == [] and "C1/summary.csv" in report["filtered"]
    (b / "S1/values.csv").write_text("id,quantity,value\nS1,x,1.0000000000000002\n")
    assert compare_runs(a, b)["differ"] == ["S1/values.csv"]
    (a / "S1/values.csv").write_text("id,quantity,value,wall_s_volatile\nS1,x,1.0,3\n")
    with pytest.raises(AssertionError, match="volatile columns"):
        compare_runs(a, b)
