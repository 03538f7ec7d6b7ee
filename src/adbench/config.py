"""Config validation with messages that name the offending key(s).

`check_config` is the single entry point: the JSON schema (types, ranges, upper bounds),
then finiteness (JSON schema accepts NaN and infinities), then cross-key constraints that
would otherwise fail only when the job that needs them starts, or not at all. Constraints of
meaning are written once per kind, each a small pure function with a table of the keys it
applies to: shapes that must conform (`rectangular`, `conforming`), indices that must lie in
range (`in_range`), parts that must add up (`partition`) and sweeps in the order the code
assumes (`ordered`). Pure Python: reading the config imports neither torch nor transformers.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import yaml

# transformers.GPT2Config() defaults (GPT-2 small); tests/test_bad_configs.py keeps them equal.
# Typed here so that reading the config does not import transformers (seconds per Snakemake call).
GPT2_SMALL = {"n_layer": 12, "n_embd": 768, "n_head": 12, "n_positions": 1024, "vocab_size": 50257}
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


def _pair(a: str, av: Any, b: str, bv: Any, why: str) -> str:
    return clash([(a, av), (b, bv)], why)


def resolve(cfg: dict, pattern: str) -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every key matching `pattern`; '*' stands for each list index or dict key,
    e.g. 'depth.d2.cases.*.scale' -> ('depth.d2.cases.0.scale', 0.5), ..."""
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
    """Every matrix-valued key, wherever it is, has rows of equal length (torch.tensor refuses a ragged
    list with a bare message; the scalar tape zips rows and silently drops the extra entries)."""
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

# (key, its dimension, "==" or ">=", other key or a number the code fixes, the other key's dimension, why).
CONFORMING = [
    # T1: Y = X W with X (n, k), W (k, m); the upstream G = dL/dY is (n, m)
    ("tensor.matmul.x", "cols", "==", "tensor.matmul.w", "rows", "Y = X W: X's columns must equal W's rows"),
    ("tensor.matmul.upstream", "rows", "==", "tensor.matmul.x", "rows",
     "G = dL/dY has Y's shape: one row per row of X"),
    ("tensor.matmul.upstream", "cols", "==", "tensor.matmul.w", "cols",
     "G = dL/dY has Y's shape: one column per column of W"),
    # T1's two single-path sums read X[0][1], X[1][0], W[1][0], W[1][1] and G[1][1] by coordinate
    ("tensor.matmul.x", "rows", ">=", 2, None, "T1's single-path sum for dW[0][1] reads X[1][0]"),
    ("tensor.matmul.x", "cols", ">=", 2, None, "T1's single-path sum for dX[0][1] reads X[0][1] and W[1][*]"),
    ("tensor.matmul.w", "cols", ">=", 2, None, "T1's single-path sums read W[1][1] and G[*][1]"),
    # T3: S = Q K^T / sqrt(D) with Q (Tq, D), K (Tk, D); O = softmax(S) V with V (Tk, Dv); G = dL/dO is (Tq, Dv)
    ("tensor.attention.q", "cols", "==", "tensor.attention.k", "cols",
     "S = Q K^T: queries and keys share the width D"),
    ("tensor.attention.v", "rows", "==", "tensor.attention.k", "rows", "O = A V: one value row per key"),
    ("tensor.attention.upstream", "rows", "==", "tensor.attention.q", "rows",
     "G = dL/dO has O's shape: one row per query"),
    ("tensor.attention.upstream", "cols", "==", "tensor.attention.v", "cols", "G = dL/dO has O's shape: V's width"),
    # T4: one row of D features; gamma, beta and the upstream gradient are per feature
    ("tensor.layernorm.gamma", "len", "==", "tensor.layernorm.x", "len", "one scale per feature of x"),
    ("tensor.layernorm.beta", "len", "==", "tensor.layernorm.x", "len", "one shift per feature of x"),
    ("tensor.layernorm.upstream", "len", "==", "tensor.layernorm.x", "len",
     "dL/dy has y's shape: one per feature of x"),
    ("tensor.layernorm.near_constant_x", "len", "==", "tensor.layernorm.x", "len",
     "the nearly constant row shares gamma, beta and the upstream gradient"),
    # S10: micrograd MLP, layer sizes [n_in, ..., n_out], loss sum over examples of (out - target)^2
    ("scalar.mlp.inputs", "cols", "==", "scalar.mlp.sizes", "first", "each input row feeds the sizes[0] inputs"),
    ("scalar.mlp.sizes", "last", "==", 1, None, "the loss (out - target)^2 needs one output per example"),
    ("scalar.mlp.targets", "len", "==", "scalar.mlp.inputs", "rows", "one target per input row"),
    # O1: the 2-4-1 XOR network takes len(inputs[0]) inputs; the tape zips rows with targets, numpy broadcasts
    ("optim.o1.targets", "len", "==", "optim.o1.inputs", "rows", "one target per input row"),
    # P5's GradScaler probe: loss = (w . x).sum() pairs each weight with one input
    ("precision.grad_scaler.inputs", "len", "==", "precision.grad_scaler.weights", "len",
     "loss = (w . x).sum() pairs each weight with one input"),
]


