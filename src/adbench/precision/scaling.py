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
# measurement-level controls (claims_bugs.py): each a realistic bug of the measurement, None in every real run
SCALING_BUGS = ("forgets-to-unscale", "aux-loss-after-scale", "unscale-by-start", "master-assigns",
                "fp64-master-in-fp32", "bf16-update-promoted", "update-via-bf16")
LEAF_SEED = 0  # the small MLP whose leaf gradients P4 scales: a fixed draw, any draw shows the same
# P6's direct-update probe near the weight: updates from 1e-4 to 1e-2 of it, no power of two among them (no ties)
UPDATE_GRID = [10.0 ** (-4 + k / 10) for k in range(21)]


def _check_bug(bug: str | None) -> None:
    if bug not in (None, *SCALING_BUGS):
        raise ValueError(f"bug {bug!r} not in {SCALING_BUGS}")


def scale_and_cast(grad: float, scale: float) -> float:
    """S * g computed in binary64, then stored in fp16 (the scaled gradient's format)."""
    return cast(grad * scale, F16)


def leaf_grads(scale: float, bug: str | None = None) -> pd.DataFrame:
    """Every leaf gradient of a small tanh MLP (float32) from autograd on L and, separately, on S * L."""
    gen = torch.Generator().manual_seed(LEAF_SEED)
    w1, b1 = torch.randn(3, 4, generator=gen), torch.randn(4, generator=gen)
    w2, x = torch.randn(4, 2, generator=gen), torch.randn(5, 3, generator=gen)
    leaves = {"w1": w1.requires_grad_(), "b1": b1.requires_grad_(), "w2": w2.requires_grad_()}

    def loss() -> torch.Tensor:
        return (torch.tanh(x @ w1 + b1) @ w2).pow(2).mean()

    grads = torch.autograd.grad(loss(), list(leaves.values()))
    scaled_loss = scale * loss()
    if bug == "aux-loss-after-scale":
        scaled_loss = scaled_loss + 1e-3 * w1.pow(2).sum()  # bug: a regularizer added after the scale
    scaled = torch.autograd.grad(scaled_loss, list(leaves.values()))
    rows = []
    for (name, _), gr, sg in zip(leaves.items(), grads, scaled):
        for i, (a, b) in enumerate(zip(gr.flatten().tolist(), sg.flatten().tolist())):
            rows.append({"param": name, "index": i, "scale": scale, "grad": a, "scaled_grad": b,
                         "scale_times_grad": scale * a})  # binary64: exact for a power-of-two scale
    return pd.DataFrame(rows)


def measure_p4(grads: list[float], scale: float, bug: str | None = None) -> dict:
    """P4: a static scale S: the scaled fp16 value and S-division back to the gradient; S * L's leaf gradients."""
    _check_bug(bug)
    rows = []
    for g in grads:
        s16 = scale_and_cast(g, scale)
        back = s16 if bug == "forgets-to-unscale" else s16 / scale  # bug: the optimizer reads the scaled value
        rows.append({"grad": g, "scale": scale, "scaled_exact": g * scale, "scaled_fp16": s16,
                     "finite": math.isfinite(s16), "unscaled": back,
                     "unscaled_rel_error": abs(back - g) / g, "unscaled_fp16_direct": cast(g, F16)})
    table = pd.DataFrame(rows)
    items = []
    for r in rows:
        items.append((f"scaled_{r['grad']:g}", r["scaled_fp16"]))
        items.append((f"product_{r['grad']:g}", r["scaled_exact"]))  # g x S before the fp16 store
        if r["finite"]:
            items.append((f"unscaled_{r['grad']:g}", r["unscaled"]))
    return {"values": values_table("P4", items), "static": table, "leaf_grads": leaf_grads(scale, bug)}


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


def measure_p5(grads: list[float], start: float, bug: str | None = None) -> dict:
    """P5: the dynamic scaler's settled scale, and each gradient scaled and unscaled."""
    _check_bug(bug)
    scale, attempts = dynamic_scale(grads, start)
    by = start if bug == "unscale-by-start" else scale  # bug: divided by the first scale, not the kept one
    final = pd.DataFrame([{"grad": g, "scale": scale, "scaled_fp16": scale_and_cast(g, scale),
                           "unscaled": scale_and_cast(g, scale) / by} for g in grads])
    items = [("settled_scale", scale), ("attempts", int(attempts.attempt.max()))]
    for r in final.itertuples():
        items += [(f"scaled_{r.grad:g}", r.scaled_fp16), (f"unscaled_{r.grad:g}", r.unscaled)]
    return {"values": values_table("P5", items), "attempts": attempts, "settled": final}


