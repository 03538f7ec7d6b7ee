"""The G family's cross-key configuration checks, against every model gpt2.source may load, and the corpus."""

from typing import Any, Iterator

from ..config import clash, corpus_text, outside

# transformers.GPT2Config() defaults (GPT-2 small); tests/test_gpt2_load.py keeps them equal.
# Typed here so that reading the config does not import transformers (seconds per Snakemake call).
GPT2_SMALL = {"n_layer": 12, "n_embd": 768, "n_head": 12, "n_positions": 1024, "vocab_size": 50257}

IN_RANGE = [
    ("gpt2.timing_batch", 1, "gpt2.batch", int, "G6 times a slice of the batch"),
]


def models(g: dict) -> list[tuple[str, Any, dict]]:
    """(key naming the architecture, its value, architecture) of every model gpt2.source may load that is known
    at parse time; source 'path' reads its config.json only when a job runs."""
    out = []
    if g["source"] in ("auto", "cache"):
        out.append(("gpt2.source", g["source"], GPT2_SMALL))  # the pinned GPT-2 small snapshot
    if g["source"] in ("auto", "random"):
        out.append(("gpt2.random_config", g["random_config"], {**GPT2_SMALL, **g["random_config"]}))
    return out


def _arch_key(name: str, value: Any, arch: dict, k: str) -> tuple[str, Any]:
    """The key (and value) a message names for architecture field k of one possible model."""
    return (f"{name}.{k}", arch[k]) if name == "gpt2.random_config" else (name, value)


def checks(cfg: dict) -> Iterator[str]:
    """g4_layer indexes the model's own blocks; g3_layers are the documents' GPT-2 small layers 0..11 (the
    schema bounds them) that G3 maps to the nearest block at the same relative depth of a smaller model, so
    only g4_layer meets n_layer here. The corpus must hold the tokens the sequence and batch slice: a
    byte-level BPE token covers at least one UTF-8 byte, so too few bytes is already too few tokens."""
    g = cfg["gpt2"]
    for name, value, arch in models(g):
        key = lambda k: _arch_key(name, value, arch, k)  # noqa: E731
        if arch["n_embd"] % arch["n_head"]:
            yield clash([key("n_embd"), key("n_head")], "n_embd must be a multiple of n_head")
        if bad := outside(g["seq_len"], 2, arch["n_positions"]):
            yield clash([("gpt2.seq_len", g["seq_len"]), key("n_positions")],
                        f"{bad} (the model has {arch['n_positions']} positions)")
        if bad := outside(g["g4_layer"], 0, arch["n_layer"] - 1):
            yield clash([("gpt2.g4_layer", g["g4_layer"]), key("n_layer")],
                        f"{bad} (the model has layers 0..{arch['n_layer'] - 1})")
        if name == "gpt2.random_config" and (bad := outside(g["tokenizer_vocab_size"], 0, arch["vocab_size"])):
            yield clash([("gpt2.tokenizer_vocab_size", g["tokenizer_vocab_size"]), key("vocab_size")],
                        f"{bad}: the fallback tokenizer may not have more tokens than the model's vocabulary")
    text = corpus_text(cfg)
    if not isinstance(text, tuple):
        return
    _, whole = text
    src = ("corpus.path", cfg["corpus"]["path"])
    tail = len(whole[g["text_offset"]:].encode("utf-8"))
    if tail < g["seq_len"]:
        yield clash([("gpt2.seq_len", g["seq_len"]), ("gpt2.text_offset", g["text_offset"])],
                    f"the corpus ({src[0]} = {src[1]!r}) has {tail} UTF-8 bytes after the offset, "
                    "so fewer tokens than seq_len")
    if len(whole.encode("utf-8")) < g["batch"] * g["seq_len"]:
        yield clash([("gpt2.batch", g["batch"]), ("gpt2.seq_len", g["seq_len"])],
                    f"G6 needs batch x seq_len tokens; the corpus ({src[0]} = {src[1]!r}) has fewer UTF-8 bytes")
