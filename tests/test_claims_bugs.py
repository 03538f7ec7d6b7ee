"""A realistic bug in a measurement flips the claims it should: the measurement-level controls (claims/bugs.py).

For every Bug a family lists: the real measurement without the bug gives tables on which its claims hold, and with
the bug, tables on which they fail. The other tables a relation reads come from the full run's fixture. Which
relations must have a Bug (or a reasoned survivor entry) is tests/test_claims_structure.py's independence test."""

from __future__ import annotations

import pytest

from adbench.claims.bugs import Bug, all_bugs, with_tables
from adbench.claims.registry import RELATIONS, Tables, load_all
from adbench.outcomes import DEFINITION, FAILS, HOLDS
from claims_fixture import load

load_all()
REAL = load()
BUGS = all_bugs()


def flip_problems(bug: Bug, base: Tables) -> list[str]:
    """What is wrong with one Bug on `base` (the fixture): a claim that fails without the bug, or holds with it."""
    clean, broken = with_tables(base, bug.measure(None)), with_tables(base, bug.measure(bug.name))
    problems = []
    for name in bug.flips:
        ok, bad = RELATIONS[name](clean), RELATIONS[name](broken)
        if ok.verdict not in (HOLDS, DEFINITION):
            problems.append(f"{name} without the bug: {ok.verdict}: {ok.reason}")
        if bad.verdict != FAILS:
            problems.append(f"{name} with {bug.what}: {bad.verdict}: {bad.reason}")
    return problems


def test_every_bug_names_registered_relations_that_are_not_definitions():
    for bug in BUGS:
        assert bug.flips, bug.name
        unknown = [r for r in bug.flips if r not in RELATIONS]
        assert not unknown, f"{bug.name}: unknown relations {unknown}"
        assert not any(RELATIONS[r].definition for r in bug.flips), f"{bug.name}: a definition cannot be flipped"
    names = [b.name for b in BUGS]
    assert len(names) == len(set(names)), f"bug names listed twice: {sorted(n for n in names if names.count(n) > 1)}"


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.name)
def test_a_bug_in_the_measurement_flips_its_claims(bug):
    problems = flip_problems(bug, REAL)
    assert not problems, "; ".join(problems)


def _sweep_bug(effective: bool) -> Bug:
    """A stand-in measurement for the harness's own test: S5's sweep, with the bug either moving the best forward
    error next to the best central one (it must flip central_beats_forward) or changing nothing."""
    def measure(switch: str | None) -> dict:
        sweep = REAL["S5/sweep"].copy()
        if switch and effective:
            sweep.loc[sweep.forward_err.idxmin(), "forward_err"] = 2 * sweep.central_err.min()
        return {"S5/sweep": sweep}
    return Bug("closer forward" if effective else "no-op", "a stand-in", ("central_beats_forward",), measure)


def test_the_harness_tells_a_bug_that_flips_from_one_that_does_not():
    assert flip_problems(_sweep_bug(True), REAL) == []
    problems = flip_problems(_sweep_bug(False), REAL)  # negative control: a bug the claim does not see
    assert len(problems) == 1 and problems[0].startswith("central_beats_forward with a stand-in: holds")
