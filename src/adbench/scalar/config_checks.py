"""The S family's cross-key configuration checks: the micrograd MLP's sizes, the directional check's indices,
the finite-difference sweep and the interval its slope is fitted over."""

from typing import Iterator

from ..config import clash, outside

CONFORMING = [
    # S10: micrograd MLP, layer sizes [n_in, ..., n_out], loss sum over examples of (out - target)^2
    ("scalar.mlp.inputs", "cols", "==", "scalar.mlp.sizes", "first", "each input row feeds the sizes[0] inputs"),
    ("scalar.mlp.sizes", "last", "==", 1, None, "the loss (out - target)^2 needs one output per example"),
    ("scalar.mlp.targets", "len", "==", "scalar.mlp.inputs", "rows", "one target per input row"),
]

IN_RANGE = [
    ("scalar.directional.control_coordinate", 1, "scalar.directional.cols", lambda c: c - 1,
     "a coordinate of x other than 0, which the control checks is left untouched"),
    ("scalar.directional.orthogonal_to", 0, "scalar.directional.directions", lambda n: n - 1,
     "the blind-spot error is built orthogonal to one of the checked directions"),
]

# (key or keys read as one sequence, order, why)
MONOTONIC = [
    ("scalar.sweep_h", "strictly monotonic",
     "S5 draws the sweep as one line in list order and reads a step's error by its value, so a repeat is ambiguous"),
    ("scalar.slope_fit_h", "increasing", "the closed interval [low, high] of steps the slope is fitted over"),
]


def checks(cfg: dict) -> Iterator[str]:
    """S5 fits a log-log line to the sweep's steps inside slope_fit_h (closed, with S5's 1e-9 slack)."""
    s = cfg["scalar"]
    lo, hi = s["slope_fit_h"]
    if lo > hi:
        return  # an interval out of order: MONOTONIC names it
    inside = sum(lo * (1 - 1e-9) <= h <= hi * (1 + 1e-9) for h in s["sweep_h"])
    if outside(inside, 2, None):
        yield clash([("scalar.slope_fit_h", s["slope_fit_h"]), ("scalar.sweep_h", s["sweep_h"])],
                    f"the interval holds {inside} of the sweep's steps, fewer than the 2 a fitted slope needs")
