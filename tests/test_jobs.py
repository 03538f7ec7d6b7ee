"""adbench.jobs: how a rule's inputs, wildcards and outputs reach its function, and how results are written."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from adbench.jobs import call_arguments, grouped, output_name, read_input, resolve, run_job, split_name


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """run_job writes its record under results/.manifests of the working directory: keep it out of the checkout."""
    monkeypatch.chdir(tmp_path)


def measure_run(calibration: pd.DataFrame, process: int, rounds: int, tokenizer_path: str = "") -> dict:
    return {}


def test_inputs_wildcards_and_paths_reach_the_parameters_they_name(tmp_path):
    (tmp_path / "cal.csv").write_text("loops\n8\n")
    (tmp_path / "doc.csv").write_text("x\n1\n")
    args = call_arguments(measure_run, {"calibration": str(tmp_path / "cal.csv")}, {"process": "3"},
                          {"tokenizer": "out/tok.json", "meta": "out/meta.json"}, {"rounds": 5})
    assert list(args) == ["calibration", "process", "tokenizer_path"]
    assert args["calibration"].loops.tolist() == [8] and args["process"] == 3  # annotated int: cast
    assert args["tokenizer_path"] == "out/tok.json"  # an output path the function asked for

    def needs_a_path(documented_path: str, values: list) -> dict:
        return {}
    got = call_arguments(needs_a_path, {"documented": str(tmp_path / "doc.csv"), "values": [str(tmp_path / "doc.csv")] * 2},
                         {}, {}, {})
    assert got["documented_path"] == str(tmp_path / "doc.csv") and [len(v) for v in got["values"]] == [1, 1]


def test_a_misnamed_input_or_a_doubly_given_argument_is_refused():
    with pytest.raises(TypeError, match=r"input\(s\) \['calib'\]"):
        call_arguments(measure_run, {"calib": "x.csv"}, {}, {}, {})  # would otherwise be dropped silently
    with pytest.raises(TypeError, match="both from params.args and from the job"):
        call_arguments(measure_run, {}, {"process": "1"}, {}, {"process": 1})
    with pytest.raises(ValueError, match="module:function"):
        resolve("adbench.jobs.read_input")


def test_inputs_are_read_by_suffix(tmp_path):
    for name, text in (("a.txt", "é"), ("a.json", '{"k": [1]}'), ("a.bin", "xy")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert read_input(str(tmp_path / "a.txt")) == "é"
    assert read_input(str(tmp_path / "a.json")) == {"k": [1]}
    assert read_input(str(tmp_path / "a.bin")) == b"xy"
    assert resolve("adbench.jobs:read_input") is read_input


class _Outputs(dict):
    """Stand-in for snakemake.output: names -> paths, by key and attribute."""
    __getattr__ = dict.__getitem__


def test_grouped_job_writes_results_nested_by_id(tmp_path):
    assert split_name(output_name("T1", "values")) == ("T1", "values") and split_name("values") == (None, "values")

    def one(x):
        return {"values": pd.DataFrame({"v": [x]}), "_meta": {"seen": x}}

    outputs = _Outputs({output_name(mid, t): str(tmp_path / mid / f"{t}.{'json' if t == 'meta' else 'csv'}")
                        for mid in ("A1", "B2") for t in ("values", "meta")})
    smk = type("Smk", (), dict(params={"args": {"A1": {"x": 1}, "B2": {"x": 2}}, "prov": {"seed": 0}},
                               output=outputs, log=[], rule="r", wildcards={}, threads=1))()
    run_job(smk, grouped({"A1": one, "B2": one}))
    assert pd.read_csv(tmp_path / "B2/values.csv").v.tolist() == [2]  # B2's own result, not A1's
    meta = json.loads((tmp_path / "A1/meta.json").read_text())
    assert meta["measurement_id"] == "A1" and meta["seen"] == 1 and meta["config_hash"]
    # negative control: a table the function does not return is named in the error
    outputs[output_name("B2", "extra")] = str(tmp_path / "B2/extra.csv")
    with pytest.raises(KeyError, match="B2__extra"):
        run_job(smk, grouped({"A1": one, "B2": one}))


def test_a_single_id_job_may_return_its_tables_flat(tmp_path):
    outputs = _Outputs({output_name("S1", "values"): str(tmp_path / "S1/values.csv"),
                        output_name("S1", "meta"): str(tmp_path / "S1/meta.json")})
    smk = type("Smk", (), dict(params={"args": {"x": 4}, "prov": {"seed": 0}}, output=outputs, log=[], rule="r",
                               wildcards={}, threads=1))()
    run_job(smk, lambda x: {"values": pd.DataFrame({"v": [x]})})
    assert pd.read_csv(tmp_path / "S1/values.csv").v.tolist() == [4]
    assert json.loads((tmp_path / "S1/meta.json").read_text())["measurement_id"] == "S1"


def test_a_job_records_the_sha256_of_every_output_it_wrote(tmp_path):
    from adbench.cache import MANIFESTS, sha256_file

    outputs = _Outputs({output_name("S1", "values"): "results/S1/values.csv",
                        output_name("S1", "meta"): "results/S1/meta.json", "fig": "results/S1/fig.svg"})
    smk = type("Smk", (), dict(params={"args": {"x": 4}, "prov": {"seed": 0}}, output=outputs, log=[], rule="r",
                               wildcards={"variant": "a"}, threads=1))()
    run_job(smk, lambda x: {"values": pd.DataFrame({"v": [x]}), "fig": b"<svg/>"})
    record = json.loads((tmp_path / MANIFESTS / "r_a.json").read_text())
    assert record["rule"] == "r" and record["wildcards"] == {"variant": "a"}
    # every declared output, meta.json and the figure included, with the hash of the bytes on disk
    assert record["outputs_sha256"] == {p: sha256_file(p) for p in outputs.values()}
    assert record["outputs_sha256"]["results/S1/fig.svg"] != record["outputs_sha256"]["results/S1/values.csv"]
