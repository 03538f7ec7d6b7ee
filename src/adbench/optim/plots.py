"""Figures of the optim family: XOR loss curves (O1), best trajectories and grid heat maps (O2)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures import COLORS, new_figure, svg_bytes


def plot_o1_curves(gd_curves: pd.DataFrame, adam_curves: pd.DataFrame, seeds: pd.DataFrame) -> dict:
    """Per-step loss of every gradient-descent seed, stuck seeds highlighted, with Adam's runs of them."""
    fig, ax = new_figure(figsize=(6.8, 4.0))
    stuck = set(seeds.seed[seeds.gd_stuck])
    rescued = stuck & set(seeds.seed[~seeds.adam_stuck])
    for seed, c in gd_curves.groupby("seed"):
        is_stuck = seed in stuck
        ax.plot(c.step, c.loss, lw=1.4 if is_stuck else 0.8, alpha=1 if is_stuck else 0.5,
                color=COLORS[1] if is_stuck else COLORS[0],
                label=("gradient descent, stuck seed" if is_stuck else "gradient descent, solved seed")
                if seed == min(stuck if is_stuck else set(gd_curves.seed) - stuck) else None)
        if is_stuck:
            ax.annotate(f"seed {seed}", (c.step.iloc[-1], c.loss.iloc[-1]), fontsize=8,
                        xytext=(-40, 4), textcoords="offset points", color=COLORS[1])
    for i, seed in enumerate(sorted(rescued)):
        c = adam_curves[adam_curves.seed == seed]
        ax.plot(c.step, c.loss, "--", color=COLORS[2], lw=1.6, label="Adam on a stuck seed" if i == 0 else None)
        ax.annotate(f"Adam, seed {seed}", (c.step.iloc[-1], c.loss.iloc[-1]), fontsize=8,
                    xytext=(-70, 6 + 11 * i), textcoords="offset points", color=COLORS[2])
    ax.set_yscale("log")
    ax.set_xlabel("full-batch step")
    ax.set_ylabel("sum of squared errors (log)")
    ax.set_title("XOR, 2-4-1 tanh MLP on the scalar tape")
    ax.legend(fontsize=8, loc="lower left")
    return {"figure": svg_bytes(fig)}


def plot_o2_trajectories(trajectories: pd.DataFrame, spectrum: pd.DataFrame, best: pd.DataFrame) -> dict:
    """Loss per step of the best setting of each method, log scale, against the noise floor."""
    fig, ax = new_figure(figsize=(6.8, 4.0))
    labels = dict(zip(best.method, best.best_setting))
    for color, method in zip(COLORS, [c for c in trajectories.columns if c != "step"]):
        ax.plot(trajectories.step, trajectories[method], color=color, lw=1.3,
                label=f"{method} ({labels.get(method, '')})")
    ax.axhline(spectrum.noise_floor.iloc[0], color="k", ls=":", lw=1, label="noise floor (least-squares residual)")
    ax.set_yscale("log")
    ax.set_xlabel("full-gradient step")
    ax.set_ylabel("mean squared error (log)")
    ax.set_title("Best declared setting of each method, from w = 0")
    ax.legend(fontsize=8)
    return {"figure": svg_bytes(fig)}


def _grid_matrix(g: pd.DataFrame, method: str):
    """(matrix of log10 final loss, row labels, column labels) with lr along the columns."""
    g = g[g.method == method]
    other = [c for c in ("momentum", "decay", "beta1", "beta2") if g[c].notna().any()] if len(g) else []
    lrs = sorted(g.lr.unique())
    keys = sorted({tuple(r) for r in g[other].itertuples(index=False)}) if other else [()]
    mat = np.full((len(keys), len(lrs)), np.nan)
    for r in g.itertuples(index=False):
        key = tuple(getattr(r, c) for c in other)
        mat[keys.index(key), lrs.index(r.lr)] = np.log10(r.final_loss) if np.isfinite(r.final_loss) else np.inf
    rows = [", ".join(f"{c}={v:g}" for c, v in zip(other, k)) or "lr only" for k in keys]
    return mat, rows, [f"{lr:.0e}" for lr in lrs]


def plot_o2_grids(grid: pd.DataFrame) -> dict:
    """Heat map of log10(final loss) for every declared setting of each method; × marks non-finite runs."""
    grid = grid.reindex(columns=["method", "lr", "momentum", "decay", "beta1", "beta2", "final_loss"])
    methods = list(dict.fromkeys(grid.method))
    finite = grid.final_loss[np.isfinite(grid.final_loss)]
    vmin, vmax = np.log10(finite.min()), np.log10(finite.max())
    mats = {m: _grid_matrix(grid, m) for m in methods}
    heights = [len(mats[m][1]) for m in methods]
    fig, axes = new_figure(nrows=len(methods), figsize=(7.2, 0.9 + 0.42 * sum(heights) + 0.55 * len(methods)),
                           gridspec_kw={"height_ratios": heights, "hspace": 0.9})
    axes = np.atleast_1d(axes)
    for ax, method in zip(axes, methods):
        mat, rows, cols = mats[method]
        im = ax.imshow(np.where(np.isfinite(mat), mat, np.nan), aspect="auto", cmap="viridis", vmin=vmin, vmax=vmax)
        for i, j in np.ndindex(mat.shape):
            txt, color = ("×", "red") if np.isinf(mat[i, j]) else (f"{10 ** mat[i, j]:.1e}", "white"
                                                                  if mat[i, j] < (vmin + vmax) / 2 else "black")
            ax.text(j, i, txt, ha="center", va="center", color=color, fontsize=6)
        ax.set_xticks(range(len(cols)), cols, fontsize=7)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        ax.set_title(method, fontsize=9, loc="left", pad=3)
        ax.grid(False)
    axes[-1].set_xlabel("learning rate")
    fig.colorbar(im, ax=list(axes), label="log10 final loss (× = not finite)", shrink=0.8)
    return {"figure": svg_bytes(fig)}


def plot_o2(trajectories: pd.DataFrame, spectrum: pd.DataFrame, best: pd.DataFrame, grid: pd.DataFrame) -> dict:
    """Both O2 figures from one job."""
    return {"trajectories_figure": plot_o2_trajectories(trajectories, spectrum, best)["figure"],
            "grids_figure": plot_o2_grids(grid)["figure"]}
