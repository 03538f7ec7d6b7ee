"""Every registered relation holds on the synthetic result set and fails on its negative control."""

from __future__ import annotations

import pytest

from adbench.claims.relations import FAILS, HOLDS, NEEDS, RELATIONS, relation
from claims_synthetic import VIOLATIONS, good_tables, violated


def test_every_relation_has_a_negative_control():
    assert sorted(RELATIONS) == sorted(VIOLATIONS)


def test_every_relation_reads_only_tables_it_declares():
    """A relation that reads an undeclared table would raise KeyError instead of reading 'not measured'."""
    full = good_tables()
    for name, fn in RELATIONS.items():
        fn({k: full[k] for k in NEEDS[name]})


@pytest.mark.parametrize("name", sorted(RELATIONS))
def test_relation_holds_on_synthetic_results(name):
    verdict, reason = RELATIONS[name](good_tables())
    assert verdict == HOLDS, reason
    assert reason.strip()


@pytest.mark.parametrize("name", sorted(RELATIONS))
def test_relation_fails_on_its_negative_control(name):
    verdict, reason = RELATIONS[name](violated(name))
    assert verdict == FAILS, reason


def test_a_relation_name_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        relation()(RELATIONS["routes_add"])
