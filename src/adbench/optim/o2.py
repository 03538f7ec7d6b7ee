"""O2 measurements: spectrum and stability ceiling of the quadratic, the ceiling demonstration, the grids."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ..tables import values_table
from . import quadratic as q

log = logging.getLogger(__name__)


def ceiling_demo(X, y, lam_max: float, steps: int, margins: list[float]) -> pd.DataFrame:
    """Gradient descent at (1 + m) * 2/lam_max for each margin m: below the ceiling shrinks, above grows."""
    rows = []
    for m in margins:
        lr = (1 + m) * 2 / lam_max
        losses = q.run("gd", {"lr": lr}, X, y, steps, eps=0.0)
        rows.append({"margin": m, "lr": lr, "factor_top": abs(1 - lr * lam_max),
                     "initial_loss": losses[0], "final_loss": losses[-1],
                     "diverged": bool(not np.isfinite(losses[-1]) or losses[-1] > losses[0])})
    return pd.DataFrame(rows)


def run_grids(X, y, grids: dict, steps: int, eps: float, floor: float, floor_rtol: float):
    """Every declared setting of every method: (grid table, best per method, best trajectories)."""
    grid_rows, best_rows, traj = [], [], {}
    for method, grid in grids.items():
        results = []
        for s in q.grid_settings(grid):
            losses = q.run(method, s, X, y, steps, eps)
            results.append((s, losses))
            grid_rows.append({"method": method, **s, "final_loss": losses[-1],
                              "finite": bool(np.isfinite(losses[-1]))})
        finite = [(s, l) for s, l in results if np.isfinite(l[-1])]
        s_best, l_best = min(finite, key=lambda r: r[1][-1])   # first of exact ties, in grid order
        at_floor = sum(abs(l[-1] - floor) <= floor_rtol * floor for _, l in finite)
        best_rows.append({"method": method, "settings_tried": len(results), "finite_runs": len(finite),
                          "at_noise_floor": at_floor, "best_final_loss": l_best[-1],
                          "best_setting": ", ".join(f"{k}={v:g}" for k, v in s_best.items()), **s_best})
        traj[method] = l_best
        log.info("%s: %d settings, best %.8g at %s", method, len(results), l_best[-1], s_best)
    trajectories = pd.DataFrame({"step": np.arange(steps + 1), **traj})
    return pd.DataFrame(grid_rows), pd.DataFrame(best_rows), trajectories


# measurement-level controls (claims/bugs.py): realistic bugs of the spectrum and of the floor
O2_BUGS = ("Hessian without its factor 2", "noise floor summed, not averaged")


def measure_o2(data: dict, steps: int, ceiling_margins: list[float], grids: dict, eps: float,
               floor_rtol: float, bug: str | None = None) -> dict:
    """O2: Hessian eigenvalues, condition number, ceiling 2/lam_max, the demonstration and four grids. `bug`: a
    measurement-level control (O2_BUGS); None in every real run."""
    X, y = q.make_problem(**data)
    lam_min, lam_max = np.linalg.eigvalsh(q.hessian(X, drop_two=bug == O2_BUGS[0]))      # ascending
    floor = q.noise_floor(X, y, summed=bug == O2_BUGS[1])
    demo = ceiling_demo(X, y, lam_max, steps, ceiling_margins)
    grid, best, traj = run_grids(X, y, grids, steps, eps, floor, floor_rtol)
    spectrum = pd.DataFrame([{"lambda_min": lam_min, "lambda_max": lam_max, "condition": lam_max / lam_min,
                              "ceiling": 2 / lam_max, "noise_floor": floor,
                              "loss_at_zero": q.loss(X, y, np.zeros(2))}])
    items = [("lambda_min", lam_min), ("lambda_max", lam_max), ("condition", lam_max / lam_min),
             ("ceiling", 2 / lam_max), ("noise_floor", floor),
             ("below_ceiling_diverged", int(demo.diverged[demo.margin < 0].sum())),
             ("above_ceiling_diverged", int(demo.diverged[demo.margin > 0].sum()))]
    for b in best.itertuples(index=False):
        items += [(f"{b.method}_settings", b.settings_tried), (f"{b.method}_finite", b.finite_runs),
                  (f"{b.method}_best_loss", b.best_final_loss)]
        items += [(f"{b.method}_best_{k}", getattr(b, k)) for k in grids[b.method]]
    return {"values": values_table("O2", items), "spectrum": spectrum, "ceiling": demo, "grid": grid,
            "best": best, "trajectories": traj}
