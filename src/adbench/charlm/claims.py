"""C1's conclusions, tested: the character model trained once correctly and once per silent bug, each run
scored on held-out text by its own evaluation path, and the float64 loss-scale checks beside the runs.

Each relation reads C1's tables (results/C1/) and returns an Outcome whose checks carry their margins; each
declares its two boundary controls (`edge`). `sources` says which computation produced each cell: every
training run is its own computation. The runs are seeded, but another machine's kernels train another model,
so the bands of the training-based checks are the spread two machines' runs could plausibly show.
"""

from __future__ import annotations

import math

from ..claims import Edge, Flip, Move, at_least, at_most, flag, g, judged, relation, sources
from .variants import VARIANTS

FOUR_BUGS = ("no_zero_grad", "unshifted_targets", "loss_scaled", "detached_positions")  # the documents' four
_RUN = {v: f"{v} run" for v in VARIANTS}
sources("C1/summary", {**_RUN, **{f"{v}:{c}": "input" for v in VARIANTS for c in ("loss_scale", "grad_clip", "parameters")},
                       **{f"{v}:train_seconds_volatile": "stopwatch" for v in VARIANTS}}, by="variant")
sources("C1/grad_norms", _RUN, by="variant")
sources("C1/curves", _RUN, by="variant")
sources("C1/baselines", {"uniform": "ln of the corpus's character count", "unigram": "training-split character "
                         "frequencies", "uniform:characters": "input", "unigram:characters": "input"}, by="baseline")
_SGD = {"scaled_loss": "SGD, loss x scale", "scaled_lr": "SGD, lr x scale", "unscaled": "SGD, unscaled"}
sources("C1/checks/sgd_steps", {"step": "input", "max_abs_move": _SGD["scaled_loss"],
                                "max_abs_diff_vs_scaled_lr": f"{_SGD['scaled_loss']}, {_SGD['scaled_lr']}",
                                "max_abs_diff_vs_unscaled": f"{_SGD['scaled_loss']}, {_SGD['unscaled']}"})
_SCALED, _PLAIN, _EPS = "one step, loss x scale", "one step, unscaled loss", "eps-term prediction from the two gradients"
sources("C1/checks/one_step", {"optimizer": "input", "scale": "input", "lr": "input", "eps": "input",
                               "step_norm_unscaled": _PLAIN, "step_norm_scaled": _SCALED,
                               "diff_norm": f"{_SCALED}, {_PLAIN}", "diff_over_step": f"{_SCALED}, {_PLAIN}",
                               "eps_term_norm": _EPS, "residual_norm": f"{_SCALED}, {_PLAIN}, {_EPS}"})
sources("C1/checks/drift", {"variant": "input", "group": "input",
                            "max_abs_change": "trained weights, initial state rebuilt from the seed",
                            "unchanged": "trained weights, initial state rebuilt from the seed"})

LOSS_BAND = 0.05  # nats: how far two machines' runs of the same seeded training could plausibly land apart


def _runs(t):
    return t["C1/summary"].set_index("variant")


def _uniform(t) -> float:
    return float(t["C1/baselines"].set_index("baseline").loc["uniform", "heldout_loss"])


# ---- held-out scores --------------------------------------------------------------------------------------
# "As good as correct": within 2 % of the correct run's held-out loss. The documents' 1.735 against 1.74 is
# 0.3 %; the smallest gap they call worse is the detached table's 12 %; 2 % sits well between the two and above
# what a different machine's run of the same seed moves a held-out loss (a few tenths of a percent).
AS_GOOD = 0.02


def _gap(t, variant: str) -> float:
    h = _runs(t).heldout_loss
    return float(h[variant] / h["correct"] - 1)


def _correct_times(f: float):
    return lambda t: f * float(_runs(t).heldout_loss["correct"])


@relation("C1/summary", edge=Flip("C1/summary", {"variant": "loss_scaled"}, "heldout_loss",
                                  holding=_correct_times(1.0), failing=_correct_times(1 + 2.5 * AS_GOOD)))
def scaled_loss_matches_correct(t):
    s, gap = _runs(t), _gap(t, "loss_scaled")
    return judged(f"held-out: loss x{g(s.loss_scale['loss_scaled'])} {g(s.heldout_loss['loss_scaled'])} vs correct "
                  f"{g(s.heldout_loss['correct'])} ({g(100 * gap)} %)",
                  at_most(abs(gap), AS_GOOD, f"|relative gap to the correct run|, at most {AS_GOOD:g}", "relative",
                          0.005))


@relation("C1/summary", edge=Flip("C1/summary", {"variant": "detached_positions"}, "heldout_loss",
                                  holding=_correct_times(1.12), failing=_correct_times(1.0)))
def detached_positions_end_worse(t):
    # worse beyond what counts as "as good as correct" (the documents: 12 % worse)
    s, gap = _runs(t), _gap(t, "detached_positions")
    return judged(f"held-out: detached {g(s.heldout_loss['detached_positions'])} vs correct "
                  f"{g(s.heldout_loss['correct'])} ({g(100 * gap)} % worse)",
                  at_least(gap, AS_GOOD, f"relative gap above the correct run, more than {AS_GOOD:g}", "relative",
                           0.005, strict=True))


