"""P9: what happens to a real gradient when it is stored in 16 bits, with and without a loss scale."""

from __future__ import annotations

import pandas as pd
import torch

from ..tables import values_table

FP16_MAX = float(torch.finfo(torch.float16).max)  # 65504


def precision_table(grads: torch.Tensor, scale: float) -> pd.DataFrame:
    """Counts over every gradient value (flat fp32 tensor): underflow to zero, recovery and overflow under `scale`."""
    g = grads.detach().float().cpu()
    nonzero = g != 0
    rows = []
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        lost = nonzero & (g.to(dtype) == 0)  # nonzero in fp32, exactly zero after the cast
        scaled = g * scale  # fp32 multiply by a power of two: exact unless it overflows fp32
        still = lost & (scaled.to(dtype) == 0)
        over_inf = torch.isinf(scaled.to(dtype))
        rows.append({"dtype": name, "values": g.numel(), "fp32_zeros": int((~nonzero).sum()), "to_zero": int(lost.sum()),
                     "to_zero_pct": 100 * float(lost.sum()) / g.numel(), "scale": scale,
                     "scaled_still_zero": int(still.sum()), "scaled_recovered": int(lost.sum() - still.sum()),
                     "scaled_above_fp16_max": int((scaled.abs() > FP16_MAX).sum()), "scaled_to_inf": int(over_inf.sum())})
    return pd.DataFrame(rows)


def p9_values(p9: pd.DataFrame, src: str) -> pd.DataFrame:
    """Documented P9 quantities from the per-dtype table."""
    f, b = (p9.set_index("dtype").loc[d] for d in ("fp16", "bf16"))
    bf16_text = "none" if b.to_zero == 0 else f"{int(b.to_zero):,} values"
    return values_table("P9", [("fp16_zero_pct", float(f.to_zero_pct)), ("fp16_zero_millions", f.to_zero / 1e6),
                               ("bf16_zero", bf16_text), ("scaled_still_zero", int(f.scaled_still_zero)),
                               ("scaled_overflow", int(f.scaled_to_inf))],
                        {"scaled_overflow": f"{int(f.scaled_above_fp16_max)} scaled values exceed {FP16_MAX:g} in magnitude; "
                                            f"{int(f.scaled_to_inf)} of them round to inf in fp16"}, model_source=src)


def autocast_table(net, ids: torch.Tensor, loss_fn) -> pd.DataFrame:
    """On CUDA: one forward+backward under torch.autocast per 16-bit dtype (fp16 with a GradScaler)."""
    if not ids.is_cuda:
        return pd.DataFrame([{"dtype": "-", "note": "autocast steps run only with device: cuda"}])
    rows = []
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        net.zero_grad(set_to_none=True)
        scaler = torch.amp.GradScaler("cuda", enabled=dtype == torch.float16)
        with torch.autocast("cuda", dtype=dtype):
            loss = loss_fn(net(ids, use_cache=False).logits, ids).mean()
        scaler.scale(loss).backward()
        grads = torch.cat([p.grad.flatten() for p in net.parameters() if p.grad is not None]) / scaler.get_scale()
        rows.append({"dtype": name, "loss": loss.item(), "scale": scaler.get_scale(),
                     "grad_norm": float(torch.linalg.vector_norm(grads.double())),
                     "nonfinite": int((~torch.isfinite(grads)).sum()), "zero": int((grads == 0).sum())})
    net.zero_grad(set_to_none=True)
    return pd.DataFrame(rows)