def conforming(cfg: dict, table: list = CONFORMING) -> Iterator[str]:
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


# (index key, smallest index, key setting the size, size -> largest index, why). '*' matches each item.
IN_RANGE = [
    ("tensor.softmax.target", 0, "tensor.softmax.logits", lambda z: len(z) - 1, "L = -log p[target] picks one logit"),
    ("tensor.softmax.target", 0, "tensor.softmax.overflow_logits", lambda z: len(z) - 1,
     "T2's fused cross-entropy scores the same target on the overflow logits"),
    ("tensor.softmax.output_layer.target", 0, "tensor.softmax.output_layer.vocab", lambda v: v - 1,
     "the target is one row of the output matrix"),
    ("scalar.directional.control_coordinate", 1, "scalar.directional.cols", lambda c: c - 1,
     "a coordinate of x other than 0, which the control checks is left untouched"),
    ("scalar.directional.orthogonal_to", 0, "scalar.directional.directions", lambda n: n - 1,
     "the blind-spot error is built orthogonal to one of the checked directions"),
    ("charlm.early_step", 1, "charlm.train.steps", int, "a step the run takes"),
    ("charlm.final_window", 1, "charlm.train.steps", int, "the final loss averages the last final_window steps"),
    ("charlm.train.log_every", 1, "charlm.train.steps", int,
     "an interval within the run; any larger value logs only step 1 and the last step"),
    ("precision.record_every", 1, "precision.steps", int,
     "an interval within the run; any larger value records only the first and the last step"),
    ("optim.o1.report_seed", 0, "optim.o1.seeds", lambda n: n - 1, "seeds run 0..seeds-1"),
    ("precision.grad_scaler.inf_index", 0, "precision.grad_scaler.weights", lambda w: len(w) - 1,
     "the inf is injected into one weight's gradient"),
    ("lifetimes.checkpoint.segments", 1, "lifetimes.checkpoint.blocks", int,
     "checkpoint_sequential needs at least one block per segment"),
    ("gpt2.timing_batch", 1, "gpt2.batch", int, "G6 times a slice of the batch"),
    ("depth.d1.chains.*.report_at", 1, "depth.d1.max_depth", int, "every reported depth must be measured"),
    ("depth.d2.cases.*.depth", 1, "depth.d2.max_depth", int, "a case must lie on the grid of depths"),
]

# (key naming one member, key holding the members, why): the discrete form of a range.
ONE_OF = [
    ("depth.d2.cases.*.scale", "depth.d2.scales",
     "D2 reads each case off the grid, which has only these scales; a missing one reads as NaN"),
    ("optim.o3.adam_arrangement", "optim.o3.arrangements", "an arrangement defined under optim.o3.arrangements"),
    ("optim.o3.mixed_arrangements.*", "optim.o3.arrangements", "an arrangement defined under optim.o3.arrangements"),
]

# adbench.precision.scaling.dynamic_scale tries at most this many scales, halving after each overflow.
DYNAMIC_SCALE_ATTEMPTS = 64
# The smallest binary64 value torch's cast to fp16 sends to inf: fp16 overflows from 65520 (65504 plus
# half its spacing of 32), and torch casts through float32, which rounds this midpoint up to 65520.
FP16_OVERFLOW = 65520.0 - 2.0 ** -9
FP16_LARGEST = 65504.0  # fp16's largest finite value


