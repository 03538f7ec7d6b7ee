"""Config validation with messages that name the offending key(s).

`check_config` is the single entry point: the JSON schema (types, ranges, upper bounds),
then finiteness (JSON schema accepts NaN and infinities), then cross-key constraints that
would otherwise fail only when the job that needs them starts, or not at all. Constraints of
meaning are written once per kind, each a small pure function over tables of the keys it
applies to: shapes that must conform (`rectangular`, `conforming`), indices that must lie in
range (`in_range`), members of a set (`one_of`), parts that must add up (`partition`) and sweeps
in the order the code assumes (`ordered`). The tables, and any check of their own (`checks`), come
from each declared family's `adbench.<family>.config_checks` (imported by `family_checks`); this module
names no family. Pure Python: reading the config imports neither torch nor transformers.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import yaml

CORPUS_READ_LIMIT = 64 * 2**20  # bytes: a larger corpus file is long enough for every bounded size


class ConfigError(ValueError):
    """A config value is missing, of the wrong type, out of range or inconsistent with another."""


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _why(err: jsonschema.ValidationError) -> str:
    """The schema's description of the key, as the reason for a bound."""
    return f" ({err.schema['description']})" if isinstance(err.schema.get("description"), str) else ""


def _describe(err: jsonschema.ValidationError) -> str:
    key = _key(err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1]
        return f"config key '{_key([*err.absolute_path, missing])}' is missing"
    if err.validator == "additionalProperties":
        return f"config key '{key}': unknown key(s): {err.message.split('(')[-1].rstrip(')')}"
    if err.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bound = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[err.validator]
        return (f"config key '{key}' = {err.instance!r} is out of range: "
                f"allowed {bound} {err.validator_value}{_why(err)}")
    if err.validator == "maxItems":
        return f"config key '{key}' has {len(err.instance)} items: allowed at most {err.validator_value}{_why(err)}"
    if err.validator == "enum":
        return f"config key '{key}' = {err.instance!r} is not one of {err.validator_value}"
    if err.validator == "type":
        hint = ""
        text = err.instance.lower() if isinstance(err.instance, str) else None
        if err.validator_value == "boolean" and text in ("true", "false"):
            # Snakemake's --config reads only True / False as booleans; yaml's true stays text there
            hint = f" (on the command line write --config {key}={err.instance.capitalize()})"
        return f"config key '{key}' = {err.instance!r} has the wrong type: expected {err.validator_value}{hint}"
    return f"config key '{key}': {err.message}"


def non_finite(node: Any, path: tuple = ()) -> Iterator[str]:
    """A message for every NaN or infinite number anywhere in the config, naming its key."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from non_finite(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from non_finite(v, (*path, i))
    elif isinstance(node, float) and not math.isfinite(node):
        yield f"config key '{_key(path)}' = {node!r} is not a finite number"


def _shown(key: str, value: Any) -> str:
    """A key and its value for a message; a matrix is shown by its shape (the part that clashes)."""
    shape = matrix_shape(value)
    return f"'{key}' (a {shape[0]}x{shape[1]} matrix)" if shape else f"'{key}' = {value!r}"


def clash(pairs: list[tuple[str, Any]], why: str, verb: str = "are inconsistent") -> str:
    """The message for keys whose values do not fit together: every key, its value, then why."""
    if len(pairs) == 1:
        return f"config key {_shown(*pairs[0])}: {why}"
    named = ", ".join(_shown(k, v) for k, v in pairs[:-1]) + " and " + _shown(*pairs[-1])
    return f"config keys {named} {verb}: {why}"


def resolve(cfg: dict, pattern: str) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every key matching `pattern`; '*' stands for each list index or dict key,
    e.g. 'family.cases.*.scale' -> ('family.cases.0.scale', 0.5), ..."""
    def walk(node: Any, parts: list[str], path: list[str]):
        if not parts:
            yield ".".join(path), node
            return
        head, rest = parts[0], parts[1:]
        if head == "*":
            items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            for k, v in items:
                yield from walk(v, rest, [*path, str(k)])
        else:
            yield from walk(node[int(head)] if isinstance(node, list) else node[head], rest, [*path, head])
    yield from walk(cfg, pattern.split("."), [])


