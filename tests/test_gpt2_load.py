"""GPT-2 loading: path and fake-HF-cache routes on a tiny saved model, auto fallback, clear errors;
the gpt2 modules' import layering (locate -> load -> resolve)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from adbench import provenance  # noqa: E402
from adbench.gpt2.load import (gpt2_small_parameters, load_resolved, train_fallback_tokenizer,  # noqa: E402
                               unique_parameters)
from adbench.gpt2.locate import ModelNotFound, weights_location  # noqa: E402
from adbench.gpt2.resolve import record_model  # noqa: E402
from testing_tools import load_gpt2  # noqa: E402

REV = "607a30d783dfa663caf39e06633721c8d4cfcd7e"
TEXT = "The capital of France is Paris. The capital of Italy is Rome. " * 40


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny GPT-2 and its tokenizer written with save_pretrained, plus reference logits."""
    d = tmp_path_factory.mktemp("tiny")
    tok = train_fallback_tokenizer(TEXT, 300)
    torch.manual_seed(1)
    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, n_positions=64, vocab_size=300, bos_token_id=0, eos_token_id=0,
                     attn_implementation="eager")  # the loader uses eager attention too
    model = GPT2LMHeadModel(cfg).eval()
    model.save_pretrained(d)
    tok.save_pretrained(d)
    ids = torch.tensor([tok.encode("The capital of France is Paris")])
    with torch.no_grad():
        ref = model(ids, use_cache=False).logits
    return d, ids, ref


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hub"


def _check_loaded(loaded, ids, ref):
    m = loaded.model
    assert not m.training and m.config.use_cache is False and m.config._attn_implementation == "eager"
    assert next(m.parameters()).dtype == torch.float32
    with torch.no_grad():
        assert torch.equal(m(ids, use_cache=False).logits, ref)  # the very weights that were saved


def test_path_route_loads_saved_model(saved, empty_cache):
    d, ids, ref = saved
    loaded = load_gpt2("path", REV, path=str(d))
    _check_loaded(loaded, ids, ref)
    assert loaded.info["model_route"] == "path"
    assert loaded.info["model_source"] == "local"  # not GPT-2 small's shape, so never called pretrained
    assert loaded.tokenizer.encode("The capital of France is Paris") == ids[0].tolist()  # the saved tokenizer
    assert load_gpt2("auto", REV, path=str(d)).info["model_route"] == "path"


def test_cache_route_reads_fake_hub_layout(saved, empty_cache):
    d, ids, ref = saved
    snap = empty_cache / "models--gpt2" / "snapshots" / REV
    snap.mkdir(parents=True)
    for f in d.iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    loaded = load_gpt2("cache", REV)
    _check_loaded(loaded, ids, ref)
    assert loaded.info["model_source"] == "pretrained" and loaded.info["model_revision"] == REV
    assert load_gpt2("auto", REV, corpus_text=TEXT).info["model_route"] == "cache"
    with pytest.raises(ModelNotFound, match="0" * 40):  # another revision is not silently substituted
        load_gpt2("cache", "0" * 40)


def test_missing_model_names_where_it_looked(empty_cache, tmp_path):
    with pytest.raises(ModelNotFound) as err:
        load_gpt2("cache", REV)
    msg = str(err.value)
    assert str(empty_cache / "models--gpt2" / "snapshots" / REV) in msg and "gpt2.path" in msg
    with pytest.raises(ModelNotFound, match="nowhere"):
        load_gpt2("path", REV, path=str(tmp_path / "nowhere"))


def test_auto_falls_back_to_seeded_random(empty_cache):
    cfg = {"n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 32, "vocab_size": 300}
    a = load_gpt2("auto", REV, random_config=cfg, corpus_text=TEXT, tokenizer_vocab_size=300)
    b = load_gpt2("random", REV, random_config=cfg, corpus_text=TEXT, tokenizer_vocab_size=300)
    assert a.info["model_source"] == "random-reduced" and "not found" in a.info["model_location"]
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))  # seeded
    assert "byte-level BPE" in a.info["tokenizer"] and a.info["tokenizer_vocab"] == len(a.tokenizer)