def in_range(cfg: dict) -> Iterator[str]:
    """Indices of IN_RANGE and members of ONE_OF, then the ranges a job derives from several keys:
    O1's checked parameter name, S5's fit interval, P5's halvings and P7's fp16 weights."""
    for pattern, lo, size_key, largest, why in IN_RANGE:
        size = _value(cfg, size_key)
        for key, v in resolve(cfg, pattern):
            if bad := outside(v, lo, largest(size)):
                yield clash([(key, v), (size_key, size)], f"{bad} ({why})")
    for pattern, set_key, why in ONE_OF:
        members = _value(cfg, set_key)
        for key, v in resolve(cfg, pattern):
            if v not in members:
                shown = sorted(members) if isinstance(members, dict) else members
                yield clash([(key, v), (set_key, shown)], f"{v!r} is not one of them ({why})")
    yield from _gradcheck_param(cfg["optim"]["o1"])
    yield from _slope_fit(cfg["scalar"])
    yield from _dynamic_scale(cfg["precision"])
    yield from _fp16_weights(cfg["precision"])


def _gradcheck_param(o1: dict) -> Iterator[str]:
    """W1 is hidden x inputs (row-major), b1 and W2 have `hidden` entries, b2 one: the checked name
    must exist in the network O1 builds (the schema checks its spelling)."""
    param = o1["gradcheck"]["param"]
    idx = [int(i) for i in re.findall(r"\[(\d+)\]", param)]
    width = matrix_shape(o1["inputs"])
    sizes = [("optim.o1.hidden", o1["hidden"], o1["hidden"])]
    if param.startswith("W1") and width:
        sizes.append(("optim.o1.inputs", o1["inputs"], width[1]))
    for i, (size_key, size_value, n) in zip(idx, sizes):
        if bad := outside(i, 0, n - 1):
            what = "input" if size_key == "optim.o1.inputs" else "hidden unit"
            yield clash([("optim.o1.gradcheck.param", param), (size_key, size_value)],
                        f"{what} index {bad} (the network has {n} {what}s)")


def _slope_fit(s: dict) -> Iterator[str]:
    """S5 fits a log-log line to the sweep's steps inside slope_fit_h (closed, with S5's 1e-9 slack)."""
    lo, hi = s["slope_fit_h"]
    if lo > hi:
        return  # an interval out of order: `monotonic` names it
    inside = sum(lo * (1 - 1e-9) <= h <= hi * (1 + 1e-9) for h in s["sweep_h"])
    if outside(inside, 2, None):
        yield clash([("scalar.slope_fit_h", s["slope_fit_h"]), ("scalar.sweep_h", s["sweep_h"])],
                    f"the interval holds {inside} of the sweep's steps, fewer than the 2 a fitted slope needs")


def _dynamic_scale(p: dict) -> Iterator[str]:
    """P5 halves the scale until every scaled gradient is finite in fp16, and gives up after
    DYNAMIC_SCALE_ATTEMPTS scales: the last one tried must bring the largest gradient below overflow."""
    last = p["dynamic_start"] / 2 ** (DYNAMIC_SCALE_ATTEMPTS - 1)
    largest = max(p["dynamic_grads"]) * last
    if outside(largest, 0, FP16_OVERFLOW, below=True):
        keys = [("precision.dynamic_start", p["dynamic_start"]), ("precision.dynamic_grads", p["dynamic_grads"])]
        yield clash(keys, f"after the scaler's last halving ({DYNAMIC_SCALE_ATTEMPTS - 1}) the largest scaled "
                          f"gradient is {largest:.4g}, not below fp16's overflow at {FP16_OVERFLOW:g}, "
                          "so P5 would find no finite scale")


def fp16_exact(x: float) -> bool:
    """x is an fp16 value: on fp16's grid (11 significant bits, subnormal spacing 2^-24) and finite."""
    if x == 0:
        return True
    _, e = math.frexp(x)  # x = m 2^e with 0.5 <= |m| < 1: fp16's spacing there is 2^(e - 11), at least 2^-24
    return abs(x) <= FP16_LARGEST and math.ldexp(x, -max(e - 11, -24)).is_integer()


