"""The O3 conclusions, tested: optimizer memory per parameter and GPT-2's tied parameter (listed in optim/family.py).

Arrangements are chosen by their dtypes and collections, never by the names config.yaml gives them.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..claims import EPS32, Edge, Flip, Move, at_most, flag, g, judged, relation, row, sources

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


# ---- Adam's first step, and persistent state by optimizer -----------------------------------------------------------
sources("O3/adam_first_step", {"parameter": "input", "index": "input", "lr": "input", "beta1": "input",
                               "beta2": "input", "eps": "input", "dtype": "input",
                               "param_before": "torch.optim.Adam's step", "param_after": "torch.optim.Adam's step",
                               "exp_avg": "torch.optim.Adam's step", "exp_avg_sq": "torch.optim.Adam's step",
                               "grad": "autograd gradient", "hand_step": "hand formula from the autograd gradient"})
sources("O3/state_by_optimizer", {"optimizer": "input", "torch_class": "input", "momentum": "input",
                                  "param_elements": "the model's parameters", "param_bytes": "the model's parameters",
                                  "state_tensors": "torch.optim state", "state_bytes": "torch.optim state",
                                  "bookkeeping_bytes": "torch.optim state"})
# torch's float32 update against the float64 formula: the parameter's last rounding (half an ulp of it) and the half
# dozen float32 operations on the step (an ulp each of the step): one unit of EPS32 x (|p| + 8 |step|)
MOMENT_ULPS = 4  # (1 - beta) g and (1 - beta) g * g in float32: two or three roundings each


def _step_units(d) -> "np.ndarray":
    """|torch's real first step - the hand formula| in float32 rounding units of each element."""
    step = d.param_before - d.param_after
    return ((step - d.hand_step).abs() / (EPS32 * (d.param_after.abs() + 8 * d.hand_step.abs()))).to_numpy(float)


def _worst_step(t) -> dict:
    d = t["O3/adam_first_step"]
    r = d.iloc[int(np.argmax(_step_units(d)))]
    return {"parameter": r.parameter, "index": r["index"]}


def _step_at(t, scale: float) -> float:
    d, w = t["O3/adam_first_step"], _worst_step(t)
    r = d[(d.parameter == w["parameter"]) & (d["index"] == w["index"])].iloc[0]
    return float(r.param_before - scale * r.hand_step)


def _moment_ulps(avg, target) -> float:
    """Largest |avg - target| / |target| in float32 ulps (target: (1 - beta) g or (1 - beta) g^2)."""
    t = np.abs(np.asarray(target, float))
    return float(np.max(np.abs(np.asarray(avg, float) - np.asarray(target, float)) / (EPS32 * np.where(t > 0, t, 1))))


@relation("O3/adam_first_step",
          edge=Flip("O3/adam_first_step", _worst_step, "param_after", holding=lambda t: _step_at(t, 1.0),
                    failing=lambda t: _step_at(t, 1.01)))
def adam_first_step_unbiased(t):
    """torch.optim.Adam's stored averages after one step are (1 - beta1) g and (1 - beta2) g^2, biased toward zero;
    its bias correction divides that mass out, so its real first update of every element equals the essay's
    lr * g / (|g| + eps) computed by hand from the autograd gradient (float32 rounding)."""
    d = t["O3/adam_first_step"]
    r0 = d.iloc[0]
    b1, b2, lr, eps = float(r0.beta1), float(r0.beta2), float(r0.lr), float(r0.eps)
    units = _step_units(d)
    m_ulps = _moment_ulps(d.exp_avg, (1 - b1) * d.grad)
    v_ulps = _moment_ulps(d.exp_avg_sq, (1 - b2) * d.grad ** 2)
    step = (d.param_before - d.param_after).abs()
    raw = lr * d.exp_avg.abs() / (np.sqrt(d.exp_avg_sq) + eps)   # the same averages, uncorrected: shown
    return judged(f"{len(d):,} elements: |real step - lr g/(|g| + eps)| at most {g(units.max())} float32 rounding "
                  f"units; real step / lr from {g(step.min() / lr)} to {g(step.max() / lr)}; stored averages "
                  f"(1 - beta1) g within {g(m_ulps)} ulps, (1 - beta2) g^2 within {g(v_ulps)}; without the correction "
                  f"the step would be x{g(np.median(raw / step))} the real one (beta1 {b1:g}, beta2 {b2:g})",
                  flag(len(d) > 0, "elements measured"),
                  at_most(units.max(), 1.0, "largest |real step - formula|, float32 rounding units", "units", 0.25),
                  at_most(m_ulps, MOMENT_ULPS, "first average vs (1 - beta1) g", "ulps", 1.0),
                  at_most(v_ulps, MOMENT_ULPS, "second average vs (1 - beta2) g^2", "ulps", 1.0))


def _opt(t, label: str):
    return row(t["O3/state_by_optimizer"], "optimizer", label)


@relation("O3/state_by_optimizer",
          edge=Edge(Move("O3/state_by_optimizer", {"optimizer": "Adam"}, "state_bytes",
                         lambda t: int(2 * _opt(t, "Adam").param_bytes)),
                    Move("O3/state_by_optimizer", {"optimizer": "Adam"}, "state_bytes",
                         lambda t: int(2 * _opt(t, "Adam").param_bytes) - 4)))
def state_bytes_by_optimizer(t):
    """After one real step, the state tensors shaped like the parameters hold 0 bytes for SGD, one fp32 collection
    (4P) for SGD with momentum and two (8P) for Adam: the parameters' own bytes times 0, 1 and 2."""
    d = t["O3/state_by_optimizer"]
    per = {r.optimizer: r.state_bytes / r.param_elements for r in d.itertuples()}
    want = {"SGD": 0, "SGD momentum": 1, "Adam": 2}
    checks = [flag(set(want) <= set(d.optimizer), "SGD, SGD momentum and Adam measured")]
    checks += [flag(int(_opt(t, k).state_bytes) == n * int(_opt(t, k).param_bytes),
                    f"{k}: state bytes = {n} x the parameters' bytes") for k, n in want.items() if k in per]
    checks += [flag((d.param_bytes == 4 * d.param_elements).all(), "fp32 parameters: 4 bytes each")]
    return judged("state bytes per parameter element after one step: " +
                  ", ".join(f"{k} {g(v)} ({int(_opt(t, k).state_tensors)} tensors)" for k, v in per.items()),
                  *checks)