def test_model_json_and_tokenizer_file_rebuild_the_same_model(empty_cache, tmp_path):
    """gpt2_model trains the fallback tokenizer once; a job rebuilding from model.json + tokenizer.json
    gets the very model, tokenizer and info that resolving in-process gives."""
    cfg = {"n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 32, "vocab_size": 300}
    tok_file = tmp_path / "tokenizer.json"
    out = record_model("auto", REV, None, 5, cfg, 300, TEXT, str(tok_file))
    tok_file.write_bytes(out["tokenizer"])
    rec = out["model"]
    assert rec["route"] == "random" and rec["tokenizer_location"] == str(tok_file) and rec["seed"] == 5
    job = load_resolved(rec)  # what gpt2_prompt / _sequence / _memory do
    ref = load_gpt2("random", REV, seed=5, random_config=cfg, corpus_text=TEXT, tokenizer_vocab_size=300)
    assert job.info == ref.info
    assert job.tokenizer.encode(TEXT) == ref.tokenizer.encode(TEXT)
    assert all(torch.equal(p, q) for p, q in zip(job.model.parameters(), ref.model.parameters()))
    # negative control: another seed in the record gives other weights
    other = load_resolved(rec | {"seed": 6})
    assert not torch.equal(next(other.model.parameters()), next(ref.model.parameters()))


def test_weights_location_is_the_snapshot_only_when_present(saved, empty_cache):
    assert weights_location("auto", REV, None) is None  # random fallback: no directory to watch
    snap = empty_cache / "models--gpt2" / "snapshots" / REV
    snap.mkdir(parents=True)
    for f in saved[0].iterdir():
        (snap / f.name).write_bytes(f.read_bytes())
    assert weights_location("auto", REV, None) == str(snap)
    assert weights_location("random", REV, None) is None
    assert weights_location("auto", REV, str(saved[0])) == str(saved[0])  # gpt2.path wins, as in loading
    rec = record_model("auto", REV, None, 0, {}, 300, TEXT, "unused.json")["model"]
    assert rec["route"] == "cache" and rec["location"] == str(snap)


def test_parameter_count_matches_analytic_formula():
    c = GPT2Config()
    V, P, C, L = c.vocab_size, c.n_positions, c.n_embd, c.n_layer
    block = 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + 2 * C + (C * 4 * C + 4 * C) + (4 * C * C + C)
    expected = V * C + P * C + L * block + 2 * C  # tied output layer adds nothing
    assert gpt2_small_parameters() == expected
    # negative control: counting the tied lm_head as its own tensor gives a different, wrong count
    with torch.device("meta"):
        m = GPT2LMHeadModel(c)
    naive = sum(p.numel() for _, p in m.named_parameters(remove_duplicate=False))
    assert naive == expected + V * C != unique_parameters(m)


# ---- import layering: locate (parse time, stdlib only) -> load (torch, transformers) -> resolve ----------

GPT2_DIR = Path(provenance._module_file("adbench.gpt2")).parent


def gpt2_import_graph() -> dict[str, set[str]]:
    """Module -> the gpt2 modules it imports (at any depth of its source, lazy imports included)."""
    names = {f"adbench.gpt2.{p.stem}" for p in GPT2_DIR.glob("*.py") if p.stem != "__init__"}
    return {n: provenance._local_imports(n, GPT2_DIR / f"{n.rsplit('.', 1)[1]}.py", "adbench") & names
            for n in sorted(names)}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` as [a, b, ..., a], or None when it is acyclic (depth-first search)."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            cycle = visit(nxt, path + [node])
            if cycle:
                return cycle
        done.add(node)
        return None

    return next((c for c in (visit(n, []) for n in sorted(graph)) if c), None)


def test_cycle_finder_finds_a_cycle_and_only_a_real_one():
    # negative control: a graph with a cycle (as load <-> resolve had) is caught, with its members
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None  # a diamond is no cycle


def test_gpt2_modules_import_each_other_without_a_cycle():
    graph = gpt2_import_graph()
    assert graph["adbench.gpt2.resolve"] >= {"adbench.gpt2.load", "adbench.gpt2.locate"}  # the graph sees imports
    assert graph["adbench.gpt2.load"] == {"adbench.gpt2.locate"}
    assert graph["adbench.gpt2.locate"] == set()
    assert find_cycle(graph) is None, find_cycle(graph)


@pytest.mark.parametrize("probe", ["prompt", "sequence", "memory"])
def test_probe_code_hash_does_not_follow_into_resolve(probe):
    """A change to how gpt2_model resolves re-runs the probes through model.json, not through their code hash."""
    closure = provenance.module_closure([f"adbench.gpt2.{probe}"])
    assert "adbench.gpt2.load" in closure and "adbench.gpt2.resolve" not in closure
    # negative control: resolve's own closure does reach load and locate, so the check above can fail
    assert {"adbench.gpt2.load", "adbench.gpt2.locate"} <= provenance.module_closure(["adbench.gpt2.resolve"]).keys()


def _import_in_fresh_process(module: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["PYTHONPATH"] = os.pathsep.join([str(GPT2_DIR.parents[1]), env.get("PYTHONPATH", "")])
    code = (f"import importlib, json, os, sys; importlib.import_module({module!r}); "
            "print(json.dumps({'offline': [os.environ.get(k) for k in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE')], "
            "'heavy': sorted(m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules)}))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_locate_imports_nothing_heavy_and_leaves_the_environment_alone():
    """What the rules file imports at parse time runs inside Snakemake: no torch, no offline switch there."""
    assert _import_in_fresh_process("adbench.gpt2.locate") == {"offline": [None, None], "heavy": []}
    # negative control: load.py, which the jobs import, does turn the process offline, so the check can fail
    assert _import_in_fresh_process("adbench.gpt2.load")["offline"] == ["1", "1"]
