"""Bad configs are refused when the config is read, before any job, with the key(s) named.

Classes: NaN and infinities (JSON schema accepts both), upper bounds on keys that multiply
the DAG, the memory or the run time, cross-key constraints, and (MEANING) values each valid
alone that do not fit together: shapes that must conform, indices in range, parts that add
up, sweeps in the order the code assumes, each beside a valid neighbour that must pass.
Every overlay is checked directly; one per class (NaN, inf, each bound class, each
cross-key check between two families' keys, each kind of meaning check) also goes through a
Snakemake dry run of a project copy. adbench.config's own machinery (messages per schema error,
the helpers, the gathering of the families' tables) is tested in tests/test_config.py.
"""

import math

import pytest
import yaml

from adbench import config as C
from adbench.gpt2.config_checks import GPT2_SMALL
from adbench.precision.config_checks import DYNAMIC_SCALE_ATTEMPTS, FP16_OVERFLOW, fp16_exact

from conftest import copy_project, planned_jobs, snakemake
from test_config import merged, problems

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
# Values each valid alone that do not fit together: (case id, bad overlay, keys the
# message must name, a valid neighbour that must pass, also run a Snakemake dry run). One dry run per kind.
MEANING = [
    # (a) shapes that must conform
    ("matmul_inner_dims", "tensor: {matmul: {w: [[1.0, -1.0], [2.0, 0.0]]}}",
     ["tensor.matmul.x", "tensor.matmul.w"],
     "tensor: {matmul: {w: [[1.0, -1.0, 0.0], [2.0, 0.0, 1.0], [0.5, 3.0, 2.0]], "
     "upstream: [[1.0, 2.0, 0.0], [-1.0, 0.5, 1.0]]}}",
     True),
    ("matmul_ragged", "tensor: {matmul: {x: [[1.0, 2.0, 3.0], [4.0, 5.0]]}}", ["tensor.matmul.x"],
     "tensor: {matmul: {x: [[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]]}}", False),
    ("matmul_upstream_cols", "tensor: {matmul: {upstream: [[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]}}",
     ["tensor.matmul.upstream", "tensor.matmul.w"], "tensor: {matmul: {upstream: [[0.0, 0.0], [0.0, 0.0]]}}", False),
    ("matmul_upstream_rows", "tensor: {matmul: {upstream: [[1.0, 2.0]]}}",
     ["tensor.matmul.upstream", "tensor.matmul.x"],
     "tensor: {matmul: {x: [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]], "
     "upstream: [[1.0, 2.0], [-1.0, 0.5], [0.0, 1.0]]}}",
     False),
    ("matmul_path_entries", "tensor: {matmul: {x: [[1.0, 2.0, 3.0]], upstream: [[1.0, 2.0]]}}", ["tensor.matmul.x"],
     "tensor: {matmul: {x: [[1.0, 2.0], [3.0, 4.0]], w: [[1.0, 0.0], [0.0, 1.0]], "
     "upstream: [[1.0, 2.0], [-1.0, 0.5]]}}",
     False),
    ("matmul_path_x_cols", "tensor: {matmul: {x: [[1.0], [2.0]], w: [[1.0, -1.0]]}}", ["tensor.matmul.x"],
     "tensor: {matmul: {x: [[1.0, 2.0], [2.0, 1.0]], w: [[1.0, -1.0], [0.5, 2.0]]}}", False),
    ("matmul_path_w_cols", "tensor: {matmul: {w: [[1.0], [2.0], [0.5]], upstream: [[1.0], [-1.0]]}}",
     ["tensor.matmul.w"], "tensor: {matmul: {w: [[1.0, 0.0], [2.0, 0.0], [0.5, 0.0]]}}", False),
    ("attention_width", "tensor: {attention: {k: [[1.0, 1.0, 0.0], [0.0, 2.0, 0.0]]}}",
     ["tensor.attention.q", "tensor.attention.k"],
     "tensor: {attention: {q: [[1.0, 0.0, 0.0], [0.5, 1.0, 0.0]], k: [[1.0, 1.0, 0.0], [0.0, 2.0, 0.0]]}}", False),
    ("attention_values", "tensor: {attention: {v: [[2.0, -1.0], [0.0, 3.0], [1.0, 1.0]]}}",
     ["tensor.attention.v", "tensor.attention.k"],
     "tensor: {attention: {q: [[1.0, 0.0]], upstream: [[1.0, -0.5]]}}", False),   # one query, two keys
    ("attention_upstream", "tensor: {attention: {upstream: [[1.0, -0.5, 0.0], [-1.0, 2.0, 0.0]]}}",
     ["tensor.attention.upstream", "tensor.attention.v"],
     "tensor: {attention: {v: [[2.0, -1.0, 1.0], [0.0, 3.0, 1.0]], upstream: [[1.0, -0.5, 0.0], [-1.0, 2.0, 0.0]]}}",
     False),
    ("attention_upstream_rows", "tensor: {attention: {upstream: [[1.0, -0.5]]}}",
     ["tensor.attention.upstream", "tensor.attention.q"], "tensor: {attention: {upstream: [[0.0, 0.0], [0.0, 0.0]]}}",
     False),
    ("layernorm_gamma", "tensor: {layernorm: {gamma: [0.5, 1.5]}}", ["tensor.layernorm.gamma", "tensor.layernorm.x"],
     "tensor: {layernorm: {x: [1.0, 2.0], gamma: [0.5, 1.5], beta: [0.25, -0.5], upstream: [1.0, -2.0], "
     "near_constant_x: [1.0, 1.003]}}", False),
    ("layernorm_beta", "tensor: {layernorm: {beta: [0.25, -0.5, 1.0, 0.0]}}",
     ["tensor.layernorm.beta", "tensor.layernorm.x"], "tensor: {layernorm: {beta: [0.0, 0.0, 0.0]}}", False),
    ("layernorm_upstream", "tensor: {layernorm: {upstream: [1.0, -2.0, 0.5, 1.0]}}",
     ["tensor.layernorm.upstream", "tensor.layernorm.x"],
     "tensor: {layernorm: {x: [1.0, 2.0, 4.0, 8.0], gamma: [0.5, 1.5, -1.0, 1.0], beta: [0.25, -0.5, 1.0, 0.0], "
     "upstream: [1.0, -2.0, 0.5, 1.0], near_constant_x: [1.0, 1.003, 0.997, 1.0]}}", False),
    ("layernorm_near_constant", "tensor: {layernorm: {near_constant_x: [1.0, 1.003]}}",
     ["tensor.layernorm.near_constant_x", "tensor.layernorm.x"],
     "tensor: {layernorm: {near_constant_x: [2.0, 2.003, 1.997]}}", False),
    ("mlp_input_width", "scalar: {mlp: {inputs: [[2.0, 3.0], [3.0, -1.0], [0.5, 1.0], [1.0, 1.0]]}}",
     ["scalar.mlp.inputs", "scalar.mlp.sizes"],
     "scalar: {mlp: {sizes: [2, 4, 1], inputs: [[2.0, 3.0], [3.0, -1.0], [0.5, 1.0], [1.0, 1.0]]}}", False),
    ("mlp_outputs", "scalar: {mlp: {sizes: [3, 4, 2]}}", ["scalar.mlp.sizes"], "scalar: {mlp: {sizes: [3, 2, 1]}}",
     False),
    ("mlp_targets", "scalar: {mlp: {targets: [1.0, -1.0, -1.0]}}", ["scalar.mlp.targets", "scalar.mlp.inputs"],
     "scalar: {mlp: {inputs: [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0]], targets: [1.0, -1.0, -1.0]}}",
     False),
    ("o1_inputs_ragged", "optim: {o1: {inputs: [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0]]}}", ["optim.o1.inputs"],
     "optim: {o1: {inputs: [[0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]}}", False),
    ("o1_targets", "optim: {o1: {targets: [-1.0, 1.0, 1.0]}}", ["optim.o1.targets", "optim.o1.inputs"],
     "optim: {o1: {inputs: [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]], targets: [-1.0, 1.0, 1.0]}}", False),
    ("p5_scaler_inputs", "precision: {grad_scaler: {inputs: [0.5, 3.0, 1.0]}}",
     ["precision.grad_scaler.inputs", "precision.grad_scaler.weights"],
     "precision: {grad_scaler: {weights: [1.0, -2.0, 4.0], inputs: [0.5, 3.0, 1.0]}}", False),
    # (b) indices that must lie in range
    ("softmax_target", "tensor: {softmax: {target: 3}}", ["tensor.softmax.target", "tensor.softmax.logits"],
     "tensor: {softmax: {target: 2}}", True),
    ("softmax_overflow_target", "tensor: {softmax: {target: 2, overflow_logits: [1000.0, 999.0]}}",
     ["tensor.softmax.target", "tensor.softmax.overflow_logits"],
     "tensor: {softmax: {target: 1, overflow_logits: [1000.0, 999.0]}}", False),
    ("output_layer_target", "tensor: {softmax: {output_layer: {target: 6}}}",
     ["tensor.softmax.output_layer.target", "tensor.softmax.output_layer.vocab"],
     "tensor: {softmax: {output_layer: {target: 5}}}", False),
    ("directional_coordinate", "scalar: {directional: {control_coordinate: 8}}",
     ["scalar.directional.control_coordinate", "scalar.directional.cols"],
     "scalar: {directional: {control_coordinate: 7}}", False),
    ("directional_orthogonal_to", "scalar: {directional: {orthogonal_to: 5}}",
     ["scalar.directional.orthogonal_to", "scalar.directional.directions"],
     "scalar: {directional: {orthogonal_to: 4}}", False),
    ("o1_gradcheck_hidden", "optim: {o1: {gradcheck: {param: 'W1[4][0]'}}}",
     ["optim.o1.gradcheck.param", "optim.o1.hidden"], "optim: {o1: {gradcheck: {param: 'W1[3][1]'}}}", False),
    ("o1_gradcheck_input", "optim: {o1: {gradcheck: {param: 'W1[0][2]'}}}",
     ["optim.o1.gradcheck.param", "optim.o1.inputs"], "optim: {o1: {gradcheck: {param: 'b2'}}}", False),
    ("o1_gradcheck_w2", "optim: {o1: {hidden: 3, gradcheck: {param: 'W2[3]'}}}",
     ["optim.o1.gradcheck.param", "optim.o1.hidden"], "optim: {o1: {hidden: 3, gradcheck: {param: 'W2[2]'}}}", False),
    ("c1_final_window", "charlm: {final_window: 2000}", ["charlm.final_window", "charlm.train.steps"],
     "charlm: {final_window: 1000}", False),
    ("p5_scaler_inf_index", "precision: {grad_scaler: {inf_index: 2}}",
     ["precision.grad_scaler.inf_index", "precision.grad_scaler.weights"],
     "precision: {grad_scaler: {inf_index: 1}}", False),
    ("p6_record_every", "precision: {record_every: 5000}", ["precision.record_every", "precision.steps"],
     "precision: {record_every: 2000}", False),
    ("c1_log_every", "charlm: {train: {log_every: 5000}}", ["charlm.train.log_every", "charlm.train.steps"],
     "charlm: {train: {log_every: 1000}}", False),
    ("p5_dynamic_start", "precision: {dynamic_start: 1.0e+30}",
     ["precision.dynamic_start", "precision.dynamic_grads"], "precision: {dynamic_start: 1.0e+23}", False),
    ("s5_fit_points", "scalar: {slope_fit_h: [2.0e-4, 9.0e-3]}", ["scalar.slope_fit_h", "scalar.sweep_h"],
     "scalar: {slope_fit_h: [1.0e-3, 1.0e-2]}", False),
    ("d2_case_scale", "depth: {d2: {scales: [0.5, 1.0, 1.5]}}", ["depth.d2.cases.2.scale", "depth.d2.scales"],
     "depth: {d2: {scales: [2.0, 0.5]}}", False),
    ("g6_single_sequence", "gpt2: {batch: 1, timing_batch: 1}", ["gpt2.batch"], "gpt2: {batch: 2, timing_batch: 1}",
     False),
    ("p7_fp16_weight", "precision: {spacing_weights: [1.0, 1.1]}", ["precision.spacing_weights"],
     "precision: {spacing_weights: [1.0, 1.0009765625, 65472.0, 6.103515625e-05, 5.9604644775390625e-08]}", False),
    ("p7_fp16_largest", "precision: {spacing_weights: [1.0, 65504.0]}", ["precision.spacing_weights"],
     "precision: {spacing_weights: [1.0, 32768.0]}", False),
    # (c) partitions that must add up
    ("l2_split", "lifetimes: {split: [3, 3]}", ["lifetimes.split", "lifetimes.accumulation_examples"],
     "lifetimes: {split: [1, 2, 4]}", True),
    # (d) sweeps in the order the code assumes
    ("s5_sweep_order", "scalar: {sweep_h: [1.0e-1, 1.0e-3, 1.0e-2, 1.0e-4]}", ["scalar.sweep_h"],
     "scalar: {sweep_h: [1.0e-4, 1.0e-3, 1.0e-2, 1.0e-1]}", True),
    ("s5_sweep_repeat", "scalar: {sweep_h: [1.0e-1, 1.0e-2, 1.0e-2, 1.0e-3]}", ["scalar.sweep_h"],
     "scalar: {sweep_h: [1.0e-1, 5.0e-2, 1.0e-2, 1.0e-3]}", False),
    ("s5_fit_interval", "scalar: {slope_fit_h: [1.0e-1, 1.0e-4]}", ["scalar.slope_fit_h"],
     "scalar: {slope_fit_h: [1.0e-4, 1.0e-2]}", False),
    ("l7_sweep_seq", "lifetimes: {shapes: {sweep_seq: [5, 1024, 16]}}", ["lifetimes.shapes.sweep_seq"],
     "lifetimes: {shapes: {sweep_seq: [2048, 1024, 5]}}", False),
]
BAD += [(name, bad, keys, dry) for name, bad, keys, _, dry in MEANING]
IDS = [c[0] for c in BAD]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "tiny.txt"
    path.write_text(TINY, encoding="utf-8")
    return path


