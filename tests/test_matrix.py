"""Version matrix: entries and pins, failure records, the history table, and a real two-version matrix."""

import json

import pandas as pd
import pytest

from adbench.verdicts.documented import load
from adbench.matrix.entries import entries, pin_hash, resolved
from adbench.matrix.envs import error_line, unmet
from adbench.history.table import history, run_from_status
from adbench.matrix.run import check_meta_versions, inner_command, run_error_line, summary


def test_entries_are_named_from_their_versions_and_duplicates_are_refused():
    got = entries([{"torch": "2.13.0"}, {"torch": "2.14.1", "Transformers": "5.24.0"}])
    assert got == {"torch2.13.0": {"torch": "2.13.0"},
                   "torch2.14.1_transformers5.24.0": {"torch": "2.14.1", "transformers": "5.24.0"}}
    with pytest.raises(ValueError, match="'matrix' lists"):
        entries([{"numpy": "2.3.5"}, {"numpy": "2.3.5"}])


def test_pin_hash_changes_only_with_the_resolved_pins():
    pins = {"torch": "2.13.0", "numpy": "2.4.6"}
    a = pin_hash(resolved(pins, {"numpy": "2.3.5"}), "/base", "3.11.7")
    assert a == pin_hash(resolved(pins, {"numpy": "2.3.5"}), "/base", "3.11.7")
    assert a != pin_hash(resolved(pins, {"numpy": "2.3.4"}), "/base", "3.11.7")
    assert a != pin_hash(resolved(pins, {"numpy": "2.3.5"}), "/other", "3.11.7")
    assert unmet({"torch": "2.13.0+cpu", "numpy": "2.4.6"}, pins) == []   # a local label satisfies the pin
    assert unmet({"torch": "2.13.0+cpu"}, pins) == ["numpy not installed (pinned 2.4.6)"]


def test_failure_lines_name_the_cause():
    pip = ("Looking in links: /opt/wheels\nERROR: Could not find a version that satisfies the requirement "
           "matplotlib==0.0.404 (from versions: 3.10.9)\nERROR: No matching distribution found for matplotlib==0.0.404\n")
    assert error_line(pip).startswith("ERROR: Could not find a version") and "0.0.404" in error_line(pip)
    smk = ("Error in rule scalar_s9_run:\n    jobid: 4\nTraceback (most recent call last):\n"
           "  File \"x.py\", line 3\nValueError: calibration gave 0 loops\nShutting down\n")
    assert run_error_line(smk) == "Error in rule scalar_s9_run: — ValueError: calibration gave 0 loops"


def test_meta_json_must_record_the_entry_versions(tmp_path):
    (tmp_path / "S1").mkdir()
    (tmp_path / "S1/meta.json").write_text(json.dumps({"versions": {"numpy": "2.4.6", "torch": "2.13.0+cpu"}}))
    assert check_meta_versions(tmp_path, {"numpy": "2.4.6", "torch": "2.13.0", "matplotlib": "3.10.9"}) == ""
    assert check_meta_versions(tmp_path, {"numpy": "2.3.5"}) == "S1/meta.json records numpy 2.4.6, the entry asked for 2.3.5"


TARGETS = ["results/S5/values.csv", "results/S9/values.csv"]
# Snakemake options that take every following word up to the next option
GREEDY = ("--resources", "--configfile", "--set-threads", "--set-resources", "--default-resources")


def _parse(argv):
    """argv[3:] (after `python -m snakemake`) read by Snakemake's own command-line parser."""
    from snakemake.cli import get_argument_parser
    return get_argument_parser().parse_args(argv[3:])


