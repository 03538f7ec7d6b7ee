"""Every claim can fail, and fails where the documents' sentence says it would.

On the real tables of a full run (tests/data/claims, see claims_fixture.py):
- every relation has two boundary controls: one cell moved just inside its boundary must hold, just past must
  fail, and the margin it reports sits on the matching side of zero, within the check's band;
- every relation compares two computations: the cells it really reads (found by perturbing one cell group at a
  time) must come from at least two of the computations its family declares with `sources(...)`, unless it is
  a definition (shown, never counted) or declared `single` (one observation against the claim's own bound);
- and that independence is shown by computation, not by the label: every relation that compares two computations
  is flipped by a realistic bug in a measurement (a `Bug` in some family's BUGS, claims/bugs.py, run by
  tests/test_claims_bugs.py), or is listed in SURVIVORS below with why no realistic bug can flip it.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from adbench.claims import judged, relation, table
from adbench.claims.bugs import all_bugs
from adbench.claims.helpers import mat, same_float, EPS64
from adbench.claims.registry import RELATIONS, SOURCES, Relation, load_all, source_of
from adbench.outcomes import DEFINITION, FAILS, HOLDS
from claims_fixture import load, needed

load_all()
REAL = load()


def _signature(rel: Relation, tables) -> tuple:
    try:
        out = rel(tables)
    except Exception as e:  # noqa: BLE001 - a relation that raises on a moved cell read that cell
        return ("raised", type(e).__name__)
    b = out.binding
    return (out.verdict, None if b is None else round(b.margin, 12))


def _perturbed(values: pd.Series) -> list[pd.Series]:
    """Cell values that any relation reading them would notice: far off, slightly off, or of another kind."""
    if values.dtype == bool:
        return [~values]
    num = pd.to_numeric(values, errors="coerce")
    if num.notna().all():
        return [num * -3.7 + 1.3, num * (1 + 1e-6) + 1e-300, num + 1, num * math.nan]
    return [values.astype(str) + " (moved)", pd.Series("moved", index=values.index)]


def read_cells(rel: Relation, tables) -> set[tuple[str, str | None, str]]:
    """(table, row key or None, column) of every cell group whose change changes the relation's verdict or margin."""
    base, found = _signature(rel, tables), set()
    for key in rel.needs:
        d = tables[key]
        by = SOURCES.get(key, (None, {}))[0]
        groups = [(None, d.index)] if by is None else [(k, d.index[d[by] == k]) for k in d[by].unique()]
        for col in d.columns:
            if col == by:
                continue
            for rk, idx in groups:
                for moved in _perturbed(d.loc[idx, col]):
                    t = dict(tables)
                    t[key] = d.copy()
                    t[key][col] = t[key][col].astype(object)
                    t[key].loc[idx, col] = moved.values
                    if _signature(rel, t) != base:
                        found.add((key, None if rk is None else str(rk), col))
                        break
    return found


def computations(cells) -> tuple[set[str], list[str]]:
    """The computations behind `cells` (inputs do not count), and the cells no `sources(...)` declares."""
    comps, undeclared = set(), []
    for key, rk, col in cells:
        src = source_of(key, rk, col)
        if src is None:
            undeclared.append(f"{key}[{rk}].{col}" if rk else f"{key}.{col}")
            continue
        comps |= {s.strip() for s in src.split(",") if not s.strip().startswith("input")}
    return comps, undeclared


USED = sorted(set(table.load().relation))


def test_every_registered_relation_judges_a_claim_and_every_table_is_in_the_fixture():
    assert sorted(RELATIONS) == USED, "a relation no claim uses, or a claim without a relation"
    assert set(needed()) <= set(REAL), f"refresh tests/data/claims: {sorted(set(needed()) - set(REAL))}"


