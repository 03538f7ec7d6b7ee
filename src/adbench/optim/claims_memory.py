"""The O3 conclusions, tested: optimizer memory per parameter and GPT-2's tied parameter (imported by claims.py).

Arrangements are chosen by their dtypes and collections, never by the names config.yaml gives them.
"""

from __future__ import annotations

import itertools

from ..claims import Edge, Move, flag, judged, relation, row, sources

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


# re-pointed to the AdamW state table when it lands
@relation("O3/arrangements", definition=True,
          edge=Edge(Move("O3/arrangements", lambda t: {"arrangement": _all_fp32_four(t)[0], "collection": "total"},
                         "bytes_per_param", 16),
                    Move("O3/arrangements", lambda t: {"arrangement": _all_fp32_four(t)[0], "collection": "total"},
                         "bytes_per_param", 17)))
def optimizer_bytes_per_parameter(t):
    """Four fp32 collections are 16 bytes per parameter; one fp16 collection made fp32 adds 2: the dtype sizes
    declared in config.yaml, summed (no optimizer's state is measured here)."""
    d = t["O3/arrangements"]
    parts = d[d.collection != "total"].groupby("arrangement").bytes_per_param.sum()
    four, pairs = _all_fp32_four(t), _fp16_to_fp32_pairs(t)
    return judged(f"all-fp32 four-collection totals {[_total_of(t, a) for a in four]}; fp16 -> fp32 one collection: "
                  + ", ".join(f"{a} {_total_of(t, a):g} -> {b} {_total_of(t, b):g}" for a, b in pairs),
                  flag(all(parts[a] == _total_of(t, a) for a in parts.index), "each total is its collections' sum"),
                  flag(len(four) > 0 and all(_total_of(t, a) == 16 for a in four), "four fp32 collections: 16 bytes"),
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
