"""Bad configs are refused when the config is read, before any job, with the key(s) named.

Classes: NaN and infinities (JSON schema accepts both), upper bounds on keys that multiply
the DAG, the memory or the run time, and cross-key constraints. Every overlay is checked
directly; one per class (NaN, inf, each bound class, each issue-named cross-key check)
also goes through a Snakemake dry run of a project copy.
"""

import copy

import pytest
import yaml

from adbench.config import GPT2_SMALL, ConfigError, check_config

from conftest import ROOT, copy_project, planned_jobs, snakemake
from test_config import deep_update

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
TINY = "A corpus of fifty characters, far too short here.\n"

# (case id, YAML overlay on config.yaml, keys the message must name, also run a Snakemake dry run)
BAD = [
    ("nan", "scalar: {a: .nan}", ["scalar.a"], True),
    ("nan_in_list", "scalar: {sweep_h: [0.1, .nan]}", ["scalar.sweep_h.1"], False),
    ("nan_in_list_of_dicts", "depth: {d1: {chains: [{activation: tanh, w: .nan, report_at: [1]}]}}",
     ["depth.d1.chains.0.w"], False),
    ("inf", "timing: {target_ms: .inf}", ["timing.target_ms"], True),
    ("minus_inf", "precision: {weight: -.inf}", ["precision.weight"], False),
    ("dag_processes", "timing: {processes: 100000}", ["timing.processes"], True),
    ("runtime_rounds", "timing: {rounds: 100000}", ["timing.rounds"], True),
    ("runtime_charlm_steps", "charlm: {train: {steps: 10000000}}", ["charlm.train.steps"], False),
    ("runtime_o1_steps", "optim: {o1: {steps: 100000000}}", ["optim.o1.steps"], False),
    ("runtime_precision_steps", "precision: {steps: 1000000000}", ["precision.steps"], False),
    ("runtime_bootstrap", "timing: {bootstrap: 100000000}", ["timing.bootstrap"], False),
    ("memory_seq_len", "gpt2: {seq_len: 100000}", ["gpt2.seq_len"], True),
    ("memory_batch", "gpt2: {batch: 1000}", ["gpt2.batch"], False),
    ("memory_d2_width", "depth: {d2: {width: 100000}}", ["depth.d2.width"], False),
    ("memory_checkpoint_batch", "lifetimes: {checkpoint: {batch: 100000}}", ["lifetimes.checkpoint.batch"], False),
    ("memory_dot_length", "timing: {dot_length: 10000000}", ["timing.dot_length"], False),
    ("grid_size", "optim: {o2: {grids: {momentum: {lr: [%s]}}}}" % ", ".join(["1.0e-6"] * 60),
     ["optim.o2.grids.momentum.lr"], True),
    ("charlm_n_embd_n_head", "charlm: {train: {n_head: 3}}", ["charlm.train.n_embd", "charlm.train.n_head"], True),
    ("charlm_early_step", "charlm: {early_step: 5000}", ["charlm.early_step", "charlm.train.steps"], False),
    ("gpt2_random_n_embd_n_head", "gpt2: {source: random, random_config: {n_embd: 64, n_head: 3}}",
     ["gpt2.random_config.n_embd", "gpt2.random_config.n_head"], True),
    ("gpt2_seq_len_n_positions", "gpt2: {source: random, random_config: {n_positions: 128}, seq_len: 256}",
     ["gpt2.seq_len", "gpt2.random_config.n_positions"], True),
    ("gpt2_seq_len_gpt2_small", "gpt2: {source: cache, seq_len: 2048}", ["gpt2.seq_len", "gpt2.source"], False),
    ("gpt2_g4_layer", "gpt2: {source: random, random_config: {n_layer: 2}, g4_layer: 5}",
     ["gpt2.g4_layer", "gpt2.random_config.n_layer"], False),
    ("gpt2_tokenizer_vocab", "gpt2: {source: auto, random_config: {vocab_size: 512}, tokenizer_vocab_size: 1000}",
     ["gpt2.tokenizer_vocab_size", "gpt2.random_config.vocab_size"], False),
    ("gpt2_timing_batch", "gpt2: {timing_batch: 16}", ["gpt2.timing_batch", "gpt2.batch"], False),
    ("block_size_corpus", "corpus: {path: '{tiny}'}", ["charlm.train.block_size", "corpus.path"], True),
    ("corpus_missing", "corpus: {path: '{tiny}.missing'}", ["corpus.path"], False),
    ("text_offset_corpus", "gpt2: {text_offset: 100000000}", ["gpt2.seq_len", "gpt2.text_offset"], False),
    ("checkpoint_segments", "lifetimes: {checkpoint: {segments: 20}}",
     ["lifetimes.checkpoint.segments", "lifetimes.checkpoint.blocks"], False),
    ("d1_report_at", "depth: {d1: {max_depth: 20}}", ["depth.d1.chains.0.report_at", "depth.d1.max_depth"], False),
    ("d2_case_depth", "depth: {d2: {max_depth: 40}}", ["depth.d2.cases.1.depth", "depth.d2.max_depth"], False),
    ("o1_report_seed", "optim: {o1: {report_seed: 10}}", ["optim.o1.report_seed", "optim.o1.seeds"], False),
    ("o3_arrangement", "optim: {o3: {adam_arrangement: fp64_adam}}",
     ["optim.o3.adam_arrangement", "optim.o3.arrangements"], False),
    ("sweep_exponents", "precision: {rel_error_sweep: {lo_exp: 0, hi_exp: 0, points: 11}}",
     ["precision.rel_error_sweep.lo_exp", "precision.rel_error_sweep.hi_exp"], False),
]
IDS = [c[0] for c in BAD]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "tiny.txt"
    path.write_text(TINY, encoding="utf-8")
    return path