@pytest.mark.parametrize("name", USED)
def test_boundary_controls(name):
    rel = RELATIONS[name]
    assert rel.edge is not None, f"{name} declares no boundary controls"
    inside, past = rel.controls(REAL)
    a, b = rel(inside), rel(past)
    assert a.verdict in (HOLDS, DEFINITION), f"just inside: {a.reason}"
    assert b.verdict == FAILS, f"just past: {b.reason}"
    for out, side in ((a, +1), (b, -1)):
        c = out.binding
        if c is not None and c.band > 0:  # the control sits at the boundary the margin measures
            assert side * c.margin >= 0 and abs(c.margin) <= c.band, (side, c)


@pytest.mark.parametrize("name", USED)
def test_relation_compares_independent_computations(name):
    rel = RELATIONS[name]
    comps, undeclared = computations(read_cells(rel, REAL))
    assert not undeclared, f"{name} reads cells whose computation no sources(...) declares: {undeclared}"
    if rel.definition:
        return
    need = 1 if rel.single else 2
    assert len(comps) >= need, f"{name} reads only {sorted(comps)}: it re-checks one computation's arithmetic"


# Relations that compare two computations but that no `Bug` flips, each with why: no realistic bug found, or the
# control would need a full-size or full-length run, a timing chain or pretrained weights. A Bug that flips one
# makes its entry stale (the test below refuses it).
SURVIVORS: dict[str, str] = {
    "activations_exceed_weights": "a realistic bug (saved bytes counted as elements, x4 dropped) crosses the weights boundary only at full size, where G6 counts for minutes on fake tensors; not run as a control",
    "adam_rescues_seed0": "a realistic bug found (Adam's first moment overwritten instead of accumulated) still rescues seed 0 (final loss 0.0018); a sign-flipped update would flip it but is not a realistic slip, and each try trains 2,000 tape steps",
    "checkpoint_identical": "no realistic bug found: with no dropout in the checked run, a bypassed or a mis-segmented checkpoint still gives identical gradients (the dropout case has its own Bug)",
    "checkpoint_recomputes_not_twice": "the realistic bug (checkpoint bypassed) flips it only at the documented size (7.4 s a measurement, twice per control); a smaller stack does not reach the bound; not run as a control",
    "checkpoint_saves_fewer_bytes": "the realistic bug (checkpoint bypassed) flips it only at the documented size (7.4 s a measurement); a smaller stack does not reach the quarter bound; not run as a control",
    "checkpoint_slower_than_plain": "rests on timing: a bug that changes the work (checkpoint bypassed) shows only through L6's timing chain (minutes)",
    "correct_beats_baselines": "judges the 1,000-step training runs (about a minute each); a realistic bug (the baseline scored on training text) is not run as a control",
    "detached_positions_end_worse": "judges the 1,000-step training runs (about a minute each); not run as a control",
    "fp16_loses_some_gradient_scale_recovers": "pretrained weights only (not judged on the random-init fallback): a control would need GPT-2's weights",
    "fused_attention_keeps_fewer_bytes": "the realistic bug (the eager kernel measured as the fused one) needs G6's full-size saved-tensor count (minutes); not run as a control",
    "hook_calls_overstate_shared_storage": "the realistic bug (storages keyed by tensor id) needs L6's documented-size run (7.4 s a measurement); not run as a control",
    "logprobs_dominate_checkpointed": "the realistic bug (float32 log-probabilities counted as float16) needs G6's full-size checkpointed count (minutes); not run as a control",
    "loss_only_catches_half": "judges the 1,000-step training curves (six runs of about a minute); not run as a control",
    "model_beats_uniform_guess": "pretrained weights only: no tiny model beats a uniform guess, so a control cannot show a flip",
    "model_beats_uniform_guess_proxy": "judges the trained proxy (C1-sized training, about a minute); not run as a control",
    "no_zero_grad_falls_then_climbs": "judges the 1,000-step no_zero_grad curve (about a minute); not run as a control",
    "reverse_one_sweep": "the build-order and no-visited-set switches leave the closure count at 6 on this expression (only leaves are reused): no realistic bug in the counted tape changes one backward sweep",
    "scaled_loss_matches_correct": "judges the 1,000-step training runs (about a minute each); the one-step AdamW check carries the cheap controls",
    "tape_hundreds_slower": "rests on timing: a bug that slows either side shows only through S9's timing chain (minutes)",
    "token_table_dominates_gradient": "pretrained weights only: on random init the token table does not dominate, so a control cannot show a flip",
    "unshifted_best_train_loss_of_five": "judges the five 1,000-step training runs; not run as a control",
    "unshifted_best_train_worst_heldout": "judges the 1,000-step unshifted run; the shared-data-path claim carries the cheap evaluator control",
}


