"""The GPT-2 jobs without Snakemake (adbench.gpt2.on_device): the config reaches every function parameter the rules
pass, overlays merge as Snakemake merges them, and one smoke-size run writes the pipeline's tables on the CPU."""

import inspect
import json

import pytest
import yaml

from adbench.gpt2 import on_device
from conftest import ROOT

INPUTS = {"model", "text"}  # what the rules pass as named inputs rather than params.args


def _config():
    files = ("config.yaml", ".test/config.yaml")
    return on_device.merged([yaml.safe_load((ROOT / name).read_text()) for name in files])


def test_overlays_merge_key_by_key():
    merged = on_device.merged([{"a": {"b": 1, "c": {"d": 2, "e": 3}}, "f": 4}, {"a": {"c": {"d": 5}}, "f": None}])
    assert merged == {"a": {"b": 1, "c": {"d": 5, "e": 3}}, "f": None}
    config = _config()
    assert config["gpt2"]["source"] == "random" and config["gpt2"]["prompt"] == "The capital of France is"


def test_every_parameter_of_the_three_functions_comes_from_the_config():
    config = _config()
    jobs = on_device.jobs(config, "cuda:0")
    for rule, (fn, args) in jobs.items():
        params = set(inspect.signature(fn).parameters) - INPUTS
        assert set(args) == params - {"fake", "bug"}, rule   # `fake`: the tests' switch; `bug`: a claims control
        assert args["device"] == "cuda:0"
    g = config["gpt2"]
    assert jobs["gpt2_memory"][1]["timing_rounds"] == g["timing_rounds"] == 2        # the smoke overlay's value
    assert jobs["gpt2_memory"][1]["seed"] == config["timing"]["seed"]   # G6's order seed: the timing one


@pytest.mark.slow
def test_a_smoke_run_writes_every_gpt2_table_with_its_meta(tmp_path):
    configs = [str(ROOT / "config.yaml"), str(ROOT / ".test/config.yaml")]
    on_device.main([*configs, "--device", "cpu", "--out", str(tmp_path)])
    for mid in ("G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8", "P9"):
        meta = json.loads((tmp_path / mid / "meta.json").read_text())
        assert (tmp_path / mid / "values.csv").exists() and meta["device"] == "cpu" and meta["measurement_id"] == mid
        assert meta["machine"]["gpu"]["name"] == "" and meta["model_source"] == "random-reduced"
    assert (tmp_path / "G6" / "timing.csv").read_text().count("\n") > 4