def _value(cfg: dict, key: str) -> Any:
    return next(resolve(cfg, key))[1]


# ---------------------------------------------------------------------------------------------------
# (a) Shapes that must conform. A matrix is a list of rows (lists of numbers); every such key in the
# config must be rectangular, and the dimensions below must agree as the job's algebra needs them.

def matrix_shape(value: Any) -> tuple[int, int] | None:
    """(rows, columns) of a rectangular list of lists; None for anything else (a ragged one included)."""
    if not (isinstance(value, list) and value and all(isinstance(r, list) for r in value)):
        return None
    return (len(value), len(value[0])) if len({len(r) for r in value}) == 1 else None


def rectangular(cfg: dict) -> Iterator[str]:
    """Every matrix-valued key, wherever it is, has rows of equal length (torch refuses a ragged
    list with a bare message; code that zips rows silently drops the extra entries)."""
    def walk(node: Any, path: tuple):
        if isinstance(node, dict):
            for k, v in node.items():
                yield from walk(v, (*path, k))
        elif isinstance(node, list) and node and all(isinstance(r, list) for r in node):
            odd = next((i for i, r in enumerate(node) if len(r) != len(node[0])), None)
            if odd is not None:
                yield clash([(_key(path), node)], f"not a matrix: row 0 has {len(node[0])} entries but row {odd} "
                                                    f"has {len(node[odd])} (every row must have the same length)")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, (*path, i))
    yield from walk(cfg, ())


# How a dimension is read off a value, and how a message says it: a count of rows, columns (of a
# rectangular matrix) or entries (of a vector), or the first / last entry of a list of sizes.
DIMS = {
    "rows": (len, lambda n: f"has {n} row{'s' * (n != 1)}"),
    "cols": (lambda v: len(v[0]), lambda n: f"has {n} column{'s' * (n != 1)}"),
    "len": (len, lambda n: f"has {n} entr{'y' if n == 1 else 'ies'}"),
    "first": (lambda v: v[0], lambda n: f"starts with {n}"),
    "last": (lambda v: v[-1], lambda n: f"ends with {n}"),
}
MATRIX_DIMS = ("rows", "cols")  # read only off a rectangular matrix

# Each family's config_checks module may hold these tables (see family_checks):
# CONFORMING: (key, its dimension, "==" or ">=", other key or a number the code fixes, the other key's dimension, why)
# IN_RANGE: (index key, smallest index, key setting the size, size -> largest index, why); '*' matches each item
# ONE_OF: (key naming one member, key holding the members, why): the discrete form of a range
# PARTITIONS: (key listing the parts, key holding the whole, why)
# MONOTONIC: (key or keys read as one sequence, order, why)
TABLES = ("CONFORMING", "IN_RANGE", "ONE_OF", "PARTITIONS", "MONOTONIC")


def conforming(cfg: dict, table: list) -> Iterator[str]:
    """Each dimension equation of `table`; a ragged matrix is left to `rectangular`."""
    for key, dim, op, other, other_dim, why in table:
        v = _value(cfg, key)
        if dim in MATRIX_DIMS and matrix_shape(v) is None:
            continue
        n = DIMS[dim][0](v)
        says = f"{key.rsplit('.', 1)[1]} {DIMS[dim][1](n)}"
        if isinstance(other, str):
            w = _value(cfg, other)
            if other_dim in MATRIX_DIMS and matrix_shape(w) is None:
                continue
            m, pairs = DIMS[other_dim][0](w), [(key, v), (other, w)]
            says += f" but {other.rsplit('.', 1)[1]} {DIMS[other_dim][1](m)}"
        else:  # a size the code fixes
            m, pairs = other, [(key, v)]
            says += f"; {'it must be' if op == '==' else 'at least'} {m} {'' if op == '==' else 'needed'}".rstrip()
        if not (n == m if op == "==" else n >= m):
            yield clash(pairs, f"{says} ({why})", verb="do not conform")


