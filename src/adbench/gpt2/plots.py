"""Figures of the GPT-2 probes: residual-state gradients (G2), surprise (G5), per-block norms (G8)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures import COLORS, new_figure, svg_bytes


def states_figure(states: pd.DataFrame, source: str) -> bytes:
    """G2 bar chart: last-token gradient norm at each residual state."""
    fig, ax = new_figure()
    ax.bar(states.state, states.grad_norm_last_token, color=COLORS[0])
    ax.set_xticks(states.state)
    ax.set_xlabel("residual state (0 = embeddings, last = after the final layer norm)")
    ax.set_ylabel("‖dL/dh‖ at the last prompt token")
    ax.set_title(f"Gradient reaching each residual state ({source} model)")
    return svg_bytes(fig)


def surprise_figure(surprise: pd.DataFrame, source: str) -> bytes:
    """G5: histogram of per-token surprise and the share of loss carried by the worst tokens."""
    s = np.sort(surprise.surprise_nats.to_numpy())[::-1]  # most surprising first
    fig, (ax1, ax2) = new_figure(ncols=2, figsize=(9.6, 3.8))
    ax1.hist(s, bins=40, color=COLORS[0])
    ax1.axvline(s.mean(), color=COLORS[1], label=f"mean {s.mean():.3f}")
    ax1.axvline(np.median(s), color=COLORS[2], linestyle="--", label=f"median {np.median(s):.3f}")
    ax1.set_xlabel("surprise −ln p (nats)")
    ax1.set_ylabel("tokens")
    ax1.legend()
    frac = np.arange(1, len(s) + 1) / len(s)
    ax2.plot(100 * frac, 100 * np.cumsum(s) / s.sum(), color=COLORS[0])
    ax2.plot([0, 100], [0, 100], color="grey", linewidth=0.8, linestyle=":")
    ax2.set_xlabel("most surprising tokens (% of tokens)")
    ax2.set_ylabel("share of total loss (%)")
    fig.suptitle(f"Per-token surprise over {len(s)} predictions ({source} model)")
    return svg_bytes(fig)


def blocks_figure(blocks: pd.DataFrame, source: str) -> bytes:
    """G8: gradient norm of every block."""
    fig, ax = new_figure()
    ax.bar(blocks.block, blocks.grad_norm, color=COLORS[2])
    if blocks.grad_norm.max() > 100 * blocks.grad_norm.min():  # log axis only when the spread needs it
        ax.set_yscale("log")
    ax.set_xticks(blocks.block)
    ax.set_xlabel("transformer block")
    ax.set_ylabel("gradient norm (all block parameters)")
    ax.set_title(f"Per-block gradient norms on one sequence ({source} model)")
    return svg_bytes(fig)


def gpt2_figures(states: pd.DataFrame, surprise: pd.DataFrame, blocks: pd.DataFrame, model: dict) -> dict:
    """All three figures (the plot rule's outputs); `model` is gpt2_model's record, which names the weights."""
    model_source = model["model_source"]
    return {"states": states_figure(states, model_source), "surprise": surprise_figure(surprise, model_source),
            "blocks": blocks_figure(blocks, model_source)}
