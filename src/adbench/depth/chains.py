"""D1: dL/dx through N repetitions of `h = act(w * h)` from x, on the tape and in torch."""

from __future__ import annotations

import logging

import pandas as pd
import torch

from ..precision.formats import next_above
from ..scalar.tape import Tape, Value
from ..tables import values_table
from .residual import residual_jacobian

log = logging.getLogger(__name__)


def tape_chain(x: float, w: float, depth: int, activation: str) -> float:
    """dL/dx on the project's scalar tape, L = h_depth."""
    with Tape():
        leaf = Value(x)
        h = leaf
        for _ in range(depth):
            h = getattr(h * w, activation)()   # one multiply node, one activation node
        h.backward()
    return leaf.grad


def torch_chain(x: float, w: float, depth: int, activation: str, dtype: torch.dtype = torch.float64) -> float:
    """dL/dx from torch autograd on the same chain."""
    leaf = torch.tensor(x, dtype=dtype, requires_grad=True)
    act = {"tanh": torch.tanh, "relu": torch.relu}[activation]
    h = leaf
    for _ in range(depth):
        h = act(h * w)
    h.backward()
    return leaf.grad.item()


def _label(activation: str, w: float) -> str:
    return f"{activation}_w{w:g}"


# a measurement-level control (claims/bugs.py): torch's path of the chains loses its float64 and runs in float32
D1_BUGS = ("torch chains in float32", "probe cast to bfloat16, not fp16")


def measure_d1(x: float, max_depth: int, chains: list[dict], fp16_probe: dict, residual: dict | None = None,
               bug: str | None = None) -> dict:
    """D1: gradient reaching x at every depth 1..max_depth for each chain, tape beside torch; and a residual
    block's Jacobian, torch beside I + J_F by hand (`residual`: residual_jacobian's width and seed, its defaults
    when None). `bug`: a measurement-level control (D1_BUGS, RESIDUAL_BUGS); None in every real run."""
    dtype = torch.float32 if bug == D1_BUGS[0] else torch.float64
    deepest = max(max(ch["report_at"]) for ch in chains)
    if deepest > max_depth:
        raise ValueError(f"config key 'depth.d1.max_depth' = {max_depth} must cover report_at depth {deepest}")
    rows = []
    for ch in chains:
        act, w = ch["activation"], float(ch["w"])
        for d in range(1, max_depth + 1):
            tape, ref = tape_chain(x, w, d, act), torch_chain(x, w, d, act, dtype)
            rows.append({"chain": _label(act, w), "activation": act, "w": w, "depth": d,
                         "tape_dL_dx": tape, "torch_dL_dx": ref,
                         "rel_diff": abs(tape - ref) / abs(ref) if ref else float(tape != 0)})
        log.info("chain %s: depth %d reached", _label(act, w), max_depth)
    grid = pd.DataFrame(rows)
    items, notes = [], {}
    for ch in chains:
        lab = _label(ch["activation"], float(ch["w"]))
        sel = grid[grid.chain == lab].set_index("depth")
        for d in ch["report_at"]:
            items.append((f"{lab}_d{d}", sel.tape_dL_dx[d]))
        if ch["activation"] == "relu":   # every unit active: the product is w ** depth exactly
            d = max(ch["report_at"])
            items.append((f"{lab}_d{d}_closed_form", float(ch["w"]) ** d))
            notes[f"{lab}_d{d}_closed_form"] = f"w**{d} in binary64; the tape gives {float(sel.tape_dL_dx[d])!r}"
    p = fp16_probe
    g64 = tape_chain(x, float(p["w"]), int(p["depth"]), p["activation"])
    g16 = torch.tensor(g64, dtype=torch.float64).to(torch.bfloat16 if bug == D1_BUGS[1] else torch.float16).item()
    lab = f"{_label(p['activation'], float(p['w']))}_d{p['depth']}"
    items += [(lab, g64), (f"{lab}_fp16", g16)]
    probe = pd.DataFrame([{"chain": lab, "binary64": g64, "fp16": g16,
                           "fp16_smallest_subnormal": next_above(0.0, torch.float16)}])
    worst = float(grid.rel_diff.max())
    log.info("largest |tape - torch| / |torch| = %g", worst)
    return {"values": values_table("D1", items, notes), "chains": grid, "fp16_probe": probe,
            "residual": residual_jacobian(**(residual or {}), bug=bug),
            "_meta": {"max_rel_diff_tape_torch": worst}}
