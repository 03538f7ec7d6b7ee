"""Figures of the depth family: D1's scalar chains and D2's tanh stacks."""

from __future__ import annotations

import pandas as pd

from ..figures import COLORS, new_figure, svg_bytes


def plot_chains(chains: pd.DataFrame, probe: pd.DataFrame) -> dict:
    """|dL/dx| against depth for every chain, log scale: tape as markers, torch as a line."""
    fig, ax = new_figure()
    for color, (name, c) in zip(COLORS, chains.groupby("chain", sort=False)):
        ax.semilogy(c.depth, c.torch_dL_dx.abs(), "-", color=color, lw=1.2)
        ax.semilogy(c.depth, c.tape_dL_dx.abs(), "o", color=color, ms=3, markevery=3,
                    label=name.replace("_w", ", w = "))
    sub = float(probe.fp16_smallest_subnormal.iloc[0])
    ax.axhline(sub, color="0.4", ls="--", lw=0.8)
    ax.text(chains.depth.max(), sub * 10, "fp16 smallest subnormal", ha="right", fontsize=8, color="0.3")
    # the saturated chain keeps falling (to ~1e-150 at depth 100); show the decades that matter
    ax.set_ylim(1e-50, chains.tape_dL_dx.abs().max() * 1e3)
    ax.set_xlabel("depth (multiply + activation repetitions)")
    ax.set_ylabel("|dL/dx| reaching the input")
    ax.set_title("Products of local slopes from x = 0.5 (dots: tape, lines: torch)")
    ax.legend(fontsize=8, loc="lower right")
    return {"figure": svg_bytes(fig)}


def plot_stacks(grid: pd.DataFrame, cases: list[dict]) -> dict:
    """Per-layer gradient relative to the last layer: plain cases (left), residual stacks (right)."""
    fig, (left, right) = new_figure(ncols=2, figsize=(9.6, 3.8), sharey=True)
    deepest = int(grid.depth.max())
    plain = [c for c in cases if not c["residual"]]
    for color, c in zip(COLORS, plain):
        s = grid[(grid.depth == c["depth"]) & (grid.scale == c["scale"]) & ~grid.residual]
        left.semilogy(s.layer, s.rel_grad, "-", color=color, label=f"{c['depth']} layers, scale {c['scale']:g}")
        left.fill_between(s.layer, s.rel_grad_min, s.rel_grad_max, color=color, alpha=0.2, lw=0)
    left.set_title("plain tanh stacks")
    for color, scale in zip(COLORS, sorted(grid.scale.unique())):
        s = grid[(grid.depth == deepest) & (grid.scale == scale) & grid.residual]
        right.semilogy(s.layer, s.rel_grad, "-", color=color, label=f"scale {scale:g}")
    right.set_title(f"residual x + layer(x), {deepest} layers")
    for ax in (left, right):
        ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
        ax.set_xlabel("layer (1 = nearest the input)")
        ax.legend(fontsize=8)
    left.set_ylabel("gradient norm / last layer's")
    return {"figure": svg_bytes(fig)}



def plot_depth(chains: pd.DataFrame, probe: pd.DataFrame, grid: pd.DataFrame, cases: list[dict]) -> dict:
    """Both depth figures from one job (each costs far less than starting the interpreter)."""
    return {"chains": plot_chains(chains, probe)["figure"], "stacks": plot_stacks(grid, cases)["figure"]}
