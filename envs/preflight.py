"""Before set-up installs anything: can the lock's torch build be found where pip and uv look here?

usage: python envs/preflight.py LOCK [--command "make report"]

The sources are those set-up hands uv (envs/uvrun.py: pip's configuration, then UV_* variables):
find-links folders first (a directory listing), then the indexes (one page each, `<index>/torch/`).
The first source that lists a wheel of the lock's torch version for this interpreter and platform
ends the search, so the usual case costs one directory listing. When none does, it exits 1 within
seconds, naming the index that publishes the build and the commands that work; uv alone would fail
only after resolving, with "there is no version of torch==2.13.0+cpu" and no fix.
Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import html.parser
import json
import os
import platform
import re
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import uvrun  # noqa: E402  (envs/uvrun.py: the mapping from pip's configuration to uv's)

PYPI = "https://pypi.org/simple"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TIMEOUT_S = 8.0  # per page; the whole search stays well inside the 30 s a user waits before giving up
_TORCH = re.compile(r"^torch==([^\s;\\]+)", re.M)
_ARCH = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def torch_version(lock_text: str) -> str:
    """The torch version a lock pins (with its local part, e.g. 2.13.0+cpu)."""
    m = _TORCH.search(lock_text)
    if not m:
        raise ValueError("the lock pins no torch")
    return m.group(1)


def platform_fits(tag: str, system: str, machine: str) -> bool:
    """Whether a wheel's platform tag installs on `system`/`machine` (platform.system()/machine())."""
    arch = _ARCH.get(machine.lower(), machine.lower())
    if system == "Linux":
        return tag.startswith(("manylinux", "musllinux", "linux")) and tag.endswith("_" + arch)
    if system == "Darwin":
        return tag.startswith("macosx_") and tag.endswith(("_universal2", "_arm64" if arch == "aarch64" else "_" + arch))
    if system == "Windows":
        return tag == {"x86_64": "win_amd64", "aarch64": "win_arm64"}.get(arch, "win32")
    return tag == "any"


def wheel_fits(filename: str, version: str, python: tuple[int, int], system: str, machine: str) -> bool:
    """Whether `filename` is a torch `version` wheel this interpreter and platform can install."""
    parts = urllib.parse.unquote(filename).removesuffix(".whl").split("-")
    if not filename.endswith(".whl") or len(parts) < 5 or parts[0] != "torch" or parts[1] != version:
        return False
    py, plat = parts[-3].split("."), parts[-1].split(".")
    return f"cp{python[0]}{python[1]}" in py and any(platform_fits(t, system, machine) for t in plat)


class _Links(html.parser.HTMLParser):
    """The file names an index or find-links HTML page links to."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            self.names.append(urllib.parse.unquote(href.split("#")[0].rstrip("/").rsplit("/", 1)[-1]))


def page_names(body: bytes, content_type: str) -> list[str]:
    """File names on a PEP 691 JSON or PEP 503 HTML page."""
    if "json" in content_type:
        return [f["filename"] for f in json.loads(body).get("files", [])]
    links = _Links()
    links.feed(body.decode("utf-8", "replace"))
    return links.names


def read_names(url: str, timeout: float = TIMEOUT_S) -> list[str]:
    """File names found at a folder path, a file:// folder or page, or an http(s) page."""
    path = urllib.parse.unquote(urllib.parse.urlparse(url).path) if url.startswith("file:") else url
    if "://" not in path:
        folder = Path(path)
        if folder.is_dir():
            return sorted(os.listdir(folder)) + (page_names((folder / "index.html").read_bytes(), "html")
                                                 if (folder / "index.html").is_file() else [])
        return page_names(folder.read_bytes(), "html") if folder.is_file() else []
    req = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.5"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return page_names(resp.read(), resp.headers.get("Content-Type", ""))


def sources(env: dict[str, str]) -> list[tuple[str, str]]:
    """(kind, location) of every place uv looks, given its UV_* environment: find-links, then indexes."""
    found = [("find-links", f) for f in re.split(r"[,\s]+", env.get("UV_FIND_LINKS", "")) if f]
    if env.get("UV_NO_INDEX", "").lower() in ("1", "true", "yes", "on"):
        return found
    extra = re.split(r"\s+", (env.get("UV_INDEX", "") + " " + env.get("UV_EXTRA_INDEX_URL", "")).strip())
    default = env.get("UV_DEFAULT_INDEX") or env.get("UV_INDEX_URL") or PYPI
    indexes = [i.split("=", 1)[1] if re.match(r"^[\w.-]+=", i) else i for i in [*extra, default] if i]
    local = sorted(indexes, key=lambda i: not i.startswith("file:"))  # local pages first: they cost nothing
    return found + [("index", i) for i in local]


def search(version: str, places: list[tuple[str, str]], deadline_s: float = 20.0) -> tuple[str | None, list[str]]:
    """The first place listing a fitting wheel (or None), and a note per place looked in."""
    python, system, machine = sys.version_info[:2], platform.system(), platform.machine()
    notes, start = [], time.monotonic()
    for kind, where in places:
        if time.monotonic() - start > deadline_s:
            notes.append(f"{where} (not read: out of time)")
            continue
        url = where.rstrip("/") + "/torch/" if kind == "index" else where
        try:
            names = read_names(url, TIMEOUT_S)
        except Exception as err:  # an unreachable source is a finding to report, not a crash
            notes.append(f"{where} (could not be read: {str(err)[:80]})")
            continue
        if any(wheel_fits(n, version, python, system, machine) for n in names):
            return where, notes
        notes.append(where)
    return None, notes


def failure(version: str, lock: str, notes: list[str], command: str) -> str:
    """What to tell the user when no source holds the build: where it is published and what to run."""
    looked = "; ".join(notes) or "no package source at all"
    head = (f"set-up stopped before installing anything: torch=={version} ({lock}) is on none of the package "
            f"sources pip and uv use here (looked in: {looked}).\n")
    if "+" in version:
        return head + (f"That build is published on PyTorch's CPU index, {CPU_INDEX}. Add that index:\n"
                       f"    PIP_EXTRA_INDEX_URL={CPU_INDEX} {command}\n"
                       f"or use PyPI's own torch=={version.split('+')[0]} (Linux with an NVIDIA GPU, macOS):\n"
                       f"    {command} TORCH=pypi\n")
    return head + (f"That build is published on PyPI, {PYPI}; let pip reach it (PIP_INDEX_URL={PYPI}), or use the "
                   f"CPU build from {CPU_INDEX}:\n    PIP_EXTRA_INDEX_URL={CPU_INDEX} {command.replace(' TORCH=pypi', '')}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lock")
    parser.add_argument("--command", default="make report", help="the command the user ran (for the advice)")
    args = parser.parse_args(argv)
    version = torch_version(Path(args.lock).read_text())
    where, notes = search(version, sources(uvrun.uv_environment(uvrun.pip_options())))
    if where is None:
        print(failure(version, args.lock, notes, args.command), end="", file=sys.stderr)
        return 1
    print(f"set-up: torch=={version} found in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
