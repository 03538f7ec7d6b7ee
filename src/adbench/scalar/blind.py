"""S7's blind spots: how many of k random directions see a given gradient error, and a check through fresh
dropout masks.

Doc 000 ("one checked coordinate left seven places to be wrong"): a check along v measures g·v, so a
gradient error e with e·v = 0 is invisible along v but seen along the other directions, and an error smaller
than the central difference's own error hides in every direction. The k directions here are fresh draws, each
checked with its own central difference; whether a check "sees" an error is judged (scalar/claims_checks.py)
against the correct gradient's check error along S7's documented directions: another set of draws, another
set of central differences. A check of a function that draws a new dropout mask at each of its two
evaluation points measures the mask change too; reseeding before every evaluation removes that.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .numdiff import central_difference, directional_loss

# measurement-level controls (claims/bugs.py): the blind-spot checks' central difference divided by h, not 2h
BLIND_BUGS = ("blind spots: slope over h",)


def corruptions(cols: int, vs: list, coordinate: int, delta: float, orthogonal_to: int,
                small_delta: float) -> dict[str, np.ndarray]:
    """Error vectors (cols,) added to the gradient: none, S7's coordinate one, one of the same size
    orthogonal to direction `orthogonal_to`, and a small one (`small_delta`) on the same coordinate."""
    unit = np.zeros(cols)
    unit[coordinate] = 1.0
    v = vs[orthogonal_to].numpy()
    perp = unit - (unit @ v) * v               # the coordinate error with its component along v removed
    return {"none": np.zeros(cols), "coordinate": delta * unit, "orthogonal": delta * perp / np.linalg.norm(perp),
            "small": small_delta * unit}


def blind_spots(A: np.ndarray, x: np.ndarray, grad, vs: list, h: float, coordinate: int, delta: float,
                orthogonal_to: int, small_delta: float, bug: str | None = None) -> pd.DataFrame:
    """Per corruption and direction: the check's reading |slope - (g + e)·v|, beside the correct gradient's along
    the same slope. `vs`: k fresh unit directions (cols,); `grad`: torch's gradient (cols,)."""
    g = grad.numpy()
    over_h = bug == BLIND_BUGS[0]
    slopes = [central_difference(lambda t, v=v.numpy(): directional_loss(A, x + t * v), 0.0, h, over_h=over_h)
              for v in vs]
    rows = []
    for name, err in corruptions(len(g), vs, coordinate, delta, orthogonal_to, small_delta).items():
        for d, (vt, slope) in enumerate(zip(vs, slopes)):
            v = vt.numpy()
            rows.append({"corruption": name, "coordinate": coordinate, "orthogonal_to": orthogonal_to,
                         "corruption_norm": float(np.linalg.norm(err)), "direction": d,
                         "error_along_v": float(err @ v), "numerical_slope": slope,
                         "grad_dot_v": float((g + err) @ v), "abs_error": abs(slope - float((g + err) @ v)),
                         "correct_abs_error": abs(slope - float(g @ v))})
    return pd.DataFrame(rows)


def dropout_check(A: np.ndarray, x: np.ndarray, vs: list, h: float, p: float, seed: int,
                  always_reseed: bool = False) -> pd.DataFrame:
    """L(x) = sum(tanh(dropout(A x))²) checked along each direction, masks fresh or reseeded per evaluation.
    `always_reseed`: a measurement-level control only, the reseed applied in the fresh regime too."""
    import torch
    import torch.nn.functional as F

    At = torch.tensor(A)

    def loss(z: torch.Tensor) -> torch.Tensor:
        return (torch.tanh(F.dropout(At @ z, p=p, training=True)) ** 2).sum()   # (rows,) -> ()

    rows = []
    with torch.random.fork_rng(devices=[]):     # the global generator dropout draws from, restored after
        torch.manual_seed(seed)
        xt = torch.tensor(x, requires_grad=True)
        loss(xt).backward()                     # the gradient for the mask of `seed`
        for masks in ("fresh", "reseeded"):     # fresh: the generator's next draws, a new mask each time
            for d, v in enumerate(vs):
                def along(t: float) -> float:
                    if masks == "reseeded" or always_reseed:
                        torch.manual_seed(seed)  # the gradient's mask again at every evaluation
                    return loss(xt.detach() + t * v).item()

                slope, gv = central_difference(along, 0.0, h), float(xt.grad @ v)
                rows.append({"masks": masks, "p": p, "direction": d, "numerical_slope": slope,
                             "grad_dot_v": gv, "abs_error": abs(slope - gv)})
    return pd.DataFrame(rows)
