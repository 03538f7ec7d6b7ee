"""A machine without /proc (as on macOS), for tests of code that must not read it.

`block_proc(monkeypatch, allow=...)` makes every open/listdir/scandir/readlink/stat of a /proc
path raise FileNotFoundError, as it would where /proc does not exist, unless the Python code
asking for it lives under one of the `allow` directories. On Linux psutil is the platform layer
that reads /proc (on macOS it asks sysctl/libproc instead), so allowing psutil's own files and
nothing else shows that adbench gets every figure through psutil and never from /proc itself.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import sysconfig
from pathlib import Path

_STDLIB = str(Path(sysconfig.get_paths()["stdlib"]).resolve())
_HERE = str(Path(__file__).resolve())


def _is_proc(path) -> bool:
    if isinstance(path, int):  # a file descriptor: already opened, nothing to block
        return False
    p = os.fsdecode(os.fspath(path))
    return p == "/proc" or p.startswith("/proc/")


def _asker() -> str:
    """File of the innermost caller that is neither this module nor the standard library (pathlib, os)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        stdlib = name.startswith(_STDLIB) and "-packages" not in name  # site-packages may sit inside it
        if name != _HERE and not stdlib and not name.startswith("<frozen"):
            return str(Path(name).resolve()) if os.path.isabs(name) else name
        frame = frame.f_back
    return ""


def block_proc(monkeypatch, allow: tuple[str, ...] = ()) -> list[str]:
    """Hide /proc from every caller outside `allow`; returns the list of blocked attempts (path, caller)."""
    allowed = tuple(str(Path(a).resolve()) for a in allow)
    blocked: list[str] = []

    def guard(real):
        def wrapper(*args, **kwargs):
            path = args[0] if args else kwargs.get("path", kwargs.get("file", "."))
            if _is_proc(path):
                asker = _asker()
                if not (allowed and asker.startswith(allowed)):
                    blocked.append(f"{os.fsdecode(os.fspath(path))} from {asker}")
                    raise FileNotFoundError(2, "No such file or directory (no /proc here)", os.fspath(path))
            return real(*args, **kwargs)
        return wrapper

    for mod, name in [(builtins, "open"), (io, "open"), (os, "open"), (os, "listdir"), (os, "scandir"),
                      (os, "readlink"), (os, "stat"), (os, "lstat")]:
        monkeypatch.setattr(mod, name, guard(getattr(mod, name)))
    return blocked
