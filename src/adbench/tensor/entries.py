"""Long rows (matrix, row, col, hand, torch, abs_diff): how every T table sets a hand rule beside torch."""

from __future__ import annotations

import math

import torch


def entries(name: str, hand: torch.Tensor, ref: torch.Tensor | None = None) -> list[dict]:
    """Long rows (matrix, row, col, hand, torch, abs_diff) for a vector or matrix."""
    h2 = hand.reshape(hand.shape[0] if hand.dim() > 1 else 1, -1)
    r2 = None if ref is None else ref.detach().reshape(h2.shape)
    rows = []
    for i in range(h2.shape[0]):
        for j in range(h2.shape[1]):
            tv = math.nan if r2 is None else r2[i, j].item()
            rows.append({"matrix": name, "row": i, "col": j, "hand": h2[i, j].item(), "torch": tv,
                         "abs_diff": abs(h2[i, j].item() - tv)})
    return rows
