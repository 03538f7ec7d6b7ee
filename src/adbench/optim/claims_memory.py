"""The O3 conclusions, tested: optimizer memory per parameter and GPT-2's tied parameter (listed in optim/family.py).

Arrangements are chosen by their dtypes and collections, never by the names config.yaml gives them.
"""

from __future__ import annotations

import itertools

from ..claims import Edge, Move, flag, g, judged, relation, row, sources

sources("O3/arrangements", {"arrangement": "input", "collection": "input", "dtype": "input",
                            "bytes_per_param": "dtype sizes", "bytes": "dtype sizes, parameter count",
                            "GiB": "dtype sizes, parameter count"})
sources("O3/counts", {"unique": "model.parameters()", "with_duplicates": "named_parameters(remove_duplicate=False)",
                      "tied_names": "named_parameters(remove_duplicate=False), named_parameters()"}, by="count")


# ---- O3 -----------------------------------------------------------------------------------------------
def _collections(t) -> dict:
    """arrangement -> {collection: dtype}, without the total rows."""
    d = t["O3/arrangements"]
    parts = d[d.collection != "total"]
    return {a: dict(zip(p.collection, p.dtype)) for a, p in parts.groupby("arrangement", sort=False)}


def _all_fp32_four(t) -> list[str]:
    """Arrangements of four collections, all fp32: the documents' "if all four collections are fp32"."""
    return [a for a, c in _collections(t).items() if len(c) == 4 and set(c.values()) == {"float32"}]


def _fp16_to_fp32_pairs(t) -> list[tuple[str, str]]:
    """(a, b): the same collections, one of them fp16 in a and fp32 in b (fp32 instead of fp16 gradients)."""
    cs = _collections(t)
    out = []
    for a, b in itertools.permutations(cs, 2):
        if cs[a].keys() == cs[b].keys():
            diff = [k for k in cs[a] if cs[a][k] != cs[b][k]]
            if len(diff) == 1 and (cs[a][diff[0]], cs[b][diff[0]]) == ("float16", "float32"):
                out.append((a, b))
    return out


def _total_of(t, arrangement: str) -> float:
    d = t["O3/arrangements"]
    return float(d[(d.arrangement == arrangement) & (d.collection == "total")].bytes_per_param.iloc[0])


sources("O3/adam_bytes", {c: "torch.optim.AdamW's state (its real tensors)" for c in
                         ("optimizer", "state_entries", "moment_tensors", "moment_bytes", "bookkeeping_bytes")}
        | {"param_elements": "the model's parameters", "param_bytes": "the model's parameters",
           "grad_bytes": "the model's gradients (autograd)",
           "total_bytes_per_param": "torch.optim.AdamW's state, the model's parameters"}, by="phase")


def _adam(t, phase: str):
    return row(t["O3/adam_bytes"], "phase", phase)


def _measured_per_param(r) -> float:
    """Parameters, gradients and moments of a real AdamW, in bytes per parameter element (step counters apart)."""
    return float((r.param_bytes + r.grad_bytes + r.moment_bytes) / r.param_elements)


@relation("O3/adam_bytes", "O3/arrangements",
          edge=Edge(Move("O3/adam_bytes", {"phase": "after_step"}, "moment_bytes", lambda t: _adam(t, "after_step").moment_bytes),
                    Move("O3/adam_bytes", {"phase": "after_step"}, "moment_bytes",
                         lambda t: _adam(t, "after_step").moment_bytes + 1)))
def optimizer_bytes_per_parameter(t):
    """A real fp32 AdamW step holds parameters, gradients and its two moments: the bytes of those tensors per
    parameter equal the four fp32 collections the documents add up (16 per parameter)."""
    after, four = _adam(t, "after_step"), _all_fp32_four(t)
    measured = _measured_per_param(after)
    declared = [_total_of(t, a) for a in four]
    return judged(f"AdamW after one step: {g(measured)} bytes per parameter element ({int(after.moment_tensors)} moment "
                  f"tensors, {int(after.moment_bytes):,} bytes for {int(after.param_elements):,} elements); the four "
                  f"fp32 collections declared: {', '.join(g(d) for d in declared)}",
                  flag(len(four) > 0, "an all-fp32 four-collection arrangement"),
                  flag(all(measured == d for d in declared), "measured bytes per parameter equal the declared total"),
                  flag(after.moment_tensors == 2 * after.state_entries and after.moment_tensors > 0,
                       "two moments per parameter tensor"))