@pytest.mark.parametrize("mem_mb", [8000, None])
def test_inner_command_keeps_targets_apart_from_resources(tmp_path, mem_mb):
    cmd = inner_command("python", tmp_path, tmp_path / "run", 2, mem_mb, TARGETS)
    assert cmd[-2:] == TARGETS
    before = cmd[:-len(TARGETS)]
    last_option = max(i for i, a in enumerate(before) if a.startswith("--"))
    assert before[last_option] not in GREEDY and last_option == len(before) - 1  # a flag, no values
    args = _parse(cmd)
    assert args.targets == TARGETS
    assert (args.resources or {}).get("mem_mb") == mem_mb and ("--resources" in cmd) == bool(mem_mb)
    assert args.cores == 2 and args.nolock and args.keep_going


def test_negative_control_resources_just_before_targets_is_what_snakemake_misreads(tmp_path):
    old_order = ["python", "-m", "snakemake", "--cores", "2", "--nolock", "--resources", "mem_mb=8000", *TARGETS]
    with pytest.raises(ValueError, match="dictionary update sequence element #1 has length 1"):
        _parse(old_order)


def _status(entry, ok, error=""):
    return {"entry": entry, "ok": ok, "error": error}


def test_summary_says_how_many_succeeded_and_names_the_failed():
    assert summary([_status("a", True), _status("b", True)]) == (True, "2 of 2 entries succeeded")
    some = summary([_status("a", True), _status("b", False, "ERROR: No matching distribution\nfor x")])
    assert some == (True, "1 of 2 entries succeeded; failed: b: ERROR: No matching distribution for x")
    none = summary([_status("a", False, "Error in rule s5: — ValueError: x"), _status("b", False, "pip check: y")])
    assert none == (False, "0 of 2 entries succeeded: a: Error in rule s5: — ValueError: x; b: pip check: y")
    assert summary([_status("a", False)]) == (False, "0 of 1 entries succeeded: a: no error recorded")


def _archive(root, label, values, versions):
    (root / label / "S1").mkdir(parents=True)
    rows = [{"id": i, "quantity": q, "value": v} for (i, q), v in values.items()]
    pd.DataFrame(rows).to_csv(root / label / "S1/values.csv", index=False)
    (root / label / "MANIFEST.json").write_text(json.dumps({"versions": versions, "device": "cpu"}))
    return {"entry": label, "label": label, "ok": True, "versions": versions}


def test_history_finds_the_first_run_where_a_quantity_moved(tmp_path):
    doc = load()
    s1 = doc[doc.id == "S1"].iloc[:2]
    (q0, d0), (q1, d1) = [(r.quantity, float(r.documented)) for r in s1.itertuples()]
    runs = [_archive(tmp_path, "a", {("S1", q0): d0, ("S1", q1): d1}, {"numpy": "2.3.5"}),
            _archive(tmp_path, "b", {("S1", q0): d0, ("S1", q1): d1}, {"numpy": "2.4.6"}),
            _archive(tmp_path, "c", {("S1", q0): d0 + 1e-3, ("S1", q1): d1}, {"numpy": "2.4.6"}),
            {"entry": "bad", "label": "", "ok": False, "versions": {}, "error": "ERROR: No matching distribution",
             "stage": "environment"}]
    runs = [run_from_status(s, tmp_path, "cpu") for s in runs]
    table = history(runs, doc, 0.05, 0.10).set_index(["id", "quantity"])
    assert table.loc[("S1", q0), "first_moved_at"] == "c" and table.loc[("S1", q0), "moved_from"] == "b"
    assert "numpy 2.4.6" in table.loc[("S1", q0), "to_env"]
    assert table.loc[("S1", q1), "first_moved_at"] == ""                  # negative control: never moved
    assert table.loc[("env", "numpy"), "first_moved_at"] == "b"
    assert table.loc[("run", "status"), "bad"].startswith("failed (environment): ERROR: No matching")


def _claims_csv(root, verdicts):
    pd.DataFrame([{"claim": c, "id": c.split(".")[0], "scope": "any", "verdict": v, "reason": f"reads {v}",
                   "conclusion": f"{c} holds.", "doc": "000", "section": "s"} for c, v in verdicts.items()]
                 ).to_csv(root / "claims.csv", index=False)


