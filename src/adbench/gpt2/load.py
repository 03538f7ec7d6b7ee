"""Load GPT-2 offline: pinned revision from the HF cache or a directory, else a seeded random init."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

# Never reach the network, whatever the caller's environment says.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

log = logging.getLogger(__name__)
REPO = "gpt2"
SOURCES = ("auto", "cache", "path", "random")


class ModelNotFound(FileNotFoundError):
    """The configured GPT-2 weights are not on this machine."""


@dataclass
class Loaded:
    model: torch.nn.Module
    tokenizer: object  # a transformers tokenizer: encode(text) -> ids, decode(ids) -> text
    info: dict = field(default_factory=dict)  # model_source, route, revision, tokenizer, ...


def gpt2_small_parameters() -> int:
    """Unique parameter elements of GPT-2 small (default GPT2Config), counted on the meta device."""
    from transformers import GPT2Config, GPT2LMHeadModel

    with torch.device("meta"):
        model = GPT2LMHeadModel(GPT2Config())
    return unique_parameters(model)


def unique_parameters(model: torch.nn.Module) -> int:
    """Parameter elements counted once per tensor (the tied token table counts once)."""
    return sum(p.numel() for p in model.parameters())  # parameters() already dedups ties


def hub_cache_dir() -> Path:
    """The HF hub cache this process would read: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def _snapshot(revision: str) -> Path:
    return hub_cache_dir() / f"models--{REPO}" / "snapshots" / revision


def _how_to(revision: str) -> str:
    return (f"Provide it by copying a snapshot of '{REPO}' at revision {revision} into the Hugging Face "
            f"cache (set HF_HUB_CACHE or HF_HOME), or set gpt2.path to a directory holding config.json, "
            f"the weights and the tokenizer files; or set gpt2.source: random.")


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


def _finish(model: torch.nn.Module, device: str) -> torch.nn.Module:
    """fp32, eval mode (dropout off), no inference cache, on `device`."""
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device: cuda was configured but torch sees no CUDA device")
    model.config.use_cache = False
    return model.to(device=device, dtype=torch.float32).eval()


def _from_pretrained(where: str, revision: str | None, cache_dir: Path | None, device: str):
    from transformers import AutoTokenizer, GPT2LMHeadModel

    kw = dict(local_files_only=True, revision=revision, cache_dir=str(cache_dir) if cache_dir else None)
    model = GPT2LMHeadModel.from_pretrained(where, attn_implementation="eager", dtype=torch.float32, **kw)
    tokenizer = AutoTokenizer.from_pretrained(where, **kw)
    return _finish(model, device), tokenizer


def _is_gpt2_small(config) -> bool:
    from transformers import GPT2Config

    ref = GPT2Config()
    return all(getattr(config, k) == getattr(ref, k) for k in ("n_layer", "n_embd", "n_head", "vocab_size", "n_positions"))


def load_gpt2(source: str, revision: str, path: str | None = None, device: str = "cpu", seed: int = 0,
              random_config: dict | None = None, corpus_text: str | None = None,
              tokenizer_vocab_size: int = 50257) -> Loaded:
    """The model and tokenizer the configuration asks for, never downloading anything."""
    if source not in SOURCES:
        raise ValueError(f"gpt2.source must be one of {SOURCES}, got {source!r}")
    snap = _snapshot(revision)
    if source == "auto":
        if path and (Path(path) / "config.json").exists():
            source = "path"
        elif (snap / "config.json").exists():
            source = "cache"
        else:
            log.info("no GPT-2 at %s%s: using the random fallback", snap, f" or {path}" if path else "")
            source = "random"
    if source == "path":
        if not path or not (Path(path) / "config.json").exists():
            raise ModelNotFound(f"gpt2.source: path, but no config.json in gpt2.path={path!r}. " + _how_to(revision))
        model, tok = _from_pretrained(str(path), None, None, device)
        label = "pretrained" if _is_gpt2_small(model.config) else "local"
        return Loaded(model, tok, _info(model, tok, label, "path", revision=None, where=str(path),
                                        tokenizer=f"from {path}"))
    if source == "cache":
        if not (snap / "config.json").exists():
            raise ModelNotFound(f"gpt2.source: cache, but {snap} holds no config.json (looked in the HF hub "
                                f"cache {hub_cache_dir()}). " + _how_to(revision))
        model, tok = _from_pretrained(REPO, revision, hub_cache_dir(), device)
        return Loaded(model, tok, _info(model, tok, "pretrained", "cache", revision=revision, where=str(snap),
                                        tokenizer=f"{REPO}@{revision}"))
    return _random(revision, device, seed, random_config or {}, corpus_text, tokenizer_vocab_size, snap)


def _random(revision, device, seed, random_config, corpus_text, vocab_size, snap) -> Loaded:
    """Seeded random-init GPT-2 (default config unless overridden) and a BPE trained on the corpus."""
    from transformers import GPT2Config, GPT2LMHeadModel

    if not corpus_text:
        raise ValueError("the random fallback needs corpus text to train its tokenizer")
    tok = train_fallback_tokenizer(corpus_text, vocab_size)
    eos = tok.eos_token_id
    config = GPT2Config(attn_implementation="eager", use_cache=False, bos_token_id=eos, eos_token_id=eos,
                        **random_config)
    if len(tok) > config.vocab_size:
        raise ValueError(f"fallback tokenizer has {len(tok)} tokens but the model only {config.vocab_size}")
    torch.manual_seed(seed)
    model = _finish(GPT2LMHeadModel(config), device)
    vocab = json.dumps(tok.get_vocab(), sort_keys=True).encode()
    desc = (f"byte-level BPE trained on the corpus with the tokenizers library (requested vocabulary "
            f"{vocab_size}, reached {len(tok)}; sha256 {hashlib.sha256(vocab).hexdigest()[:16]})")
    label = "random" if _is_gpt2_small(config) else "random-reduced"  # reduced: smoke-size architecture
    return Loaded(model, tok, _info(model, tok, label, "random", revision=None, where=f"not found: {snap}",
                                    tokenizer=desc, seed=seed))


def _info(model, tok, label, route, revision, where, tokenizer, seed=None) -> dict:
    cfg = model.config
    return {"model_source": label, "model_route": route, "model_revision": revision, "model_location": where,
            "model_seed": seed, "tokenizer": tokenizer, "tokenizer_vocab": len(tok),
            "model_vocab": cfg.vocab_size, "n_layer": cfg.n_layer, "n_embd": cfg.n_embd, "n_head": cfg.n_head,
            "attn_implementation": cfg._attn_implementation, "dtype": "float32", "mode": "eval",
            "use_cache": False, "unique_parameters": unique_parameters(model)}
