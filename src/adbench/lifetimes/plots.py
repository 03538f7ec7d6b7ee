"""Figures of the lifetimes family: L6 bytes and time (plain vs checkpointed), L7 bytes vs sequence length."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures import COLORS, new_figure, svg_bytes

# accounting column -> label, in the order they are drawn
ACCOUNTS = {"hook_mib": "per hook\ncall", "unique_storage_mib": "unique\nstorages",
            "unique_activation_mib": "unique non-\nparameter storages",
            "allocator_live_after_forward_mib": "allocator: live\nafter forward"}
MODE_LABELS = {"plain": "plain", "checkpoint_sequential": "checkpoint_sequential"}


def plot_checkpoint(accounting: pd.DataFrame, samples: pd.DataFrame) -> dict:
    """Left: MiB by accounting, plain vs checkpointed. Right: per-round times by process run."""
    fig, (ax, bx) = new_figure(ncols=2, figsize=(10, 4))
    acc = accounting.set_index("mode")
    width = 0.8 / len(MODE_LABELS)
    for mi, (mode, label) in enumerate(MODE_LABELS.items()):
        vals = [acc.loc[mode, c] for c in ACCOUNTS]
        xs = np.arange(len(ACCOUNTS)) + (mi - 0.5) * width
        ax.bar(xs, vals, width, color=COLORS[mi], label=label)
        for x, v in zip(xs, vals):
            ax.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(ACCOUNTS)))
    ax.set_xticklabels(list(ACCOUNTS.values()), fontsize=7)
    ax.set_ylabel("MiB")
    ax.set_title("Saved-tensor payload by accounting")
    ax.legend(fontsize=8)
    procs = sorted(samples.process.unique())
    for ci, cand in enumerate(("plain", "checkpointed")):
        for pi, proc in enumerate(procs):
            t = samples[(samples.candidate == cand) & (samples.process == proc)].per_call_us / 1e3
            x = ci * (len(procs) + 1) + pi + np.linspace(-0.2, 0.2, len(t))
            bx.plot(x, t, "o", color=COLORS[ci], ms=3, alpha=0.8)
            bx.hlines(np.median(t), x.min() - 0.1, x.max() + 0.1, color="k", lw=1)
    bx.set_xticks([ci * (len(procs) + 1) + pi for ci in range(2) for pi in range(len(procs))])
    bx.set_xticklabels([f"{c}\nrun {p}" for c in ("plain", "ckpt") for p in procs], fontsize=7)
    bx.set_ylabel("ms per forward + backward")
    bx.set_ylim(bottom=0)
    bx.set_title("Every timed round (dots), per-run median (bar)")
    return {"figure": svg_bytes(fig)}


def plot_shapes(sweep: pd.DataFrame) -> dict:
    """Bytes vs sequence length, log-log: residual states grow like T, attention scores like T²."""
    fig, ax = new_figure()
    curves = [("all_residual_states_bytes", "all residual states, B·T·D each (∝ T)", "o-"),
              ("scores_all_layers_bytes", "attention scores, B·H·T·T per layer, all layers (∝ T²)", "s-")]
    for color, (col, label, style) in zip(COLORS, curves):
        ax.loglog(sweep.seq_len, sweep[col] / 2 ** 20, style, color=color, ms=4, label=label)
    ax.set_xlabel("sequence length T (batch 1, fp32)")
    ax.set_ylabel("MiB")
    ax.set_title("GPT-2 small activation bytes from shapes alone")
    ax.legend(fontsize=8)
    return {"figure": svg_bytes(fig)}
