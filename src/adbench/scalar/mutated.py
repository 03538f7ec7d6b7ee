"""S7: what a gradient check catches (four mutated backward rules) and where it disagrees by convention (ReLU's kink).

Doc 000 ("one checked coordinate left seven places to be wrong"): a check can catch a missing transpose,
an overwrite in place of accumulation, a sign error or a wrong scale; at a nonsmooth point it tests the
framework's chosen backward value, not a unique derivative.
"""

from __future__ import annotations

import pandas as pd
import torch

from .numdiff import central_difference

F64 = torch.float64
BUGS = ("correct", "dropped transpose", "overwrite", "flipped sign", "wrong scale")


class MatmulTanh(torch.autograd.Function):
    """Y = tanh(X W) with a hand-written backward that carries one of BUGS."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor, bug: str, scale: float) -> torch.Tensor:
        y = torch.tanh(x @ w)                      # (n, d) @ (d, d) -> (n, d)
        ctx.save_for_backward(x, w, y)
        ctx.bug, ctx.scale = bug, scale
        return y

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        x, w, y = ctx.saved_tensors
        bug = ctx.bug
        local = -(1 - y * y) if bug == "flipped sign" else 1 - y * y
        dz = g * local                             # (n, d)
        dx = dz @ (w if bug == "dropped transpose" else w.T)   # W is square, so the bug raises nothing
        # W is reused by every row of X: its gradient sums one outer product per row; the overwrite
        # keeps only the last row's (`dW = ...` in a loop over rows instead of `dW += ...`)
        dw = x[-1:].T @ dz[-1:] if bug == "overwrite" else x.T @ dz
        if bug == "wrong scale":
            dx, dw = ctx.scale * dx, ctx.scale * dw
        return dx, dw, None, None


def mutation_problem(seed: int, rows: int, width: int, directions: int):
    """X (rows, width), W (width, width), upstream C (rows, width) and unit directions over (X, W)."""
    gen = torch.Generator().manual_seed(seed)
    x, w, c = (torch.randn(*s, dtype=F64, generator=gen) for s in ((rows, width), (width, width), (rows, width)))
    n = x.numel() + w.numel()
    vs = [torch.randn(n, dtype=F64, generator=gen) for _ in range(directions)]
    return x, w, c, [v / v.norm() for v in vs]


def mutated_gradient(x: torch.Tensor, w: torch.Tensor, c: torch.Tensor, bug: str, scale: float) -> torch.Tensor:
    """The flat gradient (X then W) of L = sum(C * tanh(X W)) through the rule carrying `bug`."""
    xt, wt = x.clone().requires_grad_(), w.clone().requires_grad_()
    (c * MatmulTanh.apply(xt, wt, bug, scale)).sum().backward()
    return torch.cat([xt.grad.flatten(), wt.grad.flatten()])


def mutation_check(seed: int, rows: int, width: int, directions: int, wrong_scale: float, h: float,
                   over_h: bool = False) -> pd.DataFrame:
    """Each rule of BUGS through the same directional check: central difference of the plain forward vs g·v.
    `over_h`: a measurement-level control only, the central difference divided by h, not 2h."""
    x, w, c, vs = mutation_problem(seed, rows, width, directions)
    split = x.numel()

    def loss(flat: torch.Tensor) -> float:       # the forward alone, torch's own ops, no custom backward
        xs, ws = flat[:split].reshape(x.shape), flat[split:].reshape(w.shape)
        return (c * torch.tanh(xs @ ws)).sum().item()

    theta = torch.cat([x.flatten(), w.flatten()])
    slopes = [central_difference(lambda t: loss(theta + t * v), 0.0, h, over_h=over_h) for v in vs]   # along each v
    out = []
    for bug in BUGS:
        g = mutated_gradient(x, w, c, bug, wrong_scale)
        for d, (v, slope) in enumerate(zip(vs, slopes)):
            gv = float(g @ v)
            out.append({"rule": bug, "direction": d, "numerical_slope": slope, "grad_dot_v": gv,
                        "abs_error": abs(slope - gv)})
    return pd.DataFrame(out)


def relu_kink(points: list[float], h: float, over_h: bool = False) -> pd.DataFrame:
    """torch.relu's backward at each point beside a central difference of step h (`over_h`: the control bug)."""
    rows = []
    for p in points:
        t = torch.tensor(p, dtype=F64, requires_grad=True)
        torch.relu(t).backward()
        fd = central_difference(lambda z: torch.relu(torch.tensor(z, dtype=F64)).item(), p, h, over_h=over_h)
        rows.append({"x": p, "torch_backward": t.grad.item(), "central_difference": fd,
                     "abs_diff": abs(t.grad.item() - fd), "straddles_kink": bool(p - h < 0 < p + h)})
    return pd.DataFrame(rows)
