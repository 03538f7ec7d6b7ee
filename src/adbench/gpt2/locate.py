"""Where the configured GPT-2 is on this machine and how to provide it: paths and the route only.

The rules file imports this module at parse time (the weights directory is gpt2_model's input), so importing it
stays standard-library only and sets no environment variable. The Hugging Face cache is read through
huggingface_hub's cache-only lookup (`try_to_load_from_cache`: no network, no environment switch), imported
only when the cache holds a GPT-2 folder at all. Importing torch or transformers, or turning a process offline,
is left to load.py, which the jobs import."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
# The canonical id first: the hub serves 'gpt2' as an alias of it, and each id has its own cache folder.
REPOS = ("openai-community/gpt2", "gpt2")
REPO = REPOS[0]
SOURCES = ("auto", "cache", "path", "random")
# A snapshot holds a model when it has one file of each group (weights: either format transformers reads).
NEEDED = (("config.json",), ("model.safetensors", "pytorch_model.bin"), ("tokenizer.json", "vocab.json"))
FETCH_FILES = '--include "*.json" --include "*.txt" --include model.safetensors'


class ModelNotFound(FileNotFoundError):
    """The configured GPT-2 weights are not on this machine."""


class OtherRevision(ModelNotFound):
    """The HF cache holds GPT-2 only at revisions other than gpt2.revision, and gpt2.allow_other_revision is false."""


@dataclass(frozen=True)
class Snapshot:
    """One cached GPT-2 snapshot: the repo id it was fetched under, its commit and its directory."""

    repo_id: str
    revision: str
    directory: Path


def hub_cache_dir() -> Path:
    """The HF hub cache huggingface_hub would read: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, XDG, ~/.cache."""
    # huggingface_hub.constants reads these once, when it is imported; reading them here on every call lets a
    # test (or a caller) point the lookup elsewhere. tests/test_gpt2_load.py compares the two.
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    hub = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return Path(os.path.expanduser(os.path.expandvars(hub)))


def repo_dir(cache: Path, repo_id: str) -> Path:
    """The cache folder of a model repo: models--<owner>--<name> (huggingface_hub's repo_folder_name)."""
    return cache / "--".join(["models", *repo_id.split("/")])


def fetch_command(revision: str) -> str:
    """The one command that puts the pinned weights (and tokenizer) into the Hugging Face cache."""
    return f"hf download {REPO} --revision {revision} {FETCH_FILES}"


def how_to_get(revision: str) -> str:
    """The ways to provide the weights, for the error that says they are missing."""
    return (f"Fetch the pinned revision into the Hugging Face cache with `{fetch_command(revision)}` (HF_HUB_CACHE "
            f"or HF_HOME choose the cache), or set gpt2.path to a directory holding config.json, the weights and "
            f"the tokenizer files; or set gpt2.source: random.")


def _snapshot_at(repo_id: str, revision: str, cache: Path) -> Snapshot | None:
    """The snapshot of `repo_id` at `revision` (a commit or a ref such as main) when it holds a model, else None."""
    from huggingface_hub import try_to_load_from_cache  # only reached when a GPT-2 folder exists: parse stays cheap

    found = []
    for group in NEEDED:
        hit = next((p for f in group if isinstance(p := try_to_load_from_cache(
            repo_id, f, cache_dir=str(cache), revision=revision), str)), None)
        if hit is None:
            return None
        found.append(Path(hit))
    snap = found[0].parent  # snapshots/<commit>/config.json: the commit a ref resolved to
    return Snapshot(repo_id, snap.name, snap)


def _listed_revisions(folder: Path) -> list[str]:
    """Refs first (main, then the others by name), then every snapshot commit, newest directory first."""
    refs = sorted((p.name for p in (folder / "refs").glob("*") if p.is_file()), key=lambda r: (r != "main", r))
    snaps = sorted((folder / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True)
    return refs + [p.name for p in snaps if p.is_dir()]


def cached_snapshots(revision: str) -> list[Snapshot]:
    """Every GPT-2 snapshot in the HF cache that holds a model, the pinned `revision` first; [] without a download."""
    cache = hub_cache_dir()
    repos = [r for r in REPOS if repo_dir(cache, r).is_dir()]
    pinned = [s for r in repos if (s := _snapshot_at(r, revision, cache))]
    others: dict[tuple[str, str], Snapshot] = {}
    for r in repos:
        for rev in _listed_revisions(repo_dir(cache, r)):
            s = _snapshot_at(r, rev, cache)
            if s and s.revision != revision:
                others.setdefault((s.repo_id, s.revision), s)
    return pinned + list(others.values())


def other_revision_message(revision: str, found: list[Snapshot]) -> str:
    """Why a snapshot at another revision is refused: what was found where, and the two fixes."""
    where = "; ".join(f"{s.repo_id} at revision {s.revision} ({s.directory})" for s in found)
    return (f"gpt2.revision is {revision}, but the Hugging Face cache ({hub_cache_dir()}) holds GPT-2 only at "
            f"another revision: {where}. Either fetch the pinned revision with `{fetch_command(revision)}`, or run "
            f"on revision {found[0].revision} by setting gpt2.allow_other_revision: true (every output then names "
            f"that revision, and rows that need the pinned weights are shown, not judged).")


def find_snapshot(revision: str, allow_other: bool = False) -> Snapshot | None:
    """The cached snapshot to load: the pinned revision, else another one when allowed; None when none is cached.

    Raises OtherRevision when only other revisions are cached and `allow_other` is false: never silently another."""
    found = cached_snapshots(revision)
    if not found:
        return None
    if found[0].revision != revision and not allow_other:
        raise OtherRevision(other_revision_message(revision, found))
    return found[0]


def _holds_model(directory: str | Path | None) -> bool:
    """Whether gpt2.path names a directory with a config.json (its loader names any other missing file)."""
    return bool(directory) and (Path(directory) / "config.json").exists()


def _looked_in(revision: str) -> str:
    """The snapshot directories of the pinned revision under both repo ids, for the messages."""
    cache = hub_cache_dir()
    return " and ".join(str(repo_dir(cache, r) / "snapshots" / revision) for r in REPOS)


def route_for(source: str, revision: str, path: str | None, allow_other: bool = False) -> tuple[str, Snapshot | None]:
    """(route, snapshot): the route `source` resolves to on this machine (path, cache or random) and, for cache,
    the snapshot it loads."""
    if source not in SOURCES:
        raise ValueError(f"gpt2.source must be one of {SOURCES}, got {source!r}")
    if source == "random":
        return "random", None
    if source in ("auto", "path") and _holds_model(path):
        return "path", None
    if source == "path":
        raise ModelNotFound(f"gpt2.source: path, but no config.json in gpt2.path={path!r}. " + how_to_get(revision))
    snap = find_snapshot(revision, allow_other)
    if snap:
        return "cache", snap
    if source == "cache":
        raise ModelNotFound(f"gpt2.source: cache, but no snapshot holding config.json, weights and tokenizer at "
                            f"{_looked_in(revision)} (the HF hub cache {hub_cache_dir()}). " + how_to_get(revision))
    log.info("no GPT-2 at %s%s: using the random fallback", _looked_in(revision), f" or {path}" if path else "")
    return "random", None


def weights_location(source: str, revision: str, path: str | None, allow_other: bool = False) -> str | None:
    """The directory whose files are the model when it is on this machine (gpt2_model's input), else None.

    Runs at parse time: a cache holding only another revision stops the run here, in seconds, when not allowed."""
    if source == "random":
        return None
    if source in ("auto", "path") and _holds_model(path):
        return str(path)
    if source == "path":
        return None  # gpt2_model then fails, naming gpt2.path
    snap = find_snapshot(revision, allow_other)
    return str(snap.directory) if snap else None
