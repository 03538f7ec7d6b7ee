"""Figures of the scalar family: the finite-difference valley (S5) and S9's raw timings."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures import COLORS, new_figure, svg_bytes


def plot_valley(sweep: pd.DataFrame, slopes: pd.DataFrame) -> dict:
    """Error vs h for forward and central differences, log-log, with fitted slopes."""
    fig, ax = new_figure()
    for color, method in zip(COLORS, ("forward", "central")):
        s = slopes.loc[slopes.method == method].iloc[0]
        err = sweep[f"{method}_err"].where(sweep[f"{method}_err"] > 0)
        ax.loglog(sweep.h, err, "o-", color=color, ms=4,
                  label=f"{method} difference (fitted slope {s.slope:.3f}, theory {s.theory})")
    lo, hi = slopes.h_min.iloc[0], slopes.h_max.iloc[0]
    ax.axvspan(lo, hi, color="0.9", zorder=0, label="slope fit range")
    ax.set_xlabel("step h")
    ax.set_ylabel("|estimate − tape gradient|")
    ax.set_title("Finite-difference error: rounding (small h, left) vs truncation (large h, right)")
    ax.legend(fontsize=8)
    return {"figure": svg_bytes(fig)}


def plot_timing(samples: pd.DataFrame) -> dict:
    """Per-call time of every round, per process run and candidate (log scale)."""
    fig, ax = new_figure()
    cands = list(dict.fromkeys(samples.candidate))
    procs = sorted(samples.process.unique())
    for ci, cand in enumerate(cands):
        for pi, proc in enumerate(procs):
            t = samples[(samples.candidate == cand) & (samples.process == proc)].per_call_us
            x = ci * (len(procs) + 1) + pi + np.linspace(-0.2, 0.2, len(t))
            ax.plot(x, t, "o", color=COLORS[ci], ms=3, alpha=0.8)
            ax.hlines(np.median(t), x.min() - 0.1, x.max() + 0.1, color="k", lw=1)
    ax.set_yscale("log")
    ax.set_xticks([ci * (len(procs) + 1) + pi for ci in range(len(cands)) for pi in range(len(procs))])
    ax.set_xticklabels([f"{c}\nrun {p}" for c in cands for p in procs], fontsize=8)
    ax.set_ylabel("µs per forward + backward")
    ax.set_title("Every timed round (dots) and per-process median (bar)")
    return {"figure": svg_bytes(fig)}
