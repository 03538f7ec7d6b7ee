"""C1's conclusions about the runs as a whole: none of the four bugs raised, and a held-out score computed through
the training loop's own data path hides the unshifted bug that the independent evaluator exposes. Imported by
charlm/claims.py, which declares C1/summary's and C1/baselines' sources."""

from __future__ import annotations

import math

from ..claims import Edge, Flip, Move, at_least, at_most, flag, g, judged, relation, sources
from .claims import FOUR_BUGS, LOSS_BAND, _runs, _uniform
from .variants import RAN_THROUGH

sources("C1/checks/shared_path", {"variant": "input", "path": "input", "batches": "input", "characters": "input",
                                  "heldout_loss": "the training loop's data path (train.get_batch, its own shift)"})


# ---- none of the four raised -----------------------------------------------------------------------------
@relation("C1/summary", single=True, edge=Edge(
    Move("C1/summary", {"variant": FOUR_BUGS[0]}, "raised", RAN_THROUGH),
    Move("C1/summary", {"variant": FOUR_BUGS[0]}, "raised", "RuntimeError: a loud bug")))
def no_bug_raises(t):
    """Each of the four bug runs completed every step without an exception: the recorded `raised` text and the
    steps it completed, as the training job wrote them (a run that raises is recorded, not lost)."""
    s = _runs(t)
    missing = [b for b in FOUR_BUGS if b not in s.index]
    rows = s.loc[[b for b in FOUR_BUGS if b in s.index]]
    loud = {b: str(r.raised) for b, r in rows.iterrows() if str(r.raised) != RAN_THROUGH}
    short = {b: f"{int(r.steps_completed)} of {int(r.steps)}" for b, r in rows.iterrows()
             if int(r.steps_completed) != int(r.steps)}
    return judged(f"{len(rows) - len(loud)} of {len(FOUR_BUGS)} bug runs ran through without raising"
                  + (f"; raised: {loud}" if loud else "") + (f"; steps completed: {short}" if short else "")
                  + (f"; not run: {missing}" if missing else ""),
                  flag(not missing, "all four bug runs recorded"),
                  flag(not loud, "no bug run raised"),
                  flag(not short, "every bug run completed all its steps"))


# ---- a shared data path hides the unshifted bug -------------------------------------------------------------
SHARED_RUN = "unshifted_targets"
# "As good as the training loss": within one decade of the run's own final training loss, the same decade by which
# that training loss "looks too good" (C1.unshifted-games-train-loss); a score that shifts its targets lands
# orders of magnitude above it (above the uniform guess).
AS_GOOD_DECADES = 1.0


def _shared(t) -> float:
    d = t["C1/checks/shared_path"]
    return float(d[d.variant == SHARED_RUN].heldout_loss.iloc[0])


def _train_times(f: float):
    return lambda t: f * float(_runs(t).final_train_loss[SHARED_RUN])


@relation("C1/checks/shared_path", "C1/summary", "C1/baselines", edge=Flip(
    "C1/checks/shared_path", {"variant": SHARED_RUN}, "heldout_loss", holding=_train_times(1.0),
    failing=_train_times(10 ** (AS_GOOD_DECADES + 1)), log=True))
def shared_data_path_hides_unshifted(t):
    """The unshifted run's model scored on held-out text twice: through the training loop's data path (its
    unshifted targets) the score reads as good as its training loss; through the independent evaluator
    (evaluate.py: its own windows and shift) it is worse than a uniform guess."""
    u = _runs(t).loc[SHARED_RUN]
    shared, train, own, uniform = _shared(t), float(u.final_train_loss), float(u.heldout_loss), _uniform(t)
    return judged(f"unshifted run: held-out through the training data path {g(shared)} nats vs its final training "
                  f"loss {g(train)} (x{g(shared / train)}); through the independent evaluator {g(own)} vs the uniform "
                  f"guess {g(uniform)}",
                  at_most(math.log10(shared / train) if shared > 0 and train > 0 else math.inf, AS_GOOD_DECADES,
                          f"training-path held-out over the training loss, at most {AS_GOOD_DECADES:g} decade",
                          "decades", 0.1),
                  at_least(own - uniform, 0, "independent evaluator: held-out above the uniform guess", "nats",
                           LOSS_BAND, strict=True))
