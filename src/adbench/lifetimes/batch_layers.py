"""L2 with batch-dependent layers: size-weighted microbatch means reproduce the full batch only when
each example's loss depends on that example alone.

The same float64 linear layer and data as L2, followed by one more layer: none, BatchNorm1d in train
mode (normalises with the batch's own mean and variance), BatchNorm1d in eval mode (running statistics:
per example), or dropout. Dropout is run twice: with the generator left running, so every pass draws
fresh masks as a training loop does, and with the generator re-seeded before the full batch and before
the microbatch loop, so the masks depend only on how the generator walks the elements.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn

from .accumulation import measure_l2
from .problem import _grads, _problem

F64 = torch.float64
# (layer, mode, re-seed the generator before each pass); the labels are fixed strings, never config values
# A measurement-level control (claims/bugs.py): BatchNorm's train case run with the module left in eval mode.
LAYER_BUGS = ("BatchNorm left in eval mode",)
CASES = (("linear only", "train", False), ("BatchNorm1d", "train", False), ("BatchNorm1d", "eval", False),
         ("dropout", "train", False), ("dropout", "train", True))


def _net(layer: str, n: int, n_in: int, n_out: int, seed: int,
         p: float) -> tuple[nn.Sequential, torch.Tensor, torch.Tensor]:
    """L2's seeded linear layer and data, followed by `layer`: (net, x (n, in), y (n, out))."""
    model, x, y = _problem(n, n_in, n_out, seed)
    extra = {"linear only": nn.Identity(), "BatchNorm1d": nn.BatchNorm1d(n_out, dtype=F64), "dropout": nn.Dropout(p)}
    return nn.Sequential(model, extra[layer]), x, y


def _masks(net: nn.Sequential) -> list[torch.Tensor]:
    """Record every dropout mask the net draws (output != 0; the linear outputs are never exactly zero)."""
    drawn: list[torch.Tensor] = []
    if isinstance(net[1], nn.Dropout):
        net[1].register_forward_hook(lambda m, a, out: drawn.append(out.detach() != 0))
    return drawn


def _loss_grad(net: nn.Sequential, x: torch.Tensor, y: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """d(scale * mse(net(x), y))/d(every parameter), on cleared buffers."""
    net.zero_grad(set_to_none=True)
    (scale * nn.functional.mse_loss(net(x), y)).backward()
    return _grads(net)


def layer_case(layer: str, mode: str, reseed: bool, n_examples: int, split: list[int], in_features: int,
               out_features: int, seed: int, dropout: float, bug: str | None = None) -> dict:
    """Full-batch gradient against size-weighted microbatch means for one layer, in one table row. `bug`: a
    measurement-level control (LAYER_BUGS); None in every real run."""
    net, x, y = _net(layer, n_examples, in_features, out_features, seed, dropout)
    net.train(mode == "train" and not (bug == LAYER_BUGS[0] and layer == "BatchNorm1d"))
    drawn = _masks(net)
    torch.manual_seed(seed)  # the generator dropout draws from, at a known state before the full batch
    full = _loss_grad(net, x, y)
    if reseed:
        torch.manual_seed(seed)
    bounds = [sum(split[:i]) for i in range(len(split) + 1)]  # e.g. [0, 3, 7]
    weighted = torch.zeros_like(full)
    for a, b in zip(bounds, bounds[1:]):
        weighted += _loss_grad(net, x[a:b], y[a:b], scale=(b - a) / n_examples)
    masks = "none"
    if drawn:  # drawn[0]: the full batch's (N, out) mask; the rest: one (b - a, out) mask per microbatch
        masks = "equal" if torch.equal(drawn[0], torch.cat(drawn[1:])) else "differ"
    diff = (weighted - full).abs().max().item()
    return {"layer": layer, "mode": mode, "reseeded": reseed, "masks": masks, "full_grad_norm": full.norm().item(),
            "weighted_grad_norm": weighted.norm().item(), "max_abs_diff_vs_full": diff,
            "rel_diff_vs_full": diff / full.abs().max().item()}


def layer_table(n_examples: int, split: list[int], in_features: int, out_features: int, seed: int,
                dropout: float, bug: str | None = None) -> pd.DataFrame:
    """Every case of CASES: does weighting microbatch means by size still reproduce the full batch?"""
    return pd.DataFrame([layer_case(layer, mode, reseed, n_examples, split, in_features, out_features, seed, dropout,
                                    bug) for layer, mode, reseed in CASES])


def measure_l2_layers(n_examples: int, split: list[int], in_features: int, out_features: int, seed: int,
                      nanogpt_steps: int, nanogpt_micro: int, dropout: float, equal_split: list[int] | None = None) -> dict:
    """L2's tables plus `layers`: the same weighting with BatchNorm and dropout after the linear layer."""
    out = measure_l2(n_examples, split, in_features, out_features, seed, nanogpt_steps, nanogpt_micro, equal_split)
    out["layers"] = layer_table(n_examples, split, in_features, out_features, seed, dropout)
    return out
