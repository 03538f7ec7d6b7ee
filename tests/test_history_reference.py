"""The shipped reference's bookkeeping: disk an environment adds beyond uv's hard links, the locked entry, each
entry's cost (with how many jobs its last run executed) and the generated reference/README.md."""

from __future__ import annotations

import json
import os

import pytest

from adbench.history.reference import entry_costs, locked_entry, new_bytes, readme


def test_new_bytes_counts_only_what_the_folder_does_not_share_by_hard_links(tmp_path):
    cache, env = tmp_path / "cache", tmp_path / "env"
    cache.mkdir(), env.mkdir()
    (cache / "lib.so").write_bytes(b"x" * 5000)
    os.link(cache / "lib.so", env / "lib.so")  # as uv links a wheel's file from its cache
    (env / "own.txt").write_bytes(b"y" * 123)
    assert new_bytes(env) == 123
    (cache / "lib.so").unlink()  # the cache gone: the environment holds the file alone now
    assert new_bytes(env) == 5123


def test_the_locked_entry_is_the_one_holding_the_pins_build_tags_aside():
    pins = {"torch": "2.13.0+cpu", "transformers": "5.24.0"}
    matrix = {"torch2.11.0": {"torch": "2.11.0"}, "torch2.13.0": {"torch": "2.13.0"},
              "transformers5.17.0": {"transformers": "5.17.0"}}
    assert locked_entry(matrix, pins) == "torch2.13.0"
    with pytest.raises(ValueError, match="locked stack"):
        locked_entry({k: v for k, v in matrix.items() if k != "torch2.13.0"}, pins)


def test_entry_costs_and_the_readme_say_what_each_entry_cost_and_how_to_compare(tmp_path):
    envs = tmp_path / "envs"
    (envs / "torch2.13.0").mkdir(parents=True)
    (envs / "torch2.13.0" / "adbench-env.json").write_text(json.dumps({"build_s": 4.6}))
    statuses = [
        {"entry": "torch2.13.0", "ok": True, "label": "2026-12-02_torch2.13.0-cpu", "run_s": 97.4, "jobs_run": 6,
         "versions": {"torch": "2.13.0+cpu", "transformers": "5.24.0"}, "lock_sha256": "ab" * 32},
        {"entry": "torch2.9.0", "ok": False, "label": "", "run_s": 0.0, "versions": {},
         "error": "no version 2.9.0 of torch"}]
    costs = entry_costs(statuses, envs)
    assert [(c["jobs_run"], c["env_build_s"]) for c in costs] == [(6, 4.6), (None, None)]
    info = {"date": "2026-12-02", "machine": {"platform": "Linux", "cpus": 2, "python": "3.11.7"},
            "locked_entry": "torch2.13.0",
            "archive": "reference/archive/2026-12-02_torch2.13.0-cpu", "entries": costs,
            "invocations": [{"date": "2026-12-01", "wall_s": 3016.0}, {"date": "2026-12-02", "wall_s": 612.0}]}
    text = readme(info)
    assert "compare_to: [reference/archive/2026-12-02_torch2.13.0-cpu]" in text
    assert "| torch2.13.0 | 2.13.0+cpu | 5.24.0 | ok | 5 s | 0 MB | 97 s | 6 | `abababababab` |" in text
    assert "| torch2.9.0 |  |  | failed: no version 2.9.0 of torch |" in text
    assert "3016 s (2026-12-01), 612 s (2026-12-02)" in text


def test_the_jobs_an_inner_run_executed_are_counted_from_its_log():
    from adbench.matrix.run import jobs_executed

    ran = "Select jobs to execute...\nFinished jobid: 23 (Rule: lifetimes_l6_run)\n6 of 63 steps (10%) done\n" \
          "Finished jobid: 14 (Rule: scalar_s9_calibrate)\n"
    assert jobs_executed(ran) == 2
    assert jobs_executed("Building DAG of jobs...\nNothing to be done (all requested files are present).\n") == 0


def test_every_history_note_names_a_documented_quantity_or_a_claim():
    """A note keyed to a row no run has would never be shown: each (id, quantity) must be a documented row, or
    (id, claim) a claim of the claims table."""
    from importlib import resources

    from adbench.claims import table
    from adbench.io import read_csv
    from adbench.verdicts import documented as documented_table

    notes = read_csv(resources.files("adbench") / "data" / "history_notes.csv")
    documented, claims = documented_table.load(), table.load()
    known = set(zip(documented.id, documented.quantity)) | set(zip(claims.id, claims.claim))
    unknown = [(i, q) for i, q in zip(notes.id, notes.quantity) if (i, q) not in known]
    assert not unknown, unknown
    assert notes.note.str.len().min() > 40 and not notes.duplicated(["id", "quantity"]).any()


def test_each_make_reference_is_kept_with_its_wall_time(tmp_path):
    from adbench.history.reference import invocations

    ref = tmp_path / "reference.json"
    assert [i["wall_s"] for i in invocations(ref, 3016.0)] == [3016.0]
    ref.write_text(json.dumps({"date": "2026-12-01", "matrix_wall_s": 3016.0}))  # a folder written before the list
    first = invocations(ref, 469.0)
    assert [i["wall_s"] for i in first] == [3016.0, 469.0]
    ref.write_text(json.dumps({"invocations": first}))
    assert [i["wall_s"] for i in invocations(ref, 3.0)] == [3016.0, 469.0, 3.0]