def _fp16_weights(p: dict) -> Iterator[str]:
    """P7 reads the gap above each weight from torch.nextafter on the exact weight and cross-checks it
    with numpy's np.spacing of its fp16 cast: both agree only for a weight fp16 holds exactly, and
    fp16's largest finite value has no finite value above it."""
    bad = [w for w in p["spacing_weights"] if not fp16_exact(w) or abs(w) >= FP16_LARGEST]
    if bad:
        yield clash([("precision.spacing_weights", p["spacing_weights"])],
                    f"{', '.join(f'{w!r}' for w in bad)} {'is' if len(bad) == 1 else 'are'} not an fp16 value below "
                    f"{FP16_LARGEST:g} (P7 shows the spacing above a weight fp16 holds exactly)")


# ---------------------------------------------------------------------------------------------------
# (c) Partitions that must add up. (L2's nanoGPT simulation needs no entry: it draws exactly
# nanogpt_steps x nanogpt_micro examples, so its microbatches partition its batch by construction.)

# (key listing the parts, key holding the whole, why)
PARTITIONS = [
    ("lifetimes.split", "lifetimes.accumulation_examples",
     "L2 cuts the full batch into these microbatches, weighted by size to match the full-batch gradient"),
]


def partition(cfg: dict) -> Iterator[str]:
    """The parts listed under each PARTITIONS key add up to the whole it names."""
    for parts_key, whole_key, why in PARTITIONS:
        parts, whole = _value(cfg, parts_key), _value(cfg, whole_key)
        if sum(parts) != whole:
            yield clash([(parts_key, parts), (whole_key, whole)],
                        f"the parts add up to {sum(parts)}, not {whole} ({why})")


# ---------------------------------------------------------------------------------------------------
# (d) Sweeps in the order the code assumes. Only where it does: D2's scales and O2's grids are sorted
# by their figures, S2's nudges and S6's steps are read by value, so their order is free.

# (key or keys read as one sequence, order, why)
MONOTONIC = [
    ("scalar.sweep_h", "strictly monotonic",
     "S5 draws the sweep as one line in list order and reads a step's error by its value, so a repeat is ambiguous"),
    ("scalar.slope_fit_h", "increasing", "the closed interval [low, high] of steps the slope is fitted over"),
    ("lifetimes.shapes.sweep_seq", "monotonic", "L7 draws the sweep as one line in list order"),
    (("precision.rel_error_sweep.lo_exp", "precision.rel_error_sweep.hi_exp"), "strictly increasing",
     "the P3 figure spans 10^lo_exp up to 10^hi_exp"),
]


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


def ordered(cfg: dict) -> Iterator[str]:
    """Each MONOTONIC key's list (or the values of several keys, in order) follows its order."""
    for keys, order, why in MONOTONIC:
        keys = [keys] if isinstance(keys, str) else list(keys)
        pairs = [(k, _value(cfg, k)) for k in keys]
        values = pairs[0][1] if len(pairs) == 1 else [v for _, v in pairs]
        if bad := monotonic(values, order):
            yield clash(pairs, f"not {order}: {bad} ({why})")


def _charlm(cfg: dict) -> Iterator[str]:
    t = cfg["charlm"]["train"]
    if t["n_embd"] % t["n_head"]:
        yield _pair("charlm.train.n_embd", t["n_embd"], "charlm.train.n_head", t["n_head"],
                    "n_embd must be a multiple of n_head (each head gets n_embd / n_head channels)")


def gpt2_models(g: dict) -> list[tuple[str, Any, dict]]:
    """(key naming the architecture, its value, architecture) of every model gpt2.source may
    load that is known at parse time; source 'path' reads its config.json only when a job runs."""
    out = []
    if g["source"] in ("auto", "cache"):
        out.append(("gpt2.source", g["source"], GPT2_SMALL))  # the pinned GPT-2 small snapshot
    if g["source"] in ("auto", "random"):
        out.append(("gpt2.random_config", g["random_config"], {**GPT2_SMALL, **g["random_config"]}))
    return out


def _arch_key(name: str, value: Any, arch: dict, k: str) -> tuple[str, Any]:
    """The key (and value) a message names for architecture field k of one possible model."""
    return (f"{name}.{k}", arch[k]) if name == "gpt2.random_config" else (name, value)


