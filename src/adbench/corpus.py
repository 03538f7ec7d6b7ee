"""The shared text corpus: default source, user override, deterministic train / held-out split."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pandas as pd

log = logging.getLogger(__name__)
DEFAULT_SOURCE = "pydoc_data.topics (CPython's bundled documentation topics, keys in sorted order)"


class CorpusError(ValueError):
    """The corpus file is missing, unreadable or empty."""


def default_text() -> str:
    """CPython's bundled help topics joined in sorted key order: no network needed."""
    from pydoc_data.topics import topics
    return "\n\n".join(topics[k] for k in sorted(topics))


def read_text(path: str | None) -> tuple[str, str]:
    """(text, source description); `path` None means the default source."""
    if path is None:
        return default_text(), DEFAULT_SOURCE
    p = Path(path)
    hint = "set corpus.path in config.yaml to a readable UTF-8 text file, or null for the default"
    if not p.is_file():
        raise CorpusError(f"corpus file not found: {str(p)!r} ({hint})")
    text = p.read_text(encoding="utf-8")
    if not text.strip():
        raise CorpusError(f"corpus file is empty: {str(p)!r} ({hint})")
    return text, f"user file {p.resolve()}"


def split(text: str, heldout_fraction: float) -> tuple[str, str]:
    """The last `heldout_fraction` of the characters is held out; the rest is training text."""
    cut = int(len(text) * (1.0 - heldout_fraction))
    if cut <= 0 or cut >= len(text):
        raise CorpusError(f"corpus of {len(text)} characters is too short to split at {heldout_fraction}")
    return text[:cut], text[cut:]


def sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_corpus(path: str | None, heldout_fraction: float) -> dict:
    """Outputs corpus/train/heldout (UTF-8 bytes), a stats table, and meta (source, sha256, sizes)."""
    text, source = read_text(path)
    train, heldout = split(text, heldout_fraction)
    parts = {"corpus": text, "train": train, "heldout": heldout}
    stats = pd.DataFrame([{"part": k, "characters": len(v), "utf8_bytes": len(v.encode("utf-8")),
                           "distinct_characters": len(set(v)), "sha256": sha256(v)}
                          for k, v in parts.items()])
    log.info("corpus from %s: %d characters, %d distinct; train %d, held out %d",
             source, len(text), len(set(text)), len(train), len(heldout))
    meta = {"source": source, "path": path, "sha256": sha256(text), "characters": len(text),
            "distinct_characters": len(set(text)), "train_characters": len(train),
            "heldout_characters": len(heldout), "heldout_fraction": heldout_fraction,
            "split": "last heldout_fraction of the characters is held out"}
    return {**{k: v.encode("utf-8") for k, v in parts.items()}, "stats": stats, "_meta": meta}