def _unigram(t) -> float:
    return float(t["C1/baselines"].set_index("baseline").loc["unigram", "heldout_loss"])


@relation("C1/summary", "C1/baselines", edge=Flip("C1/summary", {"variant": "correct"}, "heldout_loss",
                                                  holding=lambda t: _unigram(t) - 1, failing=lambda t: _unigram(t) + 0.1))
def correct_beats_baselines(t):
    c, uni, uniform = float(_runs(t).heldout_loss["correct"]), _unigram(t), _uniform(t)
    return judged(f"held-out: correct {g(c)}, character frequencies {g(uni)}, uniform {g(uniform)} nats",
                  at_least(uni - c, 0, "correct run below the frequency baseline", "nats", LOSS_BAND, strict=True),
                  at_least(uniform - uni, 0, "frequency baseline below the uniform guess", "nats", LOSS_BAND, strict=True))


# ---- the training curves ------------------------------------------------------------------------------
def _five(t):
    return _runs(t).loc[["correct", *FOUR_BUGS], "final_train_loss"]  # the five runs, not the clipped control


@relation("C1/summary", "C1/baselines", edge=Flip(
    "C1/summary", {"variant": "unshifted_targets"}, "final_train_loss",
    holding=lambda t: 0.01 * float(_five(t).drop("unshifted_targets").min()),
    failing=lambda t: 0.5 * float(_five(t).drop("unshifted_targets").min()), log=True))
def unshifted_best_train_worst_heldout(t):
    s, uniform = _runs(t), _uniform(t)
    u, others = s.loc["unshifted_targets"], _five(t).drop("unshifted_targets")
    # "looks too good": a training loss at least ten times below every other run's (the documents: 0.001)
    return judged(f"unshifted: train {g(u.final_train_loss)} (next lowest {g(others.min())}), held-out "
                  f"{g(u.heldout_loss)} vs uniform {g(uniform)}",
                  at_least(math.log10(others.min() / u.final_train_loss), 1, "decades below every other run's "
                           "training loss, at least one", "decades", 0.1),
                  at_least(u.heldout_loss - uniform, 0, "held-out loss above the uniform guess", "nats", LOSS_BAND,
                           strict=True))


@relation("C1/summary", edge=Flip(
    "C1/summary", {"variant": "unshifted_targets"}, "final_train_loss",
    holding=lambda t: 0.5 * float(_five(t).drop("unshifted_targets").min()),
    failing=lambda t: 2.0 * float(_five(t).drop("unshifted_targets").min()), log=True))
def unshifted_best_train_loss_of_five(t):
    s = _five(t)
    others = s.drop("unshifted_targets")
    return judged("final training loss: " + ", ".join(f"{v} {g(x)}" for v, x in s.items()),
                  at_least(math.log10(others.min() / s["unshifted_targets"]), 0, "unshifted below the next lowest",
                           "decades", 0.05, strict=True))


def _nzg_curve(t):
    c = t["C1/curves"]
    return c[c.variant == "no_zero_grad"].sort_values("step")


@relation("C1/summary", "C1/curves", "C1/baselines", edge=Flip(
    "C1/summary", {"variant": "no_zero_grad"}, "final_train_loss", holding=lambda t: _uniform(t) + 1,
    failing=lambda t: _uniform(t) - 0.5))
def no_zero_grad_falls_then_climbs(t):
    c, uniform = _nzg_curve(t), _uniform(t)
    low = c.loc[c.train_loss.idxmin()]
    end = float(_runs(t).final_train_loss["no_zero_grad"])
    return judged(f"no zero_grad: starts {g(c.train_loss.iloc[0])}, lowest {g(low.train_loss)} at step "
                  f"{int(low.step)}, ends {g(end)} vs uniform {g(uniform)}",
                  at_least(c.train_loss.iloc[0] - low.train_loss, 0, "first falls: start minus the lowest", "nats",
                           LOSS_BAND, strict=True),
                  flag(int(low.step) < int(c.step.iloc[-1]), "the lowest point comes before the end"),
                  at_least(end - uniform, 0, "ends above the uniform guess", "nats", LOSS_BAND, strict=True))


@relation("C1/summary", edge=Edge(
    Move("C1/summary", lambda t: {"variant": _a_bug(t, visible=False)}, "loss_only_dashboard",
         "looks normal on its own: a falling curve"),
    Move("C1/summary", lambda t: {"variant": _a_bug(t, visible=False)}, "loss_only_dashboard",
         "visible: training loss ends above a uniform guess")))
def loss_only_catches_half(t):
    visible = [b for b in FOUR_BUGS if str(_runs(t).loc[b, "loss_only_dashboard"]).startswith("visible")]
    return judged(f"visible on the loss curve: {', '.join(visible) or 'none'} ({len(visible)} of {len(FOUR_BUGS)})",
                  flag(2 * len(visible) == len(FOUR_BUGS), "exactly half the bugs show on the loss"))


def _a_bug(t, visible: bool) -> str:
    """The first bug run whose loss-only reading is (not) visible: where the edge moves a label."""
    s = _runs(t).loss_only_dashboard
    return next(b for b in FOUR_BUGS if str(s[b]).startswith("visible") == visible)


from . import claims_grads, claims_runs  # noqa: E402,F401  (gradient and loss-scale relations; the runs as a whole)