def overlay(text: str, tiny) -> dict:
    return yaml.safe_load(text.replace("{tiny}", str(tiny)))


@pytest.mark.parametrize("case", BAD, ids=IDS)
def test_bad_overlay_is_refused_naming_its_keys(case, tiny):
    _, text, keys, _ = case
    message = problems(overlay(text, tiny))
    assert message.startswith("invalid configuration")
    for key in keys:
        assert f"'{key}'" in message, (key, message)


@pytest.mark.parametrize("over", [
    {"timing": {"processes": 20, "rounds": 200}},                       # bounds are inclusive
    {"charlm": {"train": {"n_head": 8}}},                               # 64 % 8 == 0
    {"gpt2": {"source": "random", "random_config": {"n_positions": 256}, "seq_len": 256}},
    {"gpt2": {"source": "path", "seq_len": 4096}},                      # path: checked when the job loads it
], ids=["at_bounds", "n_head_divides", "seq_len_equals_n_positions", "path_source_unchecked"])
def test_negative_control_valid_neighbours_pass(over):
    assert problems(over) == ""


@pytest.mark.parametrize("case", MEANING, ids=[c[0] for c in MEANING])
def test_negative_control_meaning_neighbour_passes(case, tiny):
    """Each meaning check refuses only the clash: a neighbouring value that fits passes."""
    assert problems(overlay(case[3], tiny)) == ""