# ---------------------------------------------------------------------------------------------------
# (b) Indices that must lie in range: an index (or a list of them) against the size of what it indexes.

def outside(values: Any, lo: float, hi: float | None, *, below: bool = False) -> str | None:
    """None when every value lies in lo..hi (hi None: no upper bound; below: hi itself excluded)."""
    vals = values if isinstance(values, list) else [values]
    bad = [v for v in vals if v < lo or (hi is not None and (v >= hi if below else v > hi))]
    if not bad:
        return None
    shown, verb = ", ".join(f"{b:g}" for b in bad), "is" if len(bad) == 1 else "are"
    if hi is None:
        return f"{shown} {verb} below {lo:g}"
    return f"{shown} {verb} not below {hi:g}" if below else f"{shown} {verb} outside {lo:g}..{hi:g}"


def in_range(cfg: dict, table: list) -> Iterator[str]:
    """The indices of `table` (IN_RANGE rows) lie in the range the size they index gives."""
    for pattern, lo, size_key, largest, why in table:
        size = _value(cfg, size_key)
        for key, v in resolve(cfg, pattern):
            if bad := outside(v, lo, largest(size)):
                yield clash([(key, v), (size_key, size)], f"{bad} ({why})")


def one_of(cfg: dict, table: list) -> Iterator[str]:
    """Each key of `table` (ONE_OF rows) names a member of the set another key holds."""
    for pattern, set_key, why in table:
        members = _value(cfg, set_key)
        for key, v in resolve(cfg, pattern):
            if v not in members:
                shown = sorted(members) if isinstance(members, dict) else members
                yield clash([(key, v), (set_key, shown)], f"{v!r} is not one of them ({why})")


# ---------------------------------------------------------------------------------------------------
# (c) Partitions that must add up.

def partition(cfg: dict, table: list) -> Iterator[str]:
    """The parts listed under each key of `table` (PARTITIONS rows) add up to the whole it names."""
    for parts_key, whole_key, why in table:
        parts, whole = _value(cfg, parts_key), _value(cfg, whole_key)
        if sum(parts) != whole:
            yield clash([(parts_key, parts), (whole_key, whole)],
                        f"the parts add up to {sum(parts)}, not {whole} ({why})")


# ---------------------------------------------------------------------------------------------------
# (d) Sweeps in the order the code assumes (only where it does: a family lists them).

def monotonic(values: list, order: str) -> str | None:
    """None when `values` follow `order` ('increasing' or 'monotonic', either optionally 'strictly';
    'monotonic' takes the direction of the first change), else the neighbours that break it."""
    strict = order.startswith("strictly")
    sign = 1
    if order.endswith("monotonic"):
        sign = next(((b > a) - (b < a) for a, b in zip(values, values[1:]) if a != b), 1)
    for i, (a, b) in enumerate(zip(values, values[1:])):
        if (b - a) * sign < 0 or (strict and a == b):
            how = "repeat" if a == b else "go up" if b > a else "go down"
            trend = "" if not order.endswith("monotonic") or i == 0 else \
                f" after the earlier entries went {'up' if sign > 0 else 'down'}"
            return f"entries {i} and {i + 1} ({a!r}, {b!r}) {how}{trend}"
    return None


def ordered(cfg: dict, table: list) -> Iterator[str]:
    """Each key's list of `table` (MONOTONIC rows; or the values of several keys, in order) follows its order."""
    for keys, order, why in table:
        keys = [keys] if isinstance(keys, str) else list(keys)
        pairs = [(k, _value(cfg, k)) for k in keys]
        values = pairs[0][1] if len(pairs) == 1 else [v for _, v in pairs]
        if bad := monotonic(values, order):
            yield clash(pairs, f"not {order}: {bad} ({why})")


