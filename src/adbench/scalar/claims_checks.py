"""The S family's conclusions about directional gradient checks (S7, issue 28): what one direction cannot see
(an orthogonal error, an error below the check's own), a check through fresh dropout masks, ReLU's kink, and
four mutated backward rules. Listed in family.py's `claims`, which the registry reads.
"""

from __future__ import annotations

import numpy as np

from ..claims import FAR, Flip, flag, g, judged, relation, row, sources, times_at_least, truthy

# abs_error compares the central difference along v with torch's gradient plus the corruption; correct_abs_error
# with torch's gradient alone: the corrupted and the correct check share the central difference
sources("S7/blind_spots", {"corruption": "input", "coordinate": "input", "orthogonal_to": "input",
                           "corruption_norm": "input", "direction": "input", "error_along_v": "input",
                           "numerical_slope": "directional difference", "grad_dot_v": "torch gradient + corruption",
                           "abs_error": "directional difference, torch gradient + corruption",
                           "correct_abs_error": "directional difference, torch gradient"})
sources("S7/dropout", {"masks": "input", "p": "input", "direction": "input",
                       "numerical_slope": "directional difference through dropout",
                       "grad_dot_v": "torch gradient through dropout",
                       "abs_error": "directional difference through dropout, torch gradient through dropout"})
sources("S7/relu_kink", {"x": "input", "straddles_kink": "input", "torch_backward": "torch autograd",
                         "central_difference": "central difference", "abs_diff": "torch autograd, central difference"})
sources("S7/mutations", {"rule": "input", "direction": "input", "numerical_slope": "central difference",
                         "grad_dot_v": "custom backward rule", "abs_error": "central difference, custom backward rule"})


# ---- S7: blind spots of a directional check -----------------------------------------------------------------
def _spots(t, corruption: str):
    d = t["S7/blind_spots"]
    return d[d.corruption == corruption]


def _noise(t) -> float:
    """The check's own error: the largest error of the correct gradient along any direction."""
    return float(t["S7/blind_spots"].correct_abs_error.max())


def _own(t):
    d = _spots(t, "orthogonal")
    return d[d.direction == d.orthogonal_to].iloc[0]


@relation("S7/blind_spots", edge=Flip("S7/blind_spots", lambda t: {"corruption": "orthogonal",
                                                                   "direction": int(_own(t).direction)}, "abs_error",
                                      holding=lambda t: _own(t).abs_error, failing=lambda t: 10 * _noise(t), log=True))
def orthogonal_error_invisible(t):
    """An error orthogonal to direction v reads, along v, no more than the correct gradient's check error; along
    every other direction it reads far above it."""
    d, own, noise = _spots(t, "orthogonal"), _own(t), _noise(t)
    others = d[d.direction != d.orthogonal_to]
    seen = float(others.abs_error.min()) if len(others) else np.nan
    return judged(f"error of norm {g(own.corruption_norm)} orthogonal to direction {int(own.orthogonal_to)}: "
                  f"check error there {g(own.abs_error)}, elsewhere at least {g(seen)}; the correct gradient's "
                  f"largest {g(noise)}",
                  flag(len(others) > 0, "directions not orthogonal to the error measured"),
                  times_at_least(noise, own.abs_error, 1, "along the orthogonal direction: within the check's noise"),
                  times_at_least(seen, noise, FAR, f"along the others: at least x{FAR:g} the noise"))


def _shift_ratio(d) -> np.ndarray:
    """How far the corruption moved each direction's check error, in units of that direction's own error."""
    return (d.abs_error - d.correct_abs_error).abs().to_numpy(float) / d.correct_abs_error.to_numpy(float)


def _most_shifted(t) -> dict:
    d = _spots(t, "small")
    return {"corruption": "small", "direction": int(d.direction.iloc[int(np.argmax(_shift_ratio(d)))])}


def _small_row(t):
    return row(_spots(t, "small"), "direction", _most_shifted(t)["direction"])


@relation("S7/blind_spots", edge=Flip("S7/blind_spots", _most_shifted, "abs_error",
                                      holding=lambda t: _small_row(t).abs_error,
                                      failing=lambda t: 3 * _small_row(t).correct_abs_error))
def small_error_below_noise(t):
    """An error below the check's own error moves each direction's reading by less than that error: no check
    along any direction can tell the corrupted gradient from the correct one."""
    d = _spots(t, "small")
    if d.error_along_v.abs().max() >= d.correct_abs_error.min():
        raise ValueError("scalar.directional.small_delta is not below the check's own error")
    ratio = _shift_ratio(d)
    return judged("shift of the check error / the check's own error per direction: "
                  + ", ".join(f"{int(k)}: {g(r)}" for k, r in zip(d.direction, ratio)),
                  flag(len(d) > 0, "directions measured"),
                  *(times_at_least(1.0, r, 1, f"direction {int(k)}: the shift below the check's own error")
                    for k, r in zip(d.direction, ratio)))


def _masks(t, kind: str):
    d = t["S7/dropout"]
    return d[d.masks == kind]


def _reseeded_worst(t) -> dict:
    d = _masks(t, "reseeded")
    return {"masks": "reseeded", "direction": int(d.loc[d.abs_error.idxmax(), "direction"])}


