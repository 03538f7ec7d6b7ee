"""Fail at once when this interpreter is outside pyproject.toml's requires-python.

`make setup` (and so `make report` / `make test`) runs this first: pip only refuses an
unsupported Python at `pip install -e .`, after the whole dependency install. The range is read
from pyproject.toml, never typed twice. Standard library only, and Python 2.7-compatible syntax,
because its whole job is to run under the interpreters it refuses.

    python scripts/check_python.py [--pyproject PATH] [--venv DIR]

Exit 0 and silent when supported; else exit 1 with one line, e.g.
"Python 3.12.3 is not supported: adbench needs >=3.11,<3.12 (set PYTHON=python3.11)".
"""

from __future__ import print_function

import argparse
import os
import re
import sys

PYPROJECT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml")
# The PEP 440 clauses requires-python uses in practice; anything else is an error, never a pass.
CLAUSE = re.compile(r"^(~=|==|!=|<=|>=|<|>)\s*([0-9]+(?:\.[0-9]+)*)(\.\*)?$")


def requires_python(text):
    """The requires-python value in the text of a pyproject.toml (a regex: tomllib is 3.11+ only)."""
    m = re.search(r"""^\s*requires-python\s*=\s*["']([^"']+)["']""", text, re.M)
    if not m:
        raise ValueError("pyproject.toml has no requires-python")
    return m.group(1).strip()


def _pad(v, n):
    return tuple(v) + (0,) * (n - len(v))


def _clause_ok(version, clause):
    m = CLAUSE.match(clause.strip())
    if not m or (m.group(3) and m.group(1) not in ("==", "!=")):
        raise ValueError("cannot read requires-python clause %r" % clause.strip())
    op, want = m.group(1), tuple(int(x) for x in m.group(2).split("."))
    if m.group(3):  # ==3.11.* / !=3.11.*: a prefix match
        return (tuple(version[:len(want)]) == want) == (op == "==")
    n = max(len(want), len(version))
    have, want_p = _pad(version, n), _pad(want, n)
    if op == "~=":  # ~=3.11 means >=3.11, ==3.*
        return len(want) > 1 and have >= want_p and tuple(version[:len(want) - 1]) == want[:-1]
    return {"==": have == want_p, "!=": have != want_p, "<": have < want_p, "<=": have <= want_p,
            ">": have > want_p, ">=": have >= want_p}[op]


def satisfies(version, spec):
    """Whether (major, minor, micro) meets every comma-separated clause of `spec`."""
    return all(_clause_ok(version, c) for c in spec.split(",") if c.strip())


def newest_supported(spec, major=3):
    """'python3.N' for the newest minor some release of which `spec` admits, or None."""
    for minor in range(40, -1, -1):
        if any(satisfies((major, minor, micro), spec) for micro in (0, 99)):
            return "python%d.%d" % (major, minor)
    return None


def message(version, spec, venv=None):
    """The one line that says what is wrong and what to do instead."""
    fix = "set PYTHON=%s" % (newest_supported(spec) or "<a supported python>")
    if venv:  # the interpreter is an existing venv's: PYTHON only matters once it is gone
        fix = "%s was made with it: remove it, then %s" % (venv, fix)
    return "Python %s is not supported: adbench needs %s (%s)" % (".".join(map(str, version)), spec, fix)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyproject", default=PYPROJECT)
    parser.add_argument("--venv", help="the interpreter is this existing venv's (changes the advice)")
    args = parser.parse_args(argv)
    with open(args.pyproject) as fh:
        spec = requires_python(fh.read())
    version = tuple(sys.version_info[:3])  # looked up now, not at import: the tests stand in other versions
    if satisfies(version, spec):
        return 0
    print(message(version, spec, args.venv), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
