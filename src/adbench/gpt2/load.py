"""Load GPT-2 offline from a resolved record (see resolve.py): the snapshot it names from the HF cache (repo id and
revision) or a directory, else a seeded random init with the fallback tokenizer gpt2_model trained."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from .locate import hub_cache_dir

# Never reach the network, whatever the caller's environment says. huggingface_hub reads these when
# it is first imported, so they are set on import here and transformers is only imported inside the
# functions below. locate.py, which the rules file imports at parse time, leaves Snakemake's own
# environment alone.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

log = logging.getLogger(__name__)


@dataclass
class Loaded:
    model: object  # a torch GPT2LMHeadModel
    tokenizer: object  # a transformers tokenizer: encode(text) -> ids, decode(ids) -> text
    info: dict = field(default_factory=dict)  # model_source, route, revision, tokenizer, ...


def gpt2_small_parameters() -> int:
    """Unique parameter elements of GPT-2 small (default GPT2Config), counted on the meta device."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    with torch.device("meta"):
        model = GPT2LMHeadModel(GPT2Config())
    return unique_parameters(model)


def unique_parameters(model) -> int:
    """Parameter elements counted once per tensor (the tied token table counts once)."""
    return sum(p.numel() for p in model.parameters())  # parameters() already dedups ties


def train_fallback_tokenizer(text: str, vocab_size: int):
    """Byte-level BPE trained on `text` with the `tokenizers` library, as a transformers tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"])
    tok.train_from_iterator([text], trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>")


def _finish(model, device: str):
    """fp32, eval mode (dropout off), no inference cache, on `device`."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device: cuda was configured but torch sees no CUDA device")
    model.config.use_cache = False
    return model.to(device=device, dtype=torch.float32).eval()


def _from_pretrained(where: str, revision: str | None, cache_dir: Path | None, device: str, tokenizer=None):
    import torch
    from transformers import AutoTokenizer, GPT2LMHeadModel

    kw = dict(local_files_only=True, revision=revision, cache_dir=str(cache_dir) if cache_dir else None)
    model = GPT2LMHeadModel.from_pretrained(where, attn_implementation="eager", dtype=torch.float32, **kw)
    tokenizer = tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(where, **kw)
    return _finish(model, device), tokenizer


def is_gpt2_small(config) -> bool:
    """Whether `config` has GPT-2 small's shape (what the documents measured)."""
    from transformers import GPT2Config

    ref = GPT2Config()
    return all(getattr(config, k) == getattr(ref, k) for k in ("n_layer", "n_embd", "n_head", "vocab_size", "n_positions"))


def random_gpt2_config(tok, overrides: dict):
    """GPT2Config of the fallback (GPT-2 small unless `overrides` say otherwise), its end-of-text id from `tok`."""
    from transformers import GPT2Config

    eos = tok.eos_token_id
    config = GPT2Config(attn_implementation="eager", use_cache=False, bos_token_id=eos, eos_token_id=eos,
                        **overrides)
    if len(tok) > config.vocab_size:
        raise ValueError(f"fallback tokenizer has {len(tok)} tokens but the model only {config.vocab_size}")
    return config


def fallback_tokenizer_from_file(path: str):
    """The trained fallback tokenizer back from the tokenizer.json gpt2_model wrote."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token="<|endoftext|>")


def load_resolved(record: dict, device: str = "cpu", tokenizer=None) -> Loaded:
    """The model (and tokenizer) a model.json record names, on `device`; `tokenizer` skips reading it."""
    route = record["route"]
    if route == "path":
        model, tok = _from_pretrained(record["location"], None, None, device, tokenizer)
        return Loaded(model, tok, _info(model, tok, record))
    if route == "cache":
        model, tok = _from_pretrained(record["repo_id"], record["revision"], hub_cache_dir(), device, tokenizer)
        return Loaded(model, tok, _info(model, tok, record))
    from transformers import GPT2LMHeadModel
    import torch

    tok = tokenizer if tokenizer is not None else fallback_tokenizer_from_file(record["tokenizer_location"])
    config = random_gpt2_config(tok, record["random_config"] or {})
    torch.manual_seed(record["seed"])
    model = _finish(GPT2LMHeadModel(config), device)
    return Loaded(model, tok, _info(model, tok, record))


def _info(model, tok, record: dict) -> dict:
    cfg = model.config
    return {"model_source": record["model_source"], "model_route": record["route"], "model_repo_id": record["repo_id"],
            "model_revision": record["revision"], "model_pinned_revision": record["pinned_revision"],
            "model_location": record["location"],
            "model_seed": record["seed"], "tokenizer": record["tokenizer"], "tokenizer_vocab": len(tok),
            "model_vocab": cfg.vocab_size, "n_layer": cfg.n_layer, "n_embd": cfg.n_embd, "n_head": cfg.n_head,
            "attn_implementation": cfg._attn_implementation, "dtype": "float32", "mode": "eval",
            "use_cache": False, "unique_parameters": unique_parameters(model)}

