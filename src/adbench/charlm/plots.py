"""C1 figures: training curves, held-out bars with baselines, per-group gradient norms."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures import COLORS, new_figure, svg_bytes

ORDER = ["correct", "no_zero_grad", "unshifted_targets", "loss_scaled", "detached_positions",
         "no_zero_grad_clipped"]


def _variants(df: pd.DataFrame) -> list[str]:
    return [v for v in ORDER if v in set(df["variant"])] + sorted(set(df["variant"]) - set(ORDER))


def plot_curves(curves: pd.DataFrame) -> bytes:
    """Training loss of every variant (log y: the unshifted run falls to ~1e-3)."""
    fig, ax = new_figure()
    for i, v in enumerate(_variants(curves)):
        c = curves[curves.variant == v].sort_values("step")
        smooth = c["train_loss"].rolling(10, min_periods=1).mean()  # single batches are noisy
        ax.plot(c["step"], smooth, color=COLORS[i], lw=1.4, label=v,
                ls="--" if v == "loss_scaled" else "-")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss, nats (10-step mean)")
    ax.legend(fontsize=8)
    return svg_bytes(fig)


def plot_heldout(heldout: pd.DataFrame, baselines: pd.DataFrame) -> bytes:
    """Held-out loss per variant with the uniform and unigram baselines as lines."""
    fig, ax = new_figure()
    vs = _variants(heldout)
    h = heldout.set_index("variant").loc[vs, "heldout_loss"]
    ax.bar(range(len(vs)), h.to_numpy(), color=[COLORS[i] for i in range(len(vs))])
    for i, val in enumerate(h):
        ax.text(i, val, f"{val:.3f}", ha="center", va="bottom", fontsize=8)
    for (name, val), ls in zip(baselines.set_index("baseline")["heldout_loss"].items(), ("--", ":")):
        ax.axhline(val, color="black", ls=ls, lw=1, label=f"{name} baseline {val:.3f}")
    ax.set_xticks(range(len(vs)), [v.replace("_", "\n") for v in vs], fontsize=8)
    ax.set_ylabel("held-out loss, nats per character")
    ax.set_ylim(0, 1.25 * max(h.max(), baselines["heldout_loss"].max()))  # headroom: legend above the bars
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    return svg_bytes(fig)


def plot_grad_norms(norms: pd.DataFrame) -> bytes:
    """Gradient norm per group over steps, one panel per variant (symlog y so zero shows)."""
    vs = _variants(norms)
    ncols = min(3, len(vs))
    nrows = -(-len(vs) // ncols)
    fig, axes = new_figure(nrows=nrows, ncols=ncols, figsize=(3.3 * ncols, 2.9 * nrows), sharey=True,
                           squeeze=False)
    for ax in axes.flat[len(vs):]:
        ax.set_visible(False)
    groups = [g for g in norms["group"].drop_duplicates() if g != "total"]
    for ax, v in zip(axes.flat, vs):
        d = norms[norms.variant == v]
        for j, g in enumerate(groups):
            s = d[d.group == g].sort_values("step")
            ax.plot(s["step"], s["grad_norm"], color=COLORS[j % len(COLORS)], lw=1.8 if "table" in g else 1,
                    label=g, marker="o" if g == "position_table" else None, ms=2.5)
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_title(v, fontsize=9)
        ax.set_xlabel("step")
    for row in axes:
        row[0].set_ylabel("grad norm before clipping")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, fontsize=8, loc="upper center", ncol=min(len(groups), 7), bbox_to_anchor=(0.5, 0.0))
    return svg_bytes(fig)


def plot_c1(curves: pd.DataFrame, grad_norms: pd.DataFrame, heldout: pd.DataFrame,
            baselines: pd.DataFrame) -> dict:
    """The three C1 figures as SVG bytes."""
    return {"curves": plot_curves(curves), "heldout": plot_heldout(heldout, baselines),
            "grad_norms": plot_grad_norms(grad_norms)}