def direct_updates(weight: float, updates: list[float], bug: str | None = None) -> pd.DataFrame:
    """Each update added once to the weight stored in fp16 and, separately, in bf16 (a direct 16-bit update)."""
    rows = []
    for u in updates:
        row = {"weight": weight, "update": u}
        for name, dt in (("fp16", F16), ("bf16", torch.bfloat16)):
            w, du = torch.tensor(weight, dtype=dt), torch.tensor(u, dtype=dt)
            if bug == "bf16-update-promoted" and name == "bf16":
                du = torch.tensor(u, dtype=torch.float32)  # bug: an fp32 update promotes the sum to fp32
            new = w + du
            row.update({f"{name}_update": du.item(), f"{name}_after": new.item(),
                        f"{name}_changes": "yes" if bool(new != w) else "no"})
        rows.append(row)
    return pd.DataFrame(rows)


def measure_p6(weight: float, update: float, steps: int, record_every: int, bug: str | None = None) -> dict:
    """P6: add `update` `steps` times to a pure fp16 weight and to fp32 and fp64 master weights."""
    _check_bug(bug)
    w16, u16 = torch.tensor(weight, dtype=F16), torch.tensor(update, dtype=F16)
    if bug == "update-via-bf16":   # bug: the update rounded to bf16 on its way to fp16 (rounded twice, 8 bits first)
        u16 = torch.tensor(update, dtype=torch.bfloat16).to(F16)
    w32, u32 = torch.tensor(weight, dtype=torch.float32), torch.tensor(update, dtype=torch.float32)
    wide = torch.float32 if bug == "fp64-master-in-fp32" else torch.float64  # bug: the wider master's dtype lost
    w64, u64 = torch.tensor(weight, dtype=wide), torch.tensor(update, dtype=wide)
    exact0, du = Fraction(str(weight)), Fraction(str(update))   # the decimal numbers as written
    rows = [{"step": 0, "fp16": weight, "fp32_master": weight, "exact": weight, "fp64_master": weight}]
    for k in range(1, steps + 1):
        w16 = w16 + u16            # rounded to fp16 after every addition
        # rounded to fp32 after every addition (bug: `=` for `+=`, the master restarts from the weight)
        w32 = torch.tensor(weight, dtype=torch.float32) + u32 if bug == "master-assigns" else w32 + u32
        w64 = w64 + u64            # rounded to fp64 after every addition
        if k % record_every == 0 or k == steps:
            rows.append({"step": k, "fp16": w16.item(), "fp32_master": w32.item(),
                         "exact": float(exact0 + k * du), "fp64_master": w64.item()})
    traj = pd.DataFrame(rows)
    last = traj.iloc[-1]
    items = [("fp16_weight", last.fp16), ("fp32_master", last.fp32_master), ("exact", last.exact),
             ("fp16_spacing_at_1", next_above(weight, F16) - weight), ("update_in_fp16", u16.item()),
             ("fp32_drift", last.fp32_master - last.exact), ("update", update),
             ("fp64_master", last.fp64_master), ("fp64_drift", last.fp64_master - last.exact)]
    return {"values": values_table("P6", items), "trajectory": traj,
            "direct_update": direct_updates(weight, [weight * r for r in UPDATE_GRID], bug)}


def measure_scaling(static_grads: list[float], static_scale: float, dynamic_grads: list[float],
                    dynamic_start: float, weight: float, update: float, steps: int, record_every: int,
                    grad_scaler: dict, wide_sum: dict) -> dict:
    """One job for P4, P5 and P6; P5 adds torch's GradScaler (`grad_scaler`), P6 16-bit sums (`wide_sum`)."""
    out: dict = {}
    for mid, res in (("p4", measure_p4(static_grads, static_scale)), ("p5", measure_p5(dynamic_grads, dynamic_start)),
                     ("p6", measure_p6(weight, update, steps, record_every))):
        out[mid.upper()] = res
    # like with like: torch's scaler starts where the hand scaler starts (the configured start)
    out["P5"]["grad_scaler"] = grad_scaler_table(**grad_scaler, init_scale=dynamic_start)
    out["P6"]["wide_sum"] = wide_sum_table(**wide_sum)
    return out
