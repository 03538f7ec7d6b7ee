"""Atomic writers for the results contract: a killed job never leaves a half-written file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

_UMASK = os.umask(0)
os.umask(_UMASK)


def _publish(tmp: str, path: Path) -> None:
    """Give the temp file normal permissions (mkstemp makes it 0600), then rename it into place."""
    os.chmod(tmp, 0o666 & ~_UMASK)
    os.replace(tmp, path)


def _atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write text to a temp file beside `path`, fsync it, then rename over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        _publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """One header row, no index column, floats with every round-trip digit (repr)."""
    # pandas' default float formatting is repr-based: shortest string that round-trips.
    _atomic_write_text(path, df.to_csv(index=False, lineterminator="\n"))


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Pretty, sorted JSON, written atomically."""
    _atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_bytes(data: bytes, path: str | os.PathLike) -> None:
    """Binary payload (figures, weights), written atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        _publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_csv(path: str | os.PathLike) -> pd.DataFrame:
    """Read a results CSV (pandas 3 parses floats exactly, round-tripping the repr)."""
    return pd.read_csv(path)
