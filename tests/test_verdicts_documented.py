"""adbench.verdicts.documented: `load` refuses every malformed row (one negative case per rule), and the
shipped table holds what the loader cannot know: its IDs are the workflow's, its printed zeros are exact,
its tolerances are written canonically, and its rows are sorted by ID."""

import re

import pytest

from adbench.verdicts import documented
from adbench.verdicts.documented import load
from adbench.verdicts.tolerance import is_printed_zero, parse_printed
from conftest import ROOT
from documented_fixture import row, table
from workflow_inspect import from_workflow


# --- what load refuses ---------------------------------------------------------------------------

def test_band_above_100_is_refused_at_load(tmp_path):
    with pytest.raises(ValueError, match=r"X1/q: band '150'"):
        load(table(tmp_path, [row(band="150", note="this row's own reason")]))
    assert len(load(table(tmp_path, [row(band="100", note="this row's own reason")]))) == 1
    with pytest.raises(ValueError, match="band"):
        load(table(tmp_path, [row(band="1", note="this row's own reason")]))


def test_band_reason_must_be_specific_to_the_row(tmp_path):
    boiler = "different corpus, model size and seed"
    rows = [row(band="50", note=boiler), row(quantity="q2", note=boiler)]
    with pytest.raises(ValueError, match="X1/q: a row with a band"):
        load(table(tmp_path, rows))
    rows[0]["note"] = "only this loss sits at the memorisation floor"
    assert len(load(table(tmp_path, rows))) == 2


@pytest.mark.parametrize("rows, message", [
    ([row(documented="")], "empty documented value"),
    ([row(kind="rounding", documented="6.68e-12", note="libm")], "rounding row must declare"),
    ([row(kind="rounding", documented="6.68e-12", tolerance="abs:1e-14", note="libm")], "rounding row must declare"),
    ([row(tolerance="abs:1e-3")], "say why in note"),
    ([row(tolerance="sig:2.5", note="n")], "tolerance 'sig:2.5'"),
    ([row(documented="None", pattern="(", note="n")], "pattern does not compile"),
    ([row(pattern="x", note="n")], "pattern is only for text rows"),
    ([row(kind="guess")], "unknown kind"),
    ([row(config="no equals sign")], "X1/q: config: "),
    ([row(), row(documented="2.0")], "X1/q: duplicate documented row"),
], ids=["empty", "rounding_without_tolerance", "rounding_with_abs", "tolerance_without_note", "malformed_tolerance",
        "pattern_does_not_compile", "pattern_on_a_number", "unknown_kind", "config_not_key_value", "duplicate"])
def test_malformed_rows_are_refused_at_load(tmp_path, rows, message):
    with pytest.raises(ValueError, match=message):
        load(table(tmp_path, rows))
    assert len(load(table(tmp_path, [row()]))) == 1  # control: the base row alone loads


def test_a_table_with_other_columns_is_refused(tmp_path):
    with pytest.raises(ValueError, match="columns"):
        load(table(tmp_path, [row()], columns=[c for c in documented.COLUMNS if c != "band"]))


# --- the shipped table ---------------------------------------------------------------------------

def test_shipped_ids_are_the_workflows_and_numbers_parse():
    df = load()
    ids = {i for f in from_workflow(ROOT) for i in f.ids}  # as the rules files declare them
    assert set(df.id) <= ids, set(df.id) - ids
    # Every numeric documented value parses; text values are deliberate (error names, messages).
    numeric = df[df.documented.map(parse_printed).notna()]
    assert len(numeric) > 0.8 * len(df)
    assert {"S1", "S5", "S9", "S10"} <= set(df.id)


def test_shipped_table_declares_every_printed_zero_exactly():
    df = load()
    zeros = df[df.documented.map(is_printed_zero)]
    assert len(zeros) >= 15
    # a printed zero is judged as exactly 0 unless the row declares abs: (rel: and sig: of 0 are 0: load allows them)
    assert set(zeros.kind) <= {"exact", "derived", "property"}, zeros[["id", "quantity", "kind"]]
    assert (zeros.tolerance.eq("") | zeros.tolerance.str.startswith("abs:")).all()


def test_shipped_tolerances_are_canonical_and_property_rows_explain_themselves():
    d = load()
    # load accepts any float() spelling (" 1e-3", "inf", "sig:3.0"); the table writes plain numbers and integer digits
    assert all(re.fullmatch(r"(abs|rel):[0-9.e+-]+|sig:\d+|about", t) for t in d[d.tolerance != ""].tolerance)
    props = d[d.kind == "property"]  # G4 ordering/restoration, G7 clip return/direction, G7 clipped norm, P9 bf16
    assert len(props) == 7 and (props.note != "").all()
    assert set(props[props.documented.isin(["true", "false"])].id) == {"G4", "G7"}
    s7 = d[(d.id == "S7") & d.quantity.str.match(r"(numerical_slope|grad_dot_v|abs_error)_d\d")]
    o1 = d[(d.id == "O1") & d.quantity.str.startswith("gd_final_loss_seed")]
    assert len(s7) == 15 and len(o1) == 10 and set(o1.kind) == {"shape"}


def test_the_table_is_sorted_by_id():
    """Each ID's rows sit together, the IDs in the catalog's order (the declared families' letters in report
    order; numbers ascending), so a family's rows are one block to read and to edit."""
    from adbench.families import id_order

    ids = list(load().id)
    order = id_order()
    assert len(order) == len(set(order)) >= 8, order  # one letter per declared family
    keys = [(order.index(i[0]), int(i[1:])) for i in ids]
    assert keys == sorted(keys), [ids[k] for k in range(1, len(ids)) if keys[k] < keys[k - 1]][:5]
    # control: one row moved out of its block is caught
    moved = keys[1:] + keys[:1]
    assert moved != sorted(moved)
