"""Run uv with the package sources pip is configured with on this machine.

usage: python envs/uvrun.py [--only-index URL] UV [UV-ARGS...]

uv reads neither pip's configuration files nor PIP_* variables, so without this it would resolve
and install from its own defaults, which may differ from where `pip install` looks here (a local
wheel directory, a mirror). `pip config list` is the one place that knows them; nothing
machine-specific is written into the project. The mapping:

    index-url        -> UV_DEFAULT_INDEX
    extra-index-url  -> UV_INDEX        (space-separated, as in pip)
    find-links       -> UV_FIND_LINKS   (comma-separated for uv)
    no-index         -> UV_NO_INDEX
    cert             -> SSL_CERT_FILE

and UV_INDEX_STRATEGY=unsafe-best-match, pip's own behaviour: every index is searched for the
best version, not only the first that knows the name. Variables already set are kept. pip's
`constraint` is not passed on: the locks pin every package exactly, and uv would write the
constraint file's path into the lock's annotations.

`--only-index URL` makes URL uv's one source (pip's and uv's own indexes and find-links dropped, the
certificate kept): `make lock` resolves the PyPI variant from PyPI itself, so that its hashes are
PyPI's files for every platform, not those a local mirror happens to hold.
"""

from __future__ import annotations

import os
import subprocess
import sys

# `pip config list` prints `section.key='value'`, already merged over pip's files; PIP_* variables
# show as `:env:.key` and win, and an [install] section overrides [global] for `pip install`.
_SECTIONS = {"global": 0, "install": 1, ":env:": 2}
_MAP = {"index-url": "UV_DEFAULT_INDEX", "extra-index-url": "UV_INDEX", "find-links": "UV_FIND_LINKS",
        "no-index": "UV_NO_INDEX", "cert": "SSL_CERT_FILE"}


def parse(listing: str) -> dict[str, str]:
    """pip option -> value from `pip config list` output (lines `section.key='value'`)."""
    found: dict[str, tuple[int, str]] = {}
    for line in listing.splitlines():
        name, sep, value = line.partition("=")
        section, _, key = name.rpartition(".")
        rank = _SECTIONS.get(section)
        if not sep or rank is None:
            continue  # [download], [freeze], ...: not what an install reads
        if key not in found or rank >= found[key][0]:
            found[key] = (rank, value.strip().strip("'\""))
    return {k: v for k, (_, v) in found.items()}


def uv_environment(options: dict[str, str], environ: dict[str, str] | None = None) -> dict[str, str]:
    """The UV_* variables equivalent to pip's `options`, on top of `environ` (whose settings win)."""
    env = dict(os.environ if environ is None else environ)
    add = {"UV_INDEX_STRATEGY": "unsafe-best-match"}
    for key, var in _MAP.items():
        value = options.get(key)
        if value is None:
            continue
        if key == "find-links":
            value = ",".join(value.split())
        elif key == "extra-index-url":
            value = " ".join(value.split())
        elif key == "no-index":
            if value.lower() not in ("1", "true", "yes", "on"):
                continue
            value = "1"
        add[var] = value
    for var, value in add.items():
        env.setdefault(var, value)
    return env


# Every variable through which uv finds packages (uv's own names and their older aliases).
SOURCE_VARS = ("UV_DEFAULT_INDEX", "UV_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "UV_NO_INDEX")


def only_index(url: str, options: dict[str, str], environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment in which uv reads packages from `url` alone (pip's certificate still applies)."""
    env = {k: v for k, v in dict(os.environ if environ is None else environ).items() if k not in SOURCE_VARS}
    return uv_environment({k: v for k, v in options.items() if k == "cert"} | {"index-url": url}, env)


def pip_options() -> dict[str, str]:
    """pip's merged configuration, as `pip config list` prints it for this interpreter."""
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    return parse(listing)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--only-index"] and len(argv) > 2:
        return subprocess.call(argv[2:], env=only_index(argv[1], pip_options()))
    if not argv or argv[0].startswith("-"):
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    return subprocess.call(argv, env=uv_environment(pip_options()))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
