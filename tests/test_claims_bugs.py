"""A realistic bug in a measurement flips the claims it should: the measurement-level controls (claims/bugs.py).

For every Bug a family lists: the real measurement without the bug gives tables on which its claims hold, and with
the bug, tables on which they fail. The other tables a relation reads come from the full run's fixture."""

from __future__ import annotations

import pytest

from adbench.claims.bugs import all_bugs, with_tables
from adbench.claims.registry import RELATIONS, load_all
from adbench.outcomes import DEFINITION, FAILS, HOLDS
from claims_fixture import load

load_all()
REAL = load()
BUGS = all_bugs()


def test_every_bug_names_registered_relations():
    assert BUGS, "no family lists a measurement-level control"
    for bug in BUGS:
        assert bug.flips, bug.name
        unknown = [r for r in bug.flips if r not in RELATIONS]
        assert not unknown, f"{bug.name}: unknown relations {unknown}"
        assert not any(RELATIONS[r].definition for r in bug.flips), f"{bug.name}: a definition cannot be flipped"


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.name)
def test_a_bug_in_the_measurement_flips_its_claims(bug):
    clean, broken = with_tables(REAL, bug.measure(None)), with_tables(REAL, bug.measure(bug.name))
    for name in bug.flips:
        ok, bad = RELATIONS[name](clean), RELATIONS[name](broken)
        assert ok.verdict in (HOLDS, DEFINITION), f"{name} without the bug: {ok.reason}"
        assert bad.verdict == FAILS, f"{name} with {bug.what}: {bad.verdict}: {bad.reason}"
