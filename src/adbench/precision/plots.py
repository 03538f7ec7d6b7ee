"""Figures of the precision family: fp16/bf16 representation error (P3) and swamping (P6)."""

from __future__ import annotations

import pandas as pd

from ..figures import COLORS, new_figure, svg_bytes


def plot_error_sweep(sweep: pd.DataFrame, landmarks: pd.DataFrame) -> dict:
    """Relative representation error |cast(x) - x| / |x| over many decades, fp16 beside bf16."""
    fig, ax = new_figure()
    for color, fmt in zip(COLORS, ("fp16", "bf16")):
        err = sweep[f"{fmt}_rel_error"]
        ax.loglog(sweep.x, err.where(err > 0), "-", color=color, lw=0.7, label=fmt)   # exact casts: no point
    fp16 = landmarks.set_index("format").loc["fp16"]
    marks = ((fp16.smallest_normal, "fp16 smallest normal"), (fp16.smallest_subnormal, "fp16 smallest subnormal"))
    for v, name in marks:
        ax.axvline(v, color="0.4", ls="--", lw=0.8)
        ax.text(v * 1.25, 2e-7, name, rotation=90, fontsize=8, color="0.3", va="bottom")
    ax.set_ylim(1e-7, 3)
    ax.set_xlabel("value x")
    ax.set_ylabel("|cast(x) − x| / |x|")
    ax.set_title("Relative error of a 16-bit cast")
    ax.legend(fontsize=8)
    return {"figure": svg_bytes(fig)}


def plot_swamping(trajectory: pd.DataFrame) -> dict:
    """Weight after k updates of +0.0003: pure fp16, fp32 master copy and exact arithmetic."""
    fig, (ax, drift) = new_figure(ncols=2, figsize=(9.6, 3.6))
    ax.plot(trajectory.step, trajectory.exact, "-", color="0.6", lw=3, label="exact")
    ax.plot(trajectory.step, trajectory.fp32_master, "-", color=COLORS[0], lw=1.2, label="fp32 master weight")
    ax.plot(trajectory.step, trajectory.fp16, "-", color=COLORS[1], lw=1.2, label="pure fp16 weight")
    ax.set_xlabel("update step")
    ax.set_ylabel("weight")
    ax.set_title("Small updates swamped by an fp16 weight")
    ax.legend(fontsize=8)
    drift.plot(trajectory.step, trajectory.fp32_master - trajectory.exact, "-", color=COLORS[0])
    drift.set_xlabel("update step")
    drift.set_ylabel("fp32 master − exact")
    drift.set_title("fp32 rounding accumulates too")
    drift.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    fig.subplots_adjust(wspace=0.35)
    return {"figure": svg_bytes(fig)}


def plot_precision(sweep: pd.DataFrame, landmarks: pd.DataFrame, trajectory: pd.DataFrame) -> dict:
    """Both precision figures from one job."""
    return {"error_sweep": plot_error_sweep(sweep, landmarks)["figure"],
            "swamping": plot_swamping(trajectory)["figure"]}
