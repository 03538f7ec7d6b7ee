"""Config validation with messages that name the offending key(s).

`check_config` is the single entry point: the JSON schema (types, ranges, upper bounds),
then finiteness (JSON schema accepts NaN and infinities), then cross-key constraints that
would otherwise fail only when the job that needs them starts.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import yaml

# transformers.GPT2Config() defaults (GPT-2 small); tests/test_bad_configs.py keeps them equal.
# Typed here so that reading the config does not import transformers (seconds per Snakemake call).
GPT2_SMALL = {"n_layer": 12, "n_embd": 768, "n_head": 12, "n_positions": 1024, "vocab_size": 50257}
CORPUS_READ_LIMIT = 64 * 2**20  # bytes: a larger corpus file is long enough for every bounded size


class ConfigError(ValueError):
    """A config value is missing, of the wrong type, out of range or inconsistent with another."""


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _why(err: jsonschema.ValidationError) -> str:
    """The schema's description of the key, as the reason for a bound."""
    return f" ({err.schema['description']})" if isinstance(err.schema.get("description"), str) else ""


def _describe(err: jsonschema.ValidationError) -> str:
    key = _key(err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1]
        return f"config key '{_key([*err.absolute_path, missing])}' is missing"
    if err.validator == "additionalProperties":
        return f"config key '{key}': unknown key(s): {err.message.split('(')[-1].rstrip(')')}"
    if err.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bound = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[err.validator]
        return (f"config key '{key}' = {err.instance!r} is out of range: "
                f"allowed {bound} {err.validator_value}{_why(err)}")
    if err.validator == "maxItems":
        return f"config key '{key}' has {len(err.instance)} items: allowed at most {err.validator_value}{_why(err)}"
    if err.validator == "enum":
        return f"config key '{key}' = {err.instance!r} is not one of {err.validator_value}"
    if err.validator == "type":
        return f"config key '{key}' = {err.instance!r} has the wrong type: expected {err.validator_value}"
    return f"config key '{key}': {err.message}"


