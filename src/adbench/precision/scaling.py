"""P4-P6: static and dynamic loss scaling in fp16, and swamping of a small update."""

from __future__ import annotations

import logging
import math
from fractions import Fraction

import pandas as pd
import torch

from ..tables import values_table
from .formats import cast, next_above
from .grad_scaler import grad_scaler_table
from .wide_sum import wide_sum_table

log = logging.getLogger(__name__)
F16 = torch.float16


def scale_and_cast(grad: float, scale: float) -> float:
    """S * g computed in binary64, then stored in fp16 (the scaled gradient's format)."""
    return cast(grad * scale, F16)


def measure_p4(grads: list[float], scale: float) -> dict:
    """P4: a static scale S: the scaled fp16 value and S-division back to the gradient."""
    rows = []
    for g in grads:
        s16 = scale_and_cast(g, scale)
        rows.append({"grad": g, "scale": scale, "scaled_exact": g * scale, "scaled_fp16": s16,
                     "finite": math.isfinite(s16), "unscaled": s16 / scale,
                     "unscaled_rel_error": abs(s16 / scale - g) / g, "unscaled_fp16_direct": cast(g, F16)})
    table = pd.DataFrame(rows)
    items = []
    for r in rows:
        items.append((f"scaled_{r['grad']:g}", r["scaled_fp16"]))
        items.append((f"product_{r['grad']:g}", r["scaled_exact"]))  # g x S before the fp16 store
        if r["finite"]:
            items.append((f"unscaled_{r['grad']:g}", r["unscaled"]))
    return {"values": values_table("P4", items), "static": table}


def dynamic_scale(grads: list[float], start: float, max_attempts: int = 64) -> tuple[float, pd.DataFrame]:
    """Halve the scale until every scaled fp16 gradient is finite; (scale, attempt log)."""
    scale, attempts = start, []
    for attempt in range(1, max_attempts + 1):
        scaled = [scale_and_cast(g, scale) for g in grads]
        ok = all(math.isfinite(s) for s in scaled)
        attempts += [{"attempt": attempt, "scale": scale, "grad": g, "scaled_fp16": s,
                      "finite": math.isfinite(s), "step": "kept" if ok else "skipped, scale halved"}
                     for g, s in zip(grads, scaled)]
        log.info("attempt %d: scale %g %s", attempt, scale, "accepted" if ok else "overflowed")
        if ok:
            return scale, pd.DataFrame(attempts)
        scale /= 2
    raise RuntimeError(f"no finite scale after {max_attempts} halvings from {start}")


def measure_p5(grads: list[float], start: float) -> dict:
    """P5: the dynamic scaler's settled scale, and each gradient scaled and unscaled."""
    scale, attempts = dynamic_scale(grads, start)
    final = pd.DataFrame([{"grad": g, "scale": scale, "scaled_fp16": scale_and_cast(g, scale),
                           "unscaled": scale_and_cast(g, scale) / scale} for g in grads])
    items = [("settled_scale", scale), ("attempts", int(attempts.attempt.max()))]
    for r in final.itertuples():
        items += [(f"scaled_{r.grad:g}", r.scaled_fp16), (f"unscaled_{r.grad:g}", r.unscaled)]
    return {"values": values_table("P5", items), "attempts": attempts, "settled": final}


def measure_p6(weight: float, update: float, steps: int, record_every: int) -> dict:
    """P6: add `update` `steps` times to a pure fp16 weight and to an fp32 master weight."""
    w16, u16 = torch.tensor(weight, dtype=F16), torch.tensor(update, dtype=F16)
    w32, u32 = torch.tensor(weight, dtype=torch.float32), torch.tensor(update, dtype=torch.float32)
    exact0, du = Fraction(str(weight)), Fraction(str(update))   # the decimal numbers as written
    rows = [{"step": 0, "fp16": weight, "fp32_master": weight, "exact": weight}]
    for k in range(1, steps + 1):
        w16 = w16 + u16            # rounded to fp16 after every addition
        w32 = w32 + u32            # rounded to fp32 after every addition
        if k % record_every == 0 or k == steps:
            rows.append({"step": k, "fp16": w16.item(), "fp32_master": w32.item(),
                         "exact": float(exact0 + k * du)})
    traj = pd.DataFrame(rows)
    last = traj.iloc[-1]
    items = [("fp16_weight", last.fp16), ("fp32_master", last.fp32_master), ("exact", last.exact),
             ("fp16_spacing_at_1", next_above(weight, F16) - weight), ("update_in_fp16", u16.item()),
             ("fp32_drift", last.fp32_master - last.exact)]
    return {"values": values_table("P6", items), "trajectory": traj}


def measure_scaling(static_grads: list[float], static_scale: float, dynamic_grads: list[float],
                    dynamic_start: float, weight: float, update: float, steps: int, record_every: int,
                    grad_scaler: dict, wide_sum: dict) -> dict:
    """One job for P4, P5 and P6; P5 adds torch's GradScaler (`grad_scaler`), P6 16-bit sums (`wide_sum`)."""
    out: dict = {}
    for mid, res in (("p4", measure_p4(static_grads, static_scale)), ("p5", measure_p5(dynamic_grads, dynamic_start)),
                     ("p6", measure_p6(weight, update, steps, record_every))):
        out[mid.upper()] = res
    out["P5"]["grad_scaler"] = grad_scaler_table(**grad_scaler)
    out["P6"]["wide_sum"] = wide_sum_table(**wide_sum)
    return out