def test_matrix_message_names_both_keys_their_shapes_and_the_rule(tiny):
    message = problems(overlay(MEANING[0][1], tiny))
    assert ("'tensor.matmul.x' (a 2x3 matrix) and 'tensor.matmul.w' (a 2x2 matrix) do not conform: "
            "x has 3 columns but w has 2 rows (Y = X W: X's columns must equal W's rows)") in message


def _own_problems(module, over: dict) -> list[str]:
    """What a family's own `checks` says of config.yaml + overlay."""
    return list(module.checks(merged(over)))


def test_every_meaning_rule_can_fail(tiny):
    """A check that cannot fail is a defect: every table entry's reason, gathered from every family, appears
    in some bad case's message, and every family's own `checks` refuses some bad case."""
    messages = "\n".join(problems(overlay(text, tiny)) for _, text, _, _ in BAD)
    reasons = ([e[-1] for table in C.TABLES for e in C.gathered(table)]
               + ["not a matrix", "the network has", "a fitted slope needs", "P5 would find no finite scale",
                  "a weight fp16 holds exactly"])
    assert len(reasons) > 20 and [r for r in reasons if r not in messages] == []
    own = [m for m in C.family_checks() if hasattr(m, "checks")]
    silent = [m.__name__ for m in own if not any(_own_problems(m, overlay(text, tiny)) for _, text, _, _ in BAD)]
    assert own and silent == []
    assert not any(_own_problems(m, {}) for m in own)   # control: the shipped config passes every family's checks


