"""adbench.cache: a cached file against the record its job wrote (results/.manifests)."""

from __future__ import annotations

import pytest

from adbench.cache import CHANGED, MISSING, NO_RECORD, check, main, records
from adbench.jobs import write_manifest


@pytest.fixture
def written(tmp_path, monkeypatch):
    """Two files written by job `scalar_s2`, and its record."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/S2").mkdir(parents=True)
    paths = ["results/S2/values.csv", "results/S2/nudges.csv"]
    for p, text in zip(paths, ("id,quantity,value\nS2,x,1.25\n", "h\n0.1\n")):
        (tmp_path / p).write_text(text)
    write_manifest("scalar_s2", {}, paths)
    return paths


def test_untouched_files_read_ok(written):
    assert check(written) == []  # negative control: nothing flagged when nothing changed


def test_an_edited_byte_a_truncation_and_a_deletion_are_caught(written, tmp_path):
    values, nudges = written
    p = tmp_path / values
    p.write_bytes(p.read_bytes().replace(b"1.25", b"1.26"))  # one digit
    assert check(written) == [(values, CHANGED)]
    (tmp_path / nudges).write_bytes(b"")  # truncated
    assert check(written) == [(values, CHANGED), (nudges, CHANGED)]
    (tmp_path / nudges).unlink()
    assert check(written) == [(values, CHANGED), (nudges, MISSING)]


def test_a_file_without_record_is_named_as_such(written, tmp_path):
    (tmp_path / "results/S3").mkdir()
    (tmp_path / "results/S3/values.csv").write_text("x\n")
    assert check([*written, "results/S3/values.csv"]) == [("results/S3/values.csv", NO_RECORD)]


def test_the_newer_record_of_a_path_wins(written, tmp_path):
    values = written[0]
    (tmp_path / values).write_text("rewritten by a renamed rule\n")
    write_manifest("scalar_s2_new", {}, [values])
    assert records()[values]["rule"] == "scalar_s2_new" and check(written) == []


def test_restore_deletes_a_changed_file_and_says_which_job_reruns(written, tmp_path, capsys):
    values, nudges = written
    (tmp_path / values).write_text("edited\n")
    (tmp_path / nudges).unlink()
    assert main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sorted(out) == [f"adbench: {values} changed after its job wrote it: re-running scalar_s2",
                           f"adbench: {nudges} missing: re-running scalar_s2"][::-1]
    assert not (tmp_path / values).exists()  # so that Snakemake's rule all re-runs scalar_s2
    main([])
    assert capsys.readouterr().out.count("changed") == 0  # deleted: now only missing


def test_restore_leaves_untouched_files_alone(written, tmp_path, capsys):
    assert main([]) == 0
    assert capsys.readouterr().out == "" and all((tmp_path / p).exists() for p in written)


def test_restore_leaves_files_outside_the_targets_alone(written, tmp_path, capsys):
    (tmp_path / "archive").mkdir()
    (tmp_path / "archive/base.manifest.json").write_text("{}\n")
    write_manifest("archive", {}, ["archive/base.manifest.json"])
    (tmp_path / "archive/base.manifest.json").write_text("{} \n")
    assert check(["archive/base.manifest.json"]) == [("archive/base.manifest.json", CHANGED)]  # seen as changed
    assert main([]) == 0  # but no rule all target: deleting it would not bring it back
    assert capsys.readouterr().out == "" and (tmp_path / "archive/base.manifest.json").exists()