def comparing(relations) -> list[str]:
    """The relations that compare two computations: neither a definition nor a single observation."""
    return sorted(n for n, r in relations.items() if not r.definition and not r.single)


def unflipped(relations, bugs, survivors: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """(comparing relations no Bug flips and no survivor entry explains, survivor entries a Bug flips or that
    name no comparing relation, survivor entries without a reason)."""
    flipped = {r for b in bugs for r in b.flips}
    names = set(comparing(relations))
    missing = sorted(names - flipped - set(survivors))
    stale = sorted((set(survivors) & flipped) | (set(survivors) - names))
    blank = sorted(n for n, why in survivors.items() if not why.strip() or why.startswith("TODO"))
    return missing, stale, blank


def test_independence_is_shown_by_a_bug_in_the_measurement_or_a_reasoned_survivor():
    missing, stale, blank = unflipped(RELATIONS, all_bugs(), SURVIVORS)
    assert not missing, (f"relations that compare two computations with no Bug that flips them: {missing}; add a "
                         "Bug to the family's BUGS (claims/bugs.py), or list the relation in SURVIVORS with why "
                         "no realistic bug can flip it")
    assert not stale, (f"SURVIVORS entries that a Bug now flips, or that name no relation comparing two "
                       f"computations: {stale}; remove them from SURVIVORS")
    assert not blank, f"SURVIVORS entries without a reason: {blank}"


def test_the_independence_check_sees_a_relation_nobody_flips():
    """Negative control: without its survivor entry an unflipped relation is named; a Bug that flips a listed
    survivor makes the entry stale; a definition needs neither."""
    from adbench.claims.bugs import Bug

    name = next(n for n in comparing(RELATIONS) if n in SURVIVORS)   # a listed one: its entry is what hides it
    rest = {n: why for n, why in SURVIVORS.items() if n != name}
    assert name in unflipped(RELATIONS, [], {})[0] and name not in unflipped(RELATIONS, [], SURVIVORS)[0]
    flips = Bug("a bug", "a bug", (name,), lambda switch: {})
    assert name not in unflipped(RELATIONS, [flips], rest)[0]
    assert unflipped(RELATIONS, [flips], {**rest, name: "why"})[1] == [name]
    defined = next(n for n, r in RELATIONS.items() if r.definition)
    assert defined not in unflipped(RELATIONS, [], {})[0]
    assert unflipped(RELATIONS, [], {**SURVIVORS, name: " "})[2] == [name]


def test_a_tautology_is_caught():
    """Negative control: T2's old test read p and dz from the hand column, both one function's output."""
    def hand_only(t):
        d = t["T2/matrices"]
        p, dz = mat(d, "p").ravel(), mat(d, "dz").ravel()
        return judged("", same_float(dz[1], p[1], 64, EPS64, "dz = p off target"))
    rel = Relation("hand_only", hand_only, ("T2/matrices",))
    comps, undeclared = computations(read_cells(rel, REAL))
    assert not undeclared and len(comps) == 1, comps


def test_the_margin_crosses_zero_where_the_verdict_flips():
    """The binding margin and the verdict agree on every control and on the real tables."""
    for name in USED:
        rel = RELATIONS[name]
        for t in (REAL, *rel.controls(REAL)):
            out = rel(t)
            c = out.binding
            if c is not None and not math.isnan(c.margin):
                ok = c.margin >= 0 if out.verdict in (HOLDS, DEFINITION) else c.margin <= 0
                assert ok, (name, out.verdict, c)


def test_relation_registration_is_checked():
    with pytest.raises(ValueError, match="registered twice"):
        relation()(RELATIONS[USED[0]].fn)
    with pytest.raises(ValueError, match="rests_on"):
        relation(rests_on="luck")