def test_history_lists_the_claims_first_and_the_run_where_a_verdict_changed(tmp_path):
    from adbench.history.table import NOT_RECORDED
    from adbench.render import TEMPLATES
    from adbench.render.history import render_history
    doc = load().iloc[:3]   # a few quantities: the claims block is the point here
    s1 = doc[doc.id == "S1"].iloc[:1]
    q0, d0 = s1.quantity.iloc[0], float(s1.documented.iloc[0])
    runs = [_archive(tmp_path, lab, {("S1", q0): d0}, {"numpy": "2.4.6"}) for lab in ("old", "a", "b", "c")]
    _claims_csv(tmp_path / "a", {"S1.x": "holds", "S1.y": "holds", "S2.z": "fails"})
    _claims_csv(tmp_path / "b", {"S1.x": "holds", "S1.y": "fails", "S2.z": "fails"})
    _claims_csv(tmp_path / "c", {"S1.x": "holds", "S1.y": "holds", "S2.z": "fails"})   # "old" recorded no claims
    runs = [run_from_status(s, tmp_path, "cpu") for s in runs]
    claims = pd.DataFrame({"claim": ["S1.x", "S1.y", "S2.z"], "id": ["S1", "S1", "S2"],
                           "conclusion": ["x holds.", "y holds.", "z holds."]})
    table = history(runs, doc, 0.05, 0.10, claims=claims)
    block = table[table.kind == "claim"]
    assert block.quantity.tolist() == ["S1.y", "S1.x", "S2.z"]   # the changed claim first
    assert block.index.max() < table[~table.kind.isin(["claim", "environment", "run"])].index.min()  # before quantities
    y = block.set_index("quantity").loc["S1.y"]
    assert [y[lab] for lab in ("old", "a", "b", "c")] == [NOT_RECORDED, "holds", "fails", "holds"]
    assert (y.first_moved_at, y.moved_from, y.rule) == ("b", "a", "verdict holds → fails")
    assert y.documented == "y holds."
    assert block.set_index("quantity").loc[["S1.x", "S2.z"], "first_moved_at"].tolist() == ["", ""]   # never changed
    runs = [r | {"env": "numpy 2.4.6, cpu"} for r in runs]
    page = render_history(str(TEMPLATES), table, runs, {"relative": 0.05, "timing": 0.10, "alpha": 0.05})
    changed = page[page.index('<section id="claims">'):page.index("<details>")]
    assert page.index('<section id="claims">') < page.index('<section id="moved">')
    assert 'data-claim="S1.y"' in changed and 'data-claim="S1.x"' not in changed
    assert changed.count('class="moved"') == 2   # b (holds -> fails) and c (fails -> holds)
    assert "No claims recorded in <code>old</code> (archived" in " ".join(page.split())


def test_history_holds_each_run_to_the_rows_declared_tolerance(tmp_path):
    # S5's central error at h=1e-5 is rounding noise the table allows to rel:2 (the verdict's "differs"):
    # a change inside that is not a move, one beyond it is (printed digits alone would flag both).
    doc = load()
    row = doc[(doc.id == "S5") & (doc.quantity == "central_err_h1e-05")].iloc[0]
    assert row.tolerance == "rel:2" and row.documented == "6.68e-12"
    key = ("S5", row.quantity)
    runs = [_archive(tmp_path, "a", {key: 6.68e-12}, {"numpy": "2.3.5"}),
            _archive(tmp_path, "b", {key: 9.9e-12}, {"numpy": "2.4.6"}),      # +3.2e-12 < 2 x 6.68e-12
            _archive(tmp_path, "c", {key: 4.883e-11}, {"numpy": "2.4.6"})]    # +3.9e-11: beyond it
    runs = [run_from_status(s, tmp_path, "cpu") for s in runs]
    table = history(runs, doc, 0.05, 0.10).set_index(["id", "quantity"])
    assert table.loc[key, "first_moved_at"] == "c" and table.loc[key, "rule"] == "rel:2"