def overlay(text: str, tiny) -> dict:
    return yaml.safe_load(text.replace("{tiny}", str(tiny)))


def merged(over: dict) -> dict:
    return deep_update(yaml.safe_load((ROOT / "config.yaml").read_text()), copy.deepcopy(over))


def problems(over: dict) -> str:
    """check_config's message for config.yaml + overlay ('' when it passes)."""
    try:
        check_config(merged(over), SCHEMA)
    except ConfigError as err:
        return str(err)
    return ""


@pytest.mark.parametrize("case", BAD, ids=IDS)
def test_bad_overlay_is_refused_naming_its_keys(case, tiny):
    _, text, keys, _ = case
    message = problems(overlay(text, tiny))
    assert message.startswith("invalid configuration")
    for key in keys:
        assert f"'{key}'" in message, (key, message)


def test_bounds_carry_their_reason():
    message = problems({"timing": {"processes": 21}})
    assert "'timing.processes' = 21 is out of range: allowed <= 20" in message
    assert "multiplies the DAG" in message


@pytest.mark.parametrize("over", [
    {"timing": {"processes": 20, "rounds": 200}},                       # bounds are inclusive
    {"charlm": {"train": {"n_head": 8}}},                               # 64 % 8 == 0
    {"gpt2": {"source": "random", "random_config": {"n_positions": 256}, "seq_len": 256}},
    {"gpt2": {"source": "path", "seq_len": 4096}},                      # path: checked when the job loads it
], ids=["at_bounds", "n_head_divides", "seq_len_equals_n_positions", "path_source_unchecked"])
def test_negative_control_valid_neighbours_pass(over):
    assert problems(over) == ""


def test_gpt2_small_constants_match_transformers():
    from transformers import GPT2Config

    ref = GPT2Config()
    assert GPT2_SMALL == {k: getattr(ref, k) for k in GPT2_SMALL}


@pytest.fixture(scope="module")
def copied(tmp_path_factory, tiny):
    return copy_project(tmp_path_factory.mktemp("bad") / "project")


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in BAD if c[3]], ids=[c[0] for c in BAD if c[3]])
def test_snakemake_dry_run_stops_before_any_job(case, copied, tiny):
    name, text, keys, _ = case
    (copied / f"bad_{name}.yaml").write_text(text.replace("{tiny}", str(tiny)))
    res = snakemake(copied, "-n", "--cores", "1", "--configfile", "config.yaml", f"bad_{name}.yaml")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "invalid configuration" in out
    assert all(f"'{key}'" in out for key in keys), out[-2000:]
    assert planned_jobs(out) == {} and not (copied / "results").exists()


@pytest.mark.slow
def test_snakemake_dry_run_negative_control_smoke_overlay_plans_jobs(copied):
    res = snakemake(copied, "-n", "--cores", "1", "--configfile", "config.yaml", ".test/config.yaml")
    assert res.returncode == 0, res.stderr[-2000:]
    assert sum(planned_jobs(res.stdout + res.stderr).values()) > 20
