"""D2: gradient norm reaching each layer of a 256-wide tanh stack, relative to the last layer.

Layer l: a_l = tanh(scale * h_{l-1} W_l^T), h_l = a_l (plain) or h_{l-1} + a_l (residual),
with W_l ~ N(0, 1/width) so `scale` is the gain each layer applies to its input. The loss of
a depth-d stack is sum(h_d); "the gradient reaching layer l" is ||dL/dh_l|| over the batch.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import torch

from ..tables import values_table

log = logging.getLogger(__name__)


def draw(seed: int, max_depth: int, width: int, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded weights (L, n, n) and input (B, n); every depth d uses the first d layers."""
    g = torch.Generator().manual_seed(seed)
    weights = torch.randn(max_depth, width, width, generator=g, dtype=torch.float64) / math.sqrt(width)
    x = torch.randn(batch, width, generator=g, dtype=torch.float64)
    return weights, x


def forward(weights: torch.Tensor, x: torch.Tensor, scale: float, residual: bool) -> list[torch.Tensor]:
    """Activations a_l (each (B, n)) of the full stack; prefixes are the shallower stacks."""
    h, acts = x, []
    for W in weights:
        a = torch.tanh(scale * (h @ W.T))
        h = h + a if residual else a
        acts.append(a)
    return acts


def layer_grad_norms(weights: torch.Tensor, x: torch.Tensor, scale: float, residual: bool) -> np.ndarray:
    """norms[d-1, l-1] = ||dL_d/dh_l|| for L_d = sum(h_d), every depth d and layer l <= d (else nan).

    Backward by hand, all depths at once: G stacks dL_d/dh_l for the depths d >= l still
    running, shape (D_active, B, n); one layer's vector-Jacobian product serves them all.
    """
    acts = forward(weights, x, scale, residual)
    L = len(acts)
    norms = np.full((L, L), np.nan)
    G = torch.ones(1, *x.shape, dtype=x.dtype)                   # depth L: dL/dh_L = 1
    for l in range(L, 0, -1):
        norms[l - 1:, l - 1] = torch.linalg.vector_norm(G, dim=(1, 2)).numpy()[::-1]
        if l == 1:
            break
        a, W = acts[l - 1], weights[l - 1]
        back = scale * ((G * (1 - a * a)) @ W)                   # through tanh(scale * h W^T)
        G = G + back if residual else back                       # identity route of x + layer(x)
        G = torch.cat([G, torch.ones(1, *x.shape, dtype=x.dtype)])  # depth l-1 starts here
    return norms


def residual_verdict(first: pd.DataFrame) -> str:
    """Sentence on whether any residual stack (any depth, scale, seed) gave layer 1 less than the last."""
    worst = first.loc[first.rel_grad_min.idxmin()]
    where = f"depth {worst.depth}, scale {worst.scale:g}"
    if worst.rel_grad_min >= 1:
        return (f"first layer never got less gradient than the last (smallest first/last ratio "
                f"{worst.rel_grad_min:.3g} of any seed, at {where})")
    return f"first layer got less gradient than the last at {where} (ratio {worst.rel_grad_min:.3g})"


def measure_d2(width: int, max_depth: int, scales: list[float], batch: int, seeds: list[int],
               cases: list[dict]) -> dict:
    """D2: the grid (depth, scale, residual, layer) -> gradient norm relative to the last layer."""
    settings = [(residual, scale) for residual in (False, True) for scale in scales]
    logs: dict = {k: [] for k in settings}
    for seed in seeds:                                          # one draw per seed serves every setting
        weights, x = draw(seed, max_depth, width, batch)
        for residual, scale in settings:
            n = layer_grad_norms(weights, x, scale, residual)
            logs[residual, scale].append(np.log(n / np.diag(n)[:, None]))   # relative to each stack's last layer
        log.info("seed %d done", seed)
    d, l = np.tril_indices(max_depth)
    frames = []
    for (residual, scale), per_seed in logs.items():
        lg = np.stack(per_seed)[:, d, l]                        # (seeds, rows) of log ratios
        frames.append(pd.DataFrame({
            "depth": d + 1, "scale": scale, "residual": residual, "layer": l + 1,
            "rel_grad": np.exp(lg.mean(0)),                     # geometric mean over seeds
            "log10_rel_grad": lg.mean(0) / np.log(10),          # for the explorer's JSON (no underflow)
            "rel_grad_min": np.exp(lg.min(0)), "rel_grad_max": np.exp(lg.max(0))}))
        log.info("residual=%s scale=%g: first/last at depth %d = %.3g", residual, scale, max_depth,
                 frames[-1].rel_grad.iloc[-max_depth])
    grid = pd.concat(frames, ignore_index=True)
    first = grid[(grid.layer == 1) & (grid.depth > 1)]
    items = []
    for c in cases:
        sel = first[(first.depth == c["depth"]) & (first.scale == c["scale"]) & (first.residual == c["residual"])]
        name = f"{'residual' if c['residual'] else 'plain'}_s{c['scale']:g}_d{c['depth']}_first_over_last"
        items.append((name, float(sel.rel_grad.iloc[0]) if len(sel) else math.nan))
    items.append(("residual_first_vs_last", residual_verdict(first[first.residual])))
    summary = first[first.depth.isin(sorted({c["depth"] for c in cases}))][
        ["depth", "scale", "residual", "rel_grad", "rel_grad_min", "rel_grad_max"]].rename(
        columns={"rel_grad": "first_over_last", "rel_grad_min": "seed_min", "rel_grad_max": "seed_max"})
    notes = {q: f"geometric mean over {len(seeds)} seeds of W ~ N(0, 1/{width}) and a batch of {batch} inputs; "
                "the documents' weights, inputs and loss are not given" for q, _ in items[:-1]}
    notes["residual_first_vs_last"] = (f"checked at every depth 2-{max_depth}, scale {list(scales)} and seed, "
                                       "not only on the seed average")
    return {"values": values_table("D2", items, notes), "grid": grid, "summary": summary}