def non_finite(node: Any, path: tuple = ()) -> Iterator[str]:
    """A message for every NaN or infinite number anywhere in the config, naming its key."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from non_finite(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from non_finite(v, (*path, i))
    elif isinstance(node, float) and not math.isfinite(node):
        yield f"config key '{_key(path)}' = {node!r} is not a finite number"


def _pair(a: str, av: Any, b: str, bv: Any, why: str) -> str:
    return f"config keys '{a}' = {av!r} and '{b}' = {bv!r} are inconsistent: {why}"


def _charlm(cfg: dict) -> Iterator[str]:
    t, c = cfg["charlm"]["train"], cfg["charlm"]
    if t["n_embd"] % t["n_head"]:
        yield _pair("charlm.train.n_embd", t["n_embd"], "charlm.train.n_head", t["n_head"],
                    "n_embd must be a multiple of n_head (each head gets n_embd / n_head channels)")
    for k in ("early_step", "final_window"):
        if c[k] > t["steps"]:
            yield _pair(f"charlm.{k}", c[k], "charlm.train.steps", t["steps"], f"{k} must be at most steps")


def gpt2_models(g: dict) -> list[tuple[str, Any, dict]]:
    """(key naming the architecture, its value, architecture) of every model gpt2.source may
    load that is known at parse time; source 'path' reads its config.json only when a job runs."""
    out = []
    if g["source"] in ("auto", "cache"):
        out.append(("gpt2.source", g["source"], GPT2_SMALL))  # the pinned GPT-2 small snapshot
    if g["source"] in ("auto", "random"):
        out.append(("gpt2.random_config", g["random_config"], {**GPT2_SMALL, **g["random_config"]}))
    return out


def _arch_key(name: str, value: Any, arch: dict, k: str) -> tuple[str, Any]:
    """The key (and value) a message names for architecture field k of one possible model."""
    return (f"{name}.{k}", arch[k]) if name == "gpt2.random_config" else (name, value)


def _gpt2(cfg: dict) -> Iterator[str]:
    g = cfg["gpt2"]
    for name, value, arch in gpt2_models(g):
        key = lambda k: _arch_key(name, value, arch, k)  # noqa: E731
        if arch["n_embd"] % arch["n_head"]:
            yield _pair(*key("n_embd"), *key("n_head"), "n_embd must be a multiple of n_head")
        if g["seq_len"] > arch["n_positions"]:
            yield _pair("gpt2.seq_len", g["seq_len"], *key("n_positions"),
                        f"the model has {arch['n_positions']} positions")
        if g["g4_layer"] >= arch["n_layer"]:
            yield _pair("gpt2.g4_layer", g["g4_layer"], *key("n_layer"),
                        f"the model has layers 0..{arch['n_layer'] - 1}")
        if name == "gpt2.random_config" and g["tokenizer_vocab_size"] > arch["vocab_size"]:
            yield _pair("gpt2.tokenizer_vocab_size", g["tokenizer_vocab_size"], *key("vocab_size"),
                        "the fallback tokenizer may not have more tokens than the model's vocabulary")
    if g["timing_batch"] > g["batch"]:
        yield _pair("gpt2.timing_batch", g["timing_batch"], "gpt2.batch", g["batch"], "G6 times a slice of the batch")


def _corpus_text(c: dict) -> str | None:
    """The corpus text the corpus rule will read, or None when the file is too large to read here."""
    from .corpus import read_text

    if c["path"] is not None and Path(c["path"]).is_file() and Path(c["path"]).stat().st_size > CORPUS_READ_LIMIT:
        return None
    return read_text(c["path"])[0]


def _corpus(cfg: dict) -> Iterator[str]:
    """Corpus length against the sizes that slice it. Characters are known here; tokens only
    when a tokenizer runs, but a byte-level BPE token covers at least one UTF-8 byte, so too
    few bytes is already too few tokens (a necessary condition; the jobs check the rest)."""
    from .corpus import CorpusError, split

    c, t, g = cfg["corpus"], cfg["charlm"]["train"], cfg["gpt2"]
    try:
        text = _corpus_text(c)
        if text is None:
            return
        train, _ = split(text, c["heldout_fraction"])
    except (CorpusError, OSError, UnicodeDecodeError) as err:
        yield f"config key 'corpus.path' = {c['path']!r}: {err}"
        return
    src = ("corpus.path", c["path"])
    if len(train) < t["block_size"] + 2:  # training draws windows of block_size + 1 characters
        yield _pair("charlm.train.block_size", t["block_size"], *src,
                    f"the training split has {len(train)} characters; a window needs block_size + 2")
    tail = len(text[g["text_offset"]:].encode("utf-8"))
    if tail < g["seq_len"]:
        yield _pair("gpt2.seq_len", g["seq_len"], "gpt2.text_offset", g["text_offset"],
                    f"the corpus ({src[0]} = {src[1]!r}) has {tail} UTF-8 bytes after the offset, "
                    "so fewer tokens than seq_len")
    if len(text.encode("utf-8")) < g["batch"] * g["seq_len"]:
        yield _pair("gpt2.batch", g["batch"], "gpt2.seq_len", g["seq_len"],
                    f"G6 needs batch x seq_len tokens; the corpus ({src[0]} = {src[1]!r}) has fewer UTF-8 bytes")


def _others(cfg: dict) -> Iterator[str]:
    d1, d2, ck, o1, o3 = (cfg["depth"]["d1"], cfg["depth"]["d2"], cfg["lifetimes"]["checkpoint"],
                          cfg["optim"]["o1"], cfg["optim"]["o3"])
    for i, ch in enumerate(d1["chains"]):
        if max(ch["report_at"]) > d1["max_depth"]:
            yield _pair(f"depth.d1.chains.{i}.report_at", ch["report_at"], "depth.d1.max_depth", d1["max_depth"],
                        "every reported depth must be measured")
    for i, case in enumerate(d2["cases"]):
        if case["depth"] > d2["max_depth"]:
            yield _pair(f"depth.d2.cases.{i}.depth", case["depth"], "depth.d2.max_depth", d2["max_depth"],
                        "a case deeper than the grid")
    if ck["segments"] > ck["blocks"]:
        yield _pair("lifetimes.checkpoint.segments", ck["segments"], "lifetimes.checkpoint.blocks", ck["blocks"],
                    "checkpoint_sequential needs at least one block per segment")
    if o1["report_seed"] >= o1["seeds"]:
        yield _pair("optim.o1.report_seed", o1["report_seed"], "optim.o1.seeds", o1["seeds"], "seeds run 0..seeds-1")
    named = {"adam_arrangement": [o3["adam_arrangement"]], "mixed_arrangements": o3["mixed_arrangements"]}
    for key, names in named.items():
        for name in set(names) - set(o3["arrangements"]):
            yield _pair(f"optim.o3.{key}", name, "optim.o3.arrangements", sorted(o3["arrangements"]), "unknown name")
    sweep = cfg["precision"]["rel_error_sweep"]
    if sweep["lo_exp"] >= sweep["hi_exp"]:
        yield _pair("precision.rel_error_sweep.lo_exp", sweep["lo_exp"], "precision.rel_error_sweep.hi_exp",
                    sweep["hi_exp"], "lo_exp must be below hi_exp")


def _archives(cfg: dict) -> Iterator[str]:
    """compare_to names archives of this working directory (both entry points run there)."""
    here = sorted(p.parent.name for p in Path("archive").glob("*/MANIFEST.json"))
    for label in cfg["compare_to"]:
        if label not in here:
            yield (f"config key 'compare_to' lists archive {label!r}, but archive/{label}/MANIFEST.json does not "
                   f"exist (archives here: {', '.join(here) or 'none'}); create one with `snakemake archive`")


def cross_key_problems(cfg: dict) -> list[str]:
    """Constraints between keys, checked once every key has passed the schema."""
    return [*_charlm(cfg), *_gpt2(cfg), *_corpus(cfg), *_others(cfg), *_archives(cfg)]


def load_schema(path: str | Path) -> dict:
    """Read the YAML JSON-schema."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def check_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Raise ConfigError listing every problem, each naming its key(s) and allowed range."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_path))
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    problems = [*non_finite(config), *(_describe(e) for e in errors)]
    if not problems:
        problems = cross_key_problems(config)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"invalid configuration ({len(problems)} problem(s)):\n{lines}")
