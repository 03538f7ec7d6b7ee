"""Resolve which GPT-2 the configuration gets on this machine, once per run (rule gpt2_model); where it
looks is locate.py, how a record becomes a model is load.py."""

from __future__ import annotations

import hashlib
import json
import logging

from .load import Loaded, is_gpt2_small, load_resolved, random_gpt2_config, train_fallback_tokenizer
from .locate import REPOS, hub_cache_dir, route_for

log = logging.getLogger(__name__)


def source_label(revision: str, pinned: str) -> str:
    """'pretrained' for the pinned revision; 'pretrained@<revision>' for another, so every output names it."""
    return "pretrained" if revision == pinned else f"pretrained@{revision}"


def resolve_model(source: str, revision: str, path: str | None = None, seed: int = 0,
                  random_config: dict | None = None, corpus_text: str | None = None,
                  tokenizer_vocab_size: int = 50257, tokenizer_file: str | None = None,
                  allow_other_revision: bool = False) -> tuple[dict, object]:
    """(record, tokenizer): which model the configuration gets here, never downloading anything.

    The record is what gpt2_model writes to model.json (route, label, repo id, revision that ran and the pinned
    one, location, seed, random config, tokenizer description and where it lives); the random route trains its
    byte-level BPE here, once, and its file goes to `tokenizer_file`."""
    from transformers import AutoTokenizer, GPT2Config

    route, snap = route_for(source, revision, path, allow_other_revision)
    rec = {"route": route, "repo_id": None, "revision": None, "pinned_revision": revision, "seed": None,
           "random_config": None, "tokenizer_location": None}
    if route == "path":
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        label = "pretrained" if is_gpt2_small(GPT2Config.from_pretrained(str(path), local_files_only=True)) else "local"
        return rec | {"model_source": label, "location": str(path), "tokenizer": f"from {path}",
                      "tokenizer_location": str(path)}, tok
    if route == "cache":
        tok = AutoTokenizer.from_pretrained(snap.repo_id, revision=snap.revision, cache_dir=str(hub_cache_dir()),
                                            local_files_only=True)
        return rec | {"model_source": source_label(snap.revision, revision), "repo_id": snap.repo_id,
                      "revision": snap.revision, "location": str(snap.directory),
                      "tokenizer": f"{snap.repo_id}@{snap.revision}"}, tok
    if not corpus_text:
        raise ValueError("the random fallback needs corpus text to train its tokenizer")
    tok = train_fallback_tokenizer(corpus_text, tokenizer_vocab_size)
    config = random_gpt2_config(tok, random_config or {})
    vocab = json.dumps(tok.get_vocab(), sort_keys=True).encode()
    desc = (f"byte-level BPE trained on the corpus with the tokenizers library (requested vocabulary "
            f"{tokenizer_vocab_size}, reached {len(tok)}; sha256 {hashlib.sha256(vocab).hexdigest()[:16]})")
    label = "random" if is_gpt2_small(config) else "random-reduced"  # reduced: smoke-size architecture
    where = " or ".join(f"{r}@{revision}" for r in REPOS)
    return rec | {"model_source": label, "location": f"not found: {where} in {hub_cache_dir()}", "seed": seed,
                  "random_config": dict(random_config or {}), "tokenizer": desc,
                  "tokenizer_location": tokenizer_file}, tok


def record_model(source: str, revision: str, path: str | None, seed: int, random_config: dict,
                 tokenizer_vocab_size: int, corpus_text: str, tokenizer_path: str,
                 allow_other_revision: bool = False) -> dict:
    """gpt2_model: the model.json record and the tokenizer file (trained fallback, or a copy of the found one);
    `tokenizer_path` is where the rule writes that file (the record says where the tokenizer lives)."""
    record, tok = resolve_model(source, revision, path, seed, random_config, corpus_text, tokenizer_vocab_size,
                                tokenizer_path, allow_other_revision)
    log.info("GPT-2 resolves to route %s (%s); tokenizer: %s", record["route"], record["model_source"], record["tokenizer"])
    return {"model": record, "tokenizer": tok.backend_tokenizer.to_str().encode("utf-8"), "_meta": record}