# reseeded, the check is the deterministic one again: within an order of magnitude of its noise there
RESEED_ROOM = 10.0


@relation("S7/dropout", "S7/directions",
          edge=Flip("S7/dropout", _reseeded_worst, "abs_error", holding=lambda t: _masks(t, "reseeded").abs_error.max(),
                    failing=lambda t: 100 * RESEED_ROOM * t["S7/directions"].abs_error.max(), log=True))
def fresh_dropout_breaks_check(t):
    """Fresh masks at x + hv and x - hv: the check misses g.v by more than g.v itself; reseeded before each
    evaluation it is back within x10 of the deterministic check's error."""
    fresh, same = _masks(t, "fresh"), _masks(t, "reseeded")
    rel = (fresh.abs_error / fresh.grad_dot_v.abs()).to_numpy(float)
    noise = float(t["S7/directions"].abs_error.max())
    return judged(f"fresh masks: relative check error at least {g(rel.min())}; reseeded: largest error "
                  f"{g(same.abs_error.max())} (deterministic check's largest {g(noise)})",
                  flag(len(fresh) > 0 and len(same) > 0, "both mask regimes measured"),
                  *(times_at_least(r, 1.0, 1, f"fresh, direction {int(k)}: error above |g.v|")
                    for k, r in zip(fresh.direction, rel)),
                  times_at_least(RESEED_ROOM * noise, same.abs_error.max(), 1,
                                 f"reseeded: within x{RESEED_ROOM:g} the deterministic check's error"))


# a central difference of a piecewise-linear function: no truncation, rounding eps/h ~ 2e-11 at h = 1e-5;
# 1e-9 is fifty times that ("agree"), and a disagreement must stand a hundred times above it
KINK_AGREE = 1e-9


def _kink(t):
    d = t["S7/relu_kink"]
    at = d.straddles_kink.map(truthy)
    return d[at], d[~at]


@relation("S7/relu_kink", edge=Flip("S7/relu_kink", lambda t: {"x": _kink(t)[0].x.iloc[0]}, "central_difference",
                                    holding=lambda t: _kink(t)[0].central_difference.iloc[0],
                                    failing=lambda t: _kink(t)[0].torch_backward.iloc[0] + KINK_AGREE, log=True))
def relu_kink_convention(t):
    """At the kink torch's backward value (a subgradient between the one-sided slopes) and a straddling central
    difference disagree far beyond the difference's error; away from it they agree."""
    kink, off = _kink(t)
    if kink.empty:
        raise ValueError("no point of scalar.directional.relu_at straddles ReLU's kink")
    lo, hi = float(off.torch_backward.min()), float(off.torch_backward.max())
    gap = (kink.torch_backward - kink.central_difference).abs()
    return judged(f"at the kink torch {kink.torch_backward.tolist()} vs central difference "
                  f"{kink.central_difference.tolist()}; away from it largest gap {g(off.abs_diff.max())}",
                  flag(len(off) > 0, "points away from the kink measured"),
                  flag(bool(kink.torch_backward.between(lo, hi).all()),
                       "torch's kink value between the one-sided slopes"),
                  *(times_at_least(d, FAR * KINK_AGREE, 1, f"x = {x:g}: disagreement far beyond {KINK_AGREE:g}")
                    for x, d in zip(kink.x, gap)),
                  times_at_least(KINK_AGREE, off.abs_diff.max(), 1, f"off the kink: agreement within {KINK_AGREE:g}"))


# the central difference at h = 1e-5 is good to ~1e-10 relative (h^2 truncation, eps/h rounding); a caught bug is an
# O(1) error: 1e-6 sits four orders from each
CAUGHT = 1e-6
BUGS = ("dropped transpose", "overwrite", "flipped sign", "wrong scale")


def _rel_errors(t):
    d = t["S7/mutations"]
    rel = d.abs_error / d.numerical_slope.abs().clip(lower=np.finfo(float).tiny)
    return d.assign(rel=rel)


def _correct_worst(t):
    """The correct rule's row with the largest relative error."""
    d = _rel_errors(t)
    c = d[d.rule == "correct"]
    return c.loc[c.rel.idxmax()]


@relation("S7/mutations", edge=Flip("S7/mutations", lambda t: {"rule": "correct",
                                                              "direction": int(_correct_worst(t).direction)},
                                    "abs_error", holding=lambda t: _correct_worst(t).abs_error,
                                    failing=lambda t: 100 * CAUGHT * abs(_correct_worst(t).numerical_slope), log=True))
def check_catches_four_bugs(t):
    """The central difference of the plain forward against g.v from each hand-written backward rule: the correct
    rule within 1e-6 relative along every direction, each bug beyond it along some direction."""
    d = _rel_errors(t)
    worst = d.groupby("rule").rel.max()
    return judged("largest relative check error per rule: " + ", ".join(f"{r}: {g(e)}" for r, e in worst.items()),
                  flag(set(BUGS) | {"correct"} <= set(worst.index), "the correct rule and the four bugs measured"),
                  times_at_least(CAUGHT, worst.get("correct", np.nan), 1, f"correct rule passes (below {CAUGHT:g})"),
                  *(times_at_least(worst.get(b, np.nan), CAUGHT, 1, f"{b} caught (above {CAUGHT:g})") for b in BUGS))