@pytest.mark.parametrize("x", [1.0, 1.1, 3.0e-4, 65504.0, 65472.0, 65488.0, 2.0 ** -24, 1.5 * 2.0 ** -24, 2.0 ** -14,
                               -2.0, 1.0 + 2.0 ** -10, 1.0 + 2.0 ** -11, 1.0e5])
def test_fp16_exact_agrees_with_numpy(x):
    import numpy as np

    with np.errstate(over="ignore"):
        assert fp16_exact(x) is (float(np.float16(x)) == x)


def test_precision_constants_match_the_code_and_fp16():
    import inspect

    import torch

    from adbench.precision import scaling

    assert inspect.signature(scaling.dynamic_scale).parameters["max_attempts"].default == DYNAMIC_SCALE_ATTEMPTS
    fp16 = lambda x: torch.tensor(x, dtype=torch.float64).to(torch.float16)  # noqa: E731 - as P5 casts
    assert torch.isfinite(fp16(math.nextafter(FP16_OVERFLOW, 0))) and torch.isinf(fp16(FP16_OVERFLOW))


def test_gpt2_small_constants_match_transformers():
    from transformers import GPT2Config

    ref = GPT2Config()
    assert GPT2_SMALL == {k: getattr(ref, k) for k in GPT2_SMALL}


@pytest.fixture(scope="module")
def copied(tmp_path_factory, tiny):
    return copy_project(tmp_path_factory.mktemp("bad") / "project")


@pytest.mark.slow
@pytest.mark.dag
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
@pytest.mark.dag
def test_snakemake_dry_run_negative_control_smoke_overlay_plans_jobs(copied):
    res = snakemake(copied, "-n", "--cores", "1", "--configfile", "config.yaml", ".test/config.yaml")
    assert res.returncode == 0, res.stderr[-2000:]
    assert sum(planned_jobs(res.stdout + res.stderr).values()) > 20
