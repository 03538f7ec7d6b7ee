"""The S family's conclusions about directional gradient checks (S7, issue 28): what one direction cannot see
(an orthogonal error, an error below the check's own), a check through fresh dropout masks, ReLU's kink, and
four mutated backward rules. Listed in family.py's `claims`, which the registry reads.
"""

from __future__ import annotations

import numpy as np

from ..claims import EPS64, FAR, Flip, at_most, flag, g, judged, qv, relation, row, sources, times_at_least, truthy

# the blind-spot checks run along fresh directions with their own central differences; the noise they are judged
# against is the correct gradient's check error along S7's documented directions (S7/directions): another draw
sources("S7/blind_spots", {"corruption": "input", "coordinate": "input", "orthogonal_to": "input",
                           "corruption_norm": "input", "direction": "input", "error_along_v": "input",
                           "numerical_slope": "fresh-direction difference",
                           "grad_dot_v": "torch gradient + corruption",
                           "abs_error": "fresh-direction difference, torch gradient + corruption",
                           "correct_abs_error": "fresh-direction difference, torch gradient"})
sources("S7/values", {"control_coord0_error": "corrupted gradient, torch gradient",
                      "control_coord0_fd_error": "coordinate-0 difference, corrupted gradient"}, by="quantity")
sources("S7/dropout", {"masks": "input", "p": "input", "direction": "input",
                       "numerical_slope": "directional difference through dropout",
                       "grad_dot_v": "torch gradient through dropout",
                       "abs_error": "directional difference through dropout, torch gradient through dropout"})
sources("S7/relu_kink", {"x": "input", "straddles_kink": "input", "torch_backward": "torch autograd",
                         "central_difference": "central difference", "abs_diff": "torch autograd, central difference"})
sources("S7/mutations", {"rule": "input", "direction": "input", "numerical_slope": "central difference",
                         "grad_dot_v": "custom backward rule", "abs_error": "central difference, custom backward rule"})


# ---- S7: how many of k random directions see an error -------------------------------------------------------
def _spots(t, corruption: str):
    d = t["S7/blind_spots"]
    return d[d.corruption == corruption]


def _noise(t) -> float:
    """The finite difference's own error: the correct gradient's largest check error along the documented
    directions. A check "sees" an error when its reading exceeds this."""
    return float(t["S7/directions"].abs_error.max())


def _own(t):
    d = _spots(t, "orthogonal")
    return d[d.direction == d.orthogonal_to].iloc[0]


def _seen(reading: float, noise: float, what: str, seen: bool):
    """The reading above the noise (seen) or at most it (unseen), margin in decades."""
    return (times_at_least(reading, noise, 1, what, band=0.1) if seen
            else times_at_least(noise, reading, 1, what, band=0.1))


@relation("S7/blind_spots", "S7/directions",
          edge=Flip("S7/blind_spots", lambda t: {"corruption": "orthogonal", "direction": int(_own(t).direction)},
                    "abs_error", holding=lambda t: _own(t).abs_error, failing=lambda t: 10 * _noise(t), log=True))
def orthogonal_error_invisible(t):
    """Of k fresh random directions, an error orthogonal to one of them is seen by exactly the other k - 1: along
    its own direction the check reads no more than the finite difference's error, along each other above it."""
    d, own, noise = _spots(t, "orthogonal"), _own(t), _noise(t)
    others = d[d.direction != d.orthogonal_to]
    count = int((d.abs_error > noise).sum())
    return judged(f"error of norm {g(own.corruption_norm)} orthogonal to fresh direction {int(own.orthogonal_to)}: "
                  f"seen by {count} of {len(d)} (readings above the noise {g(noise)}); its own direction reads "
                  f"{g(own.abs_error)}, the others at least {g(others.abs_error.min() if len(others) else np.nan)}",
                  flag(len(others) > 0, "directions not orthogonal to the error measured"),
                  _seen(own.abs_error, noise, "its own direction: unseen", False),
                  *(_seen(r.abs_error, noise, f"direction {int(r.direction)}: seen", True)
                    for r in others.itertuples()))


def _loudest_small(t) -> dict:
    d = _spots(t, "small")
    return {"corruption": "small", "direction": int(d.loc[d.abs_error.idxmax(), "direction"])}


@relation("S7/blind_spots", "S7/directions",
          edge=Flip("S7/blind_spots", _loudest_small, "abs_error",
                    holding=lambda t: _spots(t, "small").abs_error.max(), failing=lambda t: 10 * _noise(t), log=True))