@lru_cache(maxsize=8)
def _corpus(path: str | None, heldout_fraction: float) -> tuple[str, str] | str | None:
    """(training split, whole text) of the corpus the corpus rule will read; an error message when it cannot be
    read; None when the file is too large to read here (every bounded size fits it)."""
    from .corpus import CorpusError, read_text, split

    try:
        if path is not None and Path(path).is_file() and Path(path).stat().st_size > CORPUS_READ_LIMIT:
            return None
        text = read_text(path)[0]
        return split(text, heldout_fraction)[0], text
    except (CorpusError, OSError, UnicodeDecodeError) as err:
        return f"config key 'corpus.path' = {path!r}: {err}"


def corpus_text(cfg: dict) -> tuple[str, str] | str | None:
    """For a family's corpus-length checks: (training split, whole text), an error message, or None (too large).
    Characters are known here; tokens only when a tokenizer runs."""
    c = cfg["corpus"]
    return _corpus(c["path"], c["heldout_fraction"])


def _corpus_readable(cfg: dict) -> Iterator[str]:
    if isinstance(problem := corpus_text(cfg), str):
        yield problem


def family_checks() -> list:
    """Every declared family's config_checks module (adbench.<family>.config_checks, where it has one), in package
    (key) order, so the problems of one config print in the same order wherever it is checked."""
    from .families import declared

    names = sorted(f.module("config_checks") for f in declared())
    return [importlib.import_module(n) for n in names if importlib.util.find_spec(n) is not None]


def gathered(name: str, modules: list | None = None) -> list:
    """One kind of table (TABLES) gathered from every family's config_checks."""
    return [row for m in (family_checks() if modules is None else modules) for row in getattr(m, name, [])]


def _archives(cfg: dict) -> Iterator[str]:
    """compare_to names archives: a label of this working directory's archive/, or the path of an archive folder
    (the shipped reference/archive/<label>); each must hold its MANIFEST.json."""
    from .history.archive import ARCHIVES, archive_dir

    here = sorted(p.parent.name for p in Path(ARCHIVES).glob("*/MANIFEST.json"))
    for entry in cfg["compare_to"]:
        folder = archive_dir(entry)
        if not (Path(folder) / "MANIFEST.json").is_file():
            yield (f"config key 'compare_to' lists archive {entry!r}, but {folder}/MANIFEST.json does not exist "
                   f"(archives here: {', '.join(here) or 'none'}); create one with `snakemake archive`, or name an "
                   "archive folder by its path (e.g. one under reference/archive/)")


def cross_key_problems(cfg: dict) -> list[str]:
    """Constraints between keys, checked once every key has passed the schema: the kinds over every family's
    tables, then each family's own checks, the corpus and the archives compared with."""
    mods = family_checks()
    kinds = [*rectangular(cfg), *conforming(cfg, gathered("CONFORMING", mods)), *in_range(cfg, gathered("IN_RANGE", mods)),
             *one_of(cfg, gathered("ONE_OF", mods)), *partition(cfg, gathered("PARTITIONS", mods)),
             *ordered(cfg, gathered("MONOTONIC", mods))]
    own = [p for m in mods if hasattr(m, "checks") for p in m.checks(cfg)]
    return [*kinds, *own, *_corpus_readable(cfg), *_archives(cfg)]


def load_schema(path: str | Path) -> dict:
    """Read the YAML JSON-schema."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def check_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Raise ConfigError listing every problem, each naming its key(s) and allowed range."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_path))
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    problems = [*non_finite(config), *(_describe(e) for e in errors)]
    if not problems:
        problems = cross_key_problems(config)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"invalid configuration ({len(problems)} problem(s)):\n{lines}")
