"""Where the configured GPT-2 is on this machine and how to provide it: paths and the route only.

The rules file imports this module at parse time (the weights directory is gpt2_model's input), so
it stays standard-library only and sets no environment variable: importing torch or transformers,
or turning the Snakemake process offline, is left to load.py, which the jobs import."""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)
REPO = "gpt2"
SOURCES = ("auto", "cache", "path", "random")


class ModelNotFound(FileNotFoundError):
    """The configured GPT-2 weights are not on this machine."""


def hub_cache_dir() -> Path:
    """The HF hub cache this process would read: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def snapshot_dir(revision: str) -> Path:
    """Where the HF cache keeps the pinned revision's files."""
    return hub_cache_dir() / f"models--{REPO}" / "snapshots" / revision


def how_to_get(revision: str) -> str:
    """The ways to provide the weights, for the error that says they are missing."""
    return (f"Provide it by copying a snapshot of '{REPO}' at revision {revision} into the Hugging Face "
            f"cache (set HF_HUB_CACHE or HF_HOME), or set gpt2.path to a directory holding config.json, "
            f"the weights and the tokenizer files; or set gpt2.source: random.")


def _holds_model(directory: str | Path | None) -> bool:
    return bool(directory) and (Path(directory) / "config.json").exists()


def route_for(source: str, revision: str, path: str | None) -> str:
    """The route `source` resolves to on this machine: path, cache or random."""
    if source not in SOURCES:
        raise ValueError(f"gpt2.source must be one of {SOURCES}, got {source!r}")
    snap = snapshot_dir(revision)
    if source == "auto":
        if _holds_model(path):
            return "path"
        if _holds_model(snap):
            return "cache"
        log.info("no GPT-2 at %s%s: using the random fallback", snap, f" or {path}" if path else "")
        return "random"
    if source == "path" and not _holds_model(path):
        raise ModelNotFound(f"gpt2.source: path, but no config.json in gpt2.path={path!r}. " + how_to_get(revision))
    if source == "cache" and not _holds_model(snap):
        raise ModelNotFound(f"gpt2.source: cache, but {snap} holds no config.json (looked in the HF hub "
                            f"cache {hub_cache_dir()}). " + how_to_get(revision))
    return source


def weights_location(source: str, revision: str, path: str | None) -> str | None:
    """The directory whose files are the model when it is on this machine (gpt2_model's input), else None."""
    if source in ("auto", "path") and _holds_model(path):
        return str(path)
    snap = snapshot_dir(revision)
    return str(snap) if source in ("auto", "cache") and _holds_model(snap) else None
