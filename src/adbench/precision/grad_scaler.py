"""P5 with torch's own dynamic loss scaler: `torch.amp.GradScaler("cpu")` on a two-weight linear loss.

Step 1 injects an inf into one scaled gradient: the scaler must skip the optimizer step (weights
unchanged) and halve its scale. Step 2 is clean: the step must happen, with the gradient divided by the
scale before the update (the weights move by lr times the unscaled gradient, computed separately by
autograd without any scaler). The scaler starts at the configured start (precision.dynamic_start), the hand
scaler's start, so the two halve from the same scale; every later scale is read from the scaler.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn

GRAD_SCALER_BUGS = ("step-not-skipped",)


def scaler_step(w: nn.Parameter, x: torch.Tensor, opt: torch.optim.Optimizer, scaler, lr: float,
                inject_at: int | None, bug: str | None = None) -> dict:
    """One scaled forward/backward/step on loss = (w · x).sum(); an inf at `inject_at` when not None."""
    before = w.detach().clone()
    (true_grad,) = torch.autograd.grad((w * x).sum(), w)  # the gradient with no scaling anywhere: x
    opt.zero_grad(set_to_none=True)
    scale_before = scaler.get_scale()
    scaler.scale((w * x).sum()).backward()
    scaled = w.grad.detach().clone()
    if inject_at is not None:
        with torch.no_grad():
            w.grad[inject_at] = float("inf")  # an overflow, as an fp16 backward would produce
    scaler.unscale_(opt)  # divides every gradient by the scale and records whether any is non-finite
    unscaled = w.grad.detach().clone()
    if bug == "step-not-skipped":
        opt.step()  # bug: the optimizer stepped directly, past the scaler's inf check
    else:
        scaler.step(opt)  # skipped when unscale_ found a non-finite gradient
    scaler.update()
    after = w.detach().clone()
    sgd = before - lr * true_grad  # where a plain SGD step with the true gradient would land
    return {"inf_injected": inject_at is not None, "scale_before": scale_before,
            "scaled_grad_over_true_grad": (scaled / true_grad).max().item(),
            "unscaled_all_finite": bool(torch.isfinite(unscaled).all()),
            "unscaled_max_abs_diff_vs_true_grad": (unscaled - true_grad).abs().max().item()
            if inject_at is None else float("nan"),
            "max_abs_weight_change": (after - before).abs().max().item(),
            "weights_unchanged": bool(torch.equal(after, before)),
            "max_abs_diff_vs_sgd_step": (after - sgd).abs().max().item(), "max_abs_weight_after": after.abs().max().item(),
            "scale_after": scaler.get_scale()}


def grad_scaler_table(weights: list[float], inputs: list[float], lr: float, inf_index: int,
                      init_scale: float | None = None, bug: str | None = None) -> pd.DataFrame:
    """Two steps of one GradScaler starting at `init_scale` (None: torch's default): an overflowing one (inf at
    `inf_index`), then a finite one."""
    if bug not in (None, *GRAD_SCALER_BUGS):
        raise ValueError(f"bug {bug!r} not in {GRAD_SCALER_BUGS}")
    w = nn.Parameter(torch.tensor(weights, dtype=torch.float32))
    x = torch.tensor(inputs, dtype=torch.float32)
    opt = torch.optim.SGD([w], lr=lr)
    # the other settings are torch's defaults (backoff 0.5, growth after 2,000 clean steps)
    scaler = torch.amp.GradScaler("cpu") if init_scale is None else torch.amp.GradScaler("cpu", init_scale=init_scale)
    rows = [scaler_step(w, x, opt, scaler, lr, at, bug) for at in (inf_index, None)]
    return pd.DataFrame([{"step": i + 1, **r} for i, r in enumerate(rows)])
