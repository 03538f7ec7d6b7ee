"""Strict mode's decision (adbench.verdicts.strict): which claims regressed against the compared run and
which rows are MISMATCH or MISSING, with negative controls (nothing regressed: it passes; a claim that
failed in both runs is no regression; with nothing to compare to only rows count)."""

import pandas as pd

from adbench.outcomes import FAILS, HOLDS, NOT_JUDGED
from adbench.history.changes import claim_changes
from adbench.verdicts.strict import check, lines, run

ARCHIVE = "2026-11-29_torch2.13.0_transformers5.24.0_cpu"


def _claims(verdicts: dict[str, str], fragile: dict[str, str] | None = None) -> pd.DataFrame:
    return pd.DataFrame([{"claim": c, "id": c.split(".")[0], "scope": "any", "verdict": v,
                          "fragile": (fragile or {}).get(c, ""), "reason": f"{c} reads {v}",
                          "conclusion": f"{c} is true.", "doc": "000", "section": "s"} for c, v in verdicts.items()])


def _cmp(statuses: list[str]) -> pd.DataFrame:
    return pd.DataFrame([{"id": "S1", "quantity": f"q{i}", "documented": "0.25", "kind": "exact", "status": s,
                          "measured": None if s == "MISSING" else 0.5,
                          "measured_printed": "—" if s == "MISSING" else "0.5",
                          "note": "outside the tolerance" if s == "MISMATCH" else ""} for i, s in enumerate(statuses)])


def _check(old: dict | None, new: dict, statuses=("match", "match"), compared=(ARCHIVE,)):
    now = _claims(new)
    changes = pd.concat([claim_changes(None if old is None else _claims(old), now, a) for a in compared]) \
        if compared else pd.DataFrame(columns=["archive", "claim", "id", "old", "new", "status", "new_reason"])
    return check(_cmp(list(statuses)), changes, list(compared), now)


def test_a_run_without_regressions_passes():
    result = _check({"S1.a": HOLDS, "S2.b": NOT_JUDGED}, {"S1.a": HOLDS, "S2.b": HOLDS})
    assert result.ok and result.problems == [] and result.notes == []
    assert lines(result)[-1] == "adbench strict: passed: no claim regressed and no row is MISMATCH or MISSING"


def test_a_claim_that_held_and_fails_now_is_listed():
    result = _check({"S1.a": HOLDS, "S2.b": HOLDS}, {"S1.a": FAILS, "S2.b": HOLDS})
    assert not result.ok
    assert result.problems == [f"claim S1.a (S1) fails now and held in {ARCHIVE}: S1.a reads fails"]
    out = lines(result, "/x/report.html")
    assert out[0] == f"adbench strict: claim S1.a (S1) fails now and held in {ARCHIVE}: S1.a reads fails"
    assert out[-1] == ("adbench strict: FAILED: 1 claim(s) that held in the compared run fail now, 0 row(s) "
                       "MISMATCH or MISSING (the report is written: /x/report.html)")


def test_mismatch_and_missing_rows_are_listed_one_line_each():
    statuses = ("match", "MISMATCH", "differs", "MISSING", "not judged")
    result = _check({"S1.a": HOLDS}, {"S1.a": HOLDS}, statuses=statuses)
    assert result.problems == ["MISMATCH S1 q1: documented 0.25, measured 0.5 (outside the tolerance)",
                               "MISSING S1 q3: documented 0.25, measured —"]


def test_a_claim_that_failed_in_both_runs_is_not_a_regression():
    result = _check({"S1.a": FAILS}, {"S1.a": FAILS})
    assert result.ok
    assert result.notes == ["1 claim(s) fail in this run without a regression against a compared run "
                            "(not counted): S1.a"]


def test_other_verdict_changes_are_no_regression():
    """fails -> holds, holds -> not judged, and a new claim that fails: none is 'held, fails now'."""
    assert _check({"S1.a": FAILS, "S1.b": HOLDS}, {"S1.a": HOLDS, "S1.b": NOT_JUDGED, "S1.c": FAILS}).ok


def test_with_no_compared_run_only_rows_count():
    passed = _check(None, {"S1.a": FAILS}, compared=())
    assert passed.ok and passed.notes[0].startswith("no compared run (compare_to is empty)")
    failed = _check(None, {"S1.a": FAILS}, statuses=("MISSING",), compared=())
    assert failed.problems == ["MISSING S1 q0: documented 0.25, measured —"]


def test_an_archive_without_claims_is_noted_and_checks_no_claim():
    result = _check(None, {"S1.a": FAILS})
    assert result.ok
    assert result.notes[0] == f"archive {ARCHIVE}: no claims recorded in that run, so no claim is checked against it"


def test_a_regression_against_two_archives_is_one_line_naming_both():
    result = _check({"S1.a": HOLDS}, {"S1.a": FAILS}, compared=("a", "b"))
    assert result.problems == ["claim S1.a (S1) fails now and held in a, b: S1.a reads fails"]


def test_run_writes_its_stamp_only_when_the_check_passes(tmp_path):
    now = _claims({"S1.a": FAILS})
    paths = {n: tmp_path / f"{n}.csv" for n in ("comparison", "claims_changes", "claims")}
    now.to_csv(paths["claims"], index=False)
    claim_changes(_claims({"S1.a": HOLDS}), now, ARCHIVE).to_csv(paths["claims_changes"], index=False)
    _cmp(["match"]).to_csv(paths["comparison"], index=False)
    stamp, printed = tmp_path / "strict_check.txt", []
    args = [str(paths[n]) for n in ("comparison", "claims_changes", "claims")]
    assert run(*args, [ARCHIVE], str(stamp), echo=printed.append) is False
    assert not stamp.exists() and printed[0].startswith("adbench strict: claim S1.a (S1) fails now")
    claim_changes(_claims({"S1.a": FAILS}), now, ARCHIVE).to_csv(paths["claims_changes"], index=False)
    assert run(*args, [ARCHIVE], str(stamp), echo=printed.append) is True   # control: failed in both runs
    assert stamp.read_text().splitlines()[-1].startswith("adbench strict: passed")


def test_a_fragile_claim_that_flips_is_noted_not_counted():
    """Two machines may disagree on a fragile claim: its flip is a note; a robust claim's flip still fails the run."""
    old = _claims({"S9.a": HOLDS, "S2.b": HOLDS})
    new = _claims({"S9.a": FAILS, "S2.b": HOLDS}, fragile={"S9.a": "rests on timing (host and load dependent)"})
    result = check(_cmp(["match"]), claim_changes(old, new, ARCHIVE), [ARCHIVE], new)
    assert result.ok and any("fragile claim S9.a fails now" in n and "rests on timing" in n for n in result.notes)
    robust = _claims({"S9.a": FAILS, "S2.b": HOLDS})  # control: the same flip, not fragile in either run
    assert not check(_cmp(["match"]), claim_changes(old, robust, ARCHIVE), [ARCHIVE], robust).ok