def _gpt2(cfg: dict) -> Iterator[str]:
    """Against every model gpt2.source may load. g4_layer indexes the model's own blocks; g3_layers
    are the documents' GPT-2 small layers 0..11 (the schema bounds them) that G3 maps to the nearest
    block at the same relative depth of a smaller model, so only g4_layer meets n_layer here."""
    g = cfg["gpt2"]
    for name, value, arch in gpt2_models(g):
        key = lambda k: _arch_key(name, value, arch, k)  # noqa: E731
        if arch["n_embd"] % arch["n_head"]:
            yield _pair(*key("n_embd"), *key("n_head"), "n_embd must be a multiple of n_head")
        if bad := outside(g["seq_len"], 2, arch["n_positions"]):
            yield _pair("gpt2.seq_len", g["seq_len"], *key("n_positions"),
                        f"{bad} (the model has {arch['n_positions']} positions)")
        if bad := outside(g["g4_layer"], 0, arch["n_layer"] - 1):
            yield _pair("gpt2.g4_layer", g["g4_layer"], *key("n_layer"),
                        f"{bad} (the model has layers 0..{arch['n_layer'] - 1})")
        if name == "gpt2.random_config" and (bad := outside(g["tokenizer_vocab_size"], 0, arch["vocab_size"])):
            yield _pair("gpt2.tokenizer_vocab_size", g["tokenizer_vocab_size"], *key("vocab_size"),
                        f"{bad}: the fallback tokenizer may not have more tokens than the model's vocabulary")


def _corpus_text(c: dict) -> str | None:
    """The corpus text the corpus rule will read, or None when the file is too large to read here."""
    from .corpus import read_text

    if c["path"] is not None and Path(c["path"]).is_file() and Path(c["path"]).stat().st_size > CORPUS_READ_LIMIT:
        return None
    return read_text(c["path"])[0]


def _corpus(cfg: dict) -> Iterator[str]:
    """Corpus length against the sizes that slice it. Characters are known here; tokens only
    when a tokenizer runs, but a byte-level BPE token covers at least one UTF-8 byte, so too
    few bytes is already too few tokens (a necessary condition; the jobs check the rest)."""
    from .corpus import CorpusError, split

    c, t, g = cfg["corpus"], cfg["charlm"]["train"], cfg["gpt2"]
    try:
        text = _corpus_text(c)
        if text is None:
            return
        train, _ = split(text, c["heldout_fraction"])
    except (CorpusError, OSError, UnicodeDecodeError) as err:
        yield f"config key 'corpus.path' = {c['path']!r}: {err}"
        return
    src = ("corpus.path", c["path"])
    if len(train) < t["block_size"] + 2:  # training draws windows of block_size + 1 characters
        yield _pair("charlm.train.block_size", t["block_size"], *src,
                    f"the training split has {len(train)} characters; a window needs block_size + 2")
    tail = len(text[g["text_offset"]:].encode("utf-8"))
    if tail < g["seq_len"]:
        yield _pair("gpt2.seq_len", g["seq_len"], "gpt2.text_offset", g["text_offset"],
                    f"the corpus ({src[0]} = {src[1]!r}) has {tail} UTF-8 bytes after the offset, "
                    "so fewer tokens than seq_len")
    if len(text.encode("utf-8")) < g["batch"] * g["seq_len"]:
        yield _pair("gpt2.batch", g["batch"], "gpt2.seq_len", g["seq_len"],
                    f"G6 needs batch x seq_len tokens; the corpus ({src[0]} = {src[1]!r}) has fewer UTF-8 bytes")


def _archives(cfg: dict) -> Iterator[str]:
    """compare_to names archives of this working directory (both entry points run there)."""
    here = sorted(p.parent.name for p in Path("archive").glob("*/MANIFEST.json"))
    for label in cfg["compare_to"]:
        if label not in here:
            yield (f"config key 'compare_to' lists archive {label!r}, but archive/{label}/MANIFEST.json does not "
                   f"exist (archives here: {', '.join(here) or 'none'}); create one with `snakemake archive`")


def cross_key_problems(cfg: dict) -> list[str]:
    """Constraints between keys, checked once every key has passed the schema."""
    return [*rectangular(cfg), *conforming(cfg), *in_range(cfg), *partition(cfg), *ordered(cfg),
            *_charlm(cfg), *_gpt2(cfg), *_corpus(cfg), *_archives(cfg)]


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