def small_error_below_noise(t):
    """An error smaller than the finite difference's own error is seen by none of k fresh random directions:
    every reading stays at or below the correct gradient's check error along the documented directions."""
    d, noise = _spots(t, "small"), _noise(t)
    return judged(f"error of norm {g(d.corruption_norm.max() if len(d) else np.nan)}: seen by "
                  f"{int((d.abs_error > noise).sum())} of {len(d)} fresh directions (readings "
                  + ", ".join(g(x) for x in d.abs_error) + f" against the noise {g(noise)})",
                  flag(len(d) > 0, "directions measured"),
                  *(_seen(r.abs_error, noise, f"direction {int(r.direction)}: unseen", False) for r in d.itertuples()))


def _coord(t, quantity: str) -> float:
    return float(qv(t["S7/values"], quantity))


@relation("S7/values", "S7/directions",
          edge=Flip("S7/values", {"quantity": "control_coord0_fd_error"}, "value",
                    holding=lambda t: _coord(t, "control_coord0_fd_error"), failing=lambda t: 10 * _noise(t), log=True))
def coordinate_check_blind(t):
    """A check of coordinate 0, of a gradient corrupted at another coordinate, sees nothing: against the true
    gradient it reads exactly 0, against a central difference along coordinate 0 no more than the noise."""
    exact, fd, noise = _coord(t, "control_coord0_error"), _coord(t, "control_coord0_fd_error"), _noise(t)
    return judged(f"coordinate-0 check: {exact!r} against the true gradient, {g(fd)} against a central difference "
                  f"(noise {g(noise)})",
                  flag(exact == 0, "exactly 0 against the true gradient"),
                  _seen(fd, noise, "the finite-difference coordinate-0 check: unseen", False))


# one ulp of L moves each evaluation: a central difference at h carries about ulp(L)/h of rounding; 16 of those
# allow the libm's tanh and the h² truncation, and stay six orders below the corrupted checks
NOISE_ULPS = 16


def _rounding(t) -> float:
    d = t["S7/directions"]
    return EPS64 * float(d["loss"].abs().max()) / float(d["h"].max())


def _worst_dir(t) -> dict:
    d = t["S7/directions"]
    return {"direction": int(d.loc[d.abs_error.idxmax(), "direction"])}


@relation("S7/directions", edge=Flip("S7/directions", _worst_dir, "abs_error",
                                     holding=lambda t: t["S7/directions"].abs_error.max(),
                                     failing=lambda t: 4 * NOISE_ULPS * _rounding(t), log=True))
def correct_gradient_passes(t):
    """The correct gradient's check error along every random direction is finite-difference rounding: at most
    NOISE_ULPS ulps of L over h."""
    d, unit = t["S7/directions"], _rounding(t)
    worst = float(d.abs_error.max())
    return judged(f"largest check error of the correct gradient {g(worst)} over {len(d)} directions: "
                  f"{g(worst / unit)} ulps of L = {g(d['loss'].max())} over h",
                  at_most(worst / unit, NOISE_ULPS, f"within {NOISE_ULPS} ulps of L over h", "ulps", NOISE_ULPS / 4))


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


def _off_worst(t) -> dict:
    off = _kink(t)[1]
    return {"x": off.loc[off.abs_diff.idxmax(), "x"]}


def _off_row(t):
    return row(t["S7/relu_kink"], "x", _off_worst(t)["x"])


@relation("S7/relu_kink", edge=Flip("S7/relu_kink", _off_worst, "central_difference",
                                    holding=lambda t: _off_row(t).central_difference,
                                    failing=lambda t: _off_row(t).torch_backward + 10 * KINK_AGREE))
def relu_off_kink_agrees(t):
    """Moved away from the kink, the central difference agrees with torch's backward (the local branch)."""
    off = _kink(t)[1]
    gaps = (off.torch_backward - off.central_difference).abs()
    return judged("away from the kink: " + ", ".join(f"x = {x:g}: torch {tb!r}, central {cd!r}" for x, tb, cd in
                                                       zip(off.x, off.torch_backward, off.central_difference)),
                  flag(len(off) > 0, "points away from the kink measured"),
                  *(times_at_least(KINK_AGREE, d, 1, f"x = {x:g}: within {KINK_AGREE:g}")
                    for x, d in zip(off.x, gaps)))


# the central difference at h = 1e-5 is good to ~1e-10 relative (h^2 truncation, eps/h rounding); a caught bug is an
# O(1) error: 1e-6 sits four orders from each
CAUGHT = 1e-6
MUTANTS = ("dropped transpose", "overwrite", "flipped sign", "wrong scale")


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
                  flag(set(MUTANTS) | {"correct"} <= set(worst.index), "the correct rule and the four bugs measured"),
                  times_at_least(CAUGHT, worst.get("correct", np.nan), 1, f"correct rule passes (below {CAUGHT:g})"),
                  *(times_at_least(worst.get(b, np.nan), CAUGHT, 1, f"{b} caught (above {CAUGHT:g})") for b in MUTANTS))