@relation("O3/arrangements", definition=True,
          edge=Edge(Move("O3/arrangements", lambda t: {"arrangement": _fp16_to_fp32_pairs(t)[0][1], "collection": "total"},
                         "bytes_per_param", lambda t: _total_of(t, _fp16_to_fp32_pairs(t)[0][0]) + 2),
                    Move("O3/arrangements", lambda t: {"arrangement": _fp16_to_fp32_pairs(t)[0][1], "collection": "total"},
                         "bytes_per_param", lambda t: _total_of(t, _fp16_to_fp32_pairs(t)[0][0]) + 3)))
def fp32_gradients_add_two_bytes(t):
    """Mixed precision's fp32 gradients instead of fp16 ones: 2 bytes more per parameter, the dtype sizes declared
    in config.yaml summed (arithmetic; no mixed-precision optimizer state is measured here)."""
    d = t["O3/arrangements"]
    parts = d[d.collection != "total"].groupby("arrangement").bytes_per_param.sum()
    pairs = _fp16_to_fp32_pairs(t)
    return judged("fp16 -> fp32 in one collection: " + ", ".join(f"{a} {_total_of(t, a):g} -> {b} {_total_of(t, b):g}"
                                                                  for a, b in pairs),
                  flag(all(parts[a] == _total_of(t, a) for a in parts.index), "each total is its collections' sum"),
                  flag(len(pairs) > 0 and all(_total_of(t, b) - _total_of(t, a) == 2 for a, b in pairs),
                       "fp32 instead of fp16 in one collection: 2 bytes more"))


def _count(t, name: str) -> int:
    return int(row(t["O3/counts"], "count", name).value)


@relation("O3/counts",
          edge=Edge(Move("O3/counts", {"count": "with_duplicates"}, "value", lambda t: _count(t, "unique") + 1),
                    Move("O3/counts", {"count": "with_duplicates"}, "value", lambda t: _count(t, "unique"))))
def tied_parameter_counted_once(t):
    """GPT-2 small has a tied parameter, and model.parameters() counts fewer elements than every named
    parameter with duplicates: the tied one once."""
    u, w, n = _count(t, "unique"), _count(t, "with_duplicates"), _count(t, "tied_names")
    return judged(f"unique {u:,} < with duplicates {w:,} ({n} tied name(s))",
                  flag(n >= 1, "a tied parameter"), flag(u < w, "counted once among the unique parameters"))


@relation("O3/adam_bytes", edge=Edge(Move("O3/adam_bytes", {"phase": "before_step"}, "state_entries", 0),
                                     Move("O3/adam_bytes", {"phase": "before_step"}, "state_entries", 1)))
def adam_state_is_lazy(t):
    """AdamW allocates its moments lazily: after backward, before its first step, its state is empty although every
    gradient exists; the first step creates the two moments of every parameter tensor."""
    before, after = _adam(t, "before_step"), _adam(t, "after_step")
    return judged(f"before the first step: {int(before.state_entries)} state entries, {int(before.moment_bytes)} moment "
                  f"bytes, {int(before.grad_bytes):,} gradient bytes; after it: {int(after.state_entries)} entries, "
                  f"{int(after.moment_tensors)} moment tensors, {int(after.moment_bytes):,} bytes",
                  flag(before.grad_bytes > 0, "the gradients exist before the step"),
                  flag(before.state_entries == 0 and before.moment_bytes == 0, "no state before the first step"),
                  flag(after.state_entries > 0 and after.moment_tensors == 2 * after.state_entries
                       and after.moment_bytes == 2 * after.param_bytes, "two moments per parameter after it"))
