"""adbench.verdicts.documented: the documented-values table's rows are well formed for their kind."""

import re

from adbench.verdicts.documented import load
from adbench.verdicts.tolerance import parse_spec


def test_new_documented_rows_are_well_formed():
    d = load()
    new = d[d.tolerance != ""]
    assert all(re.fullmatch(r"(abs|rel):[0-9.e+-]+|sig:\d+", t) for t in new.tolerance)
    # rounding rows declare the digits that do not depend on the C library: sig: or rel:, never abs:
    assert all(parse_spec(t) and parse_spec(t)[0] != "abs" for t in d.loc[d.kind == "rounding", "tolerance"])
    props = d[d.kind == "property"]  # G4 ordering/restoration, G7 clip return/direction, G7 clipped norm, P9 bf16
    assert len(props) == 7 and (props.note != "").all()
    assert set(props[props.documented.isin(["true", "false"])].id) == {"G4", "G7"}
    s7 = d[(d.id == "S7") & d.quantity.str.match(r"(numerical_slope|grad_dot_v|abs_error)_d\d")]
    o1 = d[(d.id == "O1") & d.quantity.str.startswith("gd_final_loss_seed")]
    assert len(s7) == 15 and len(o1) == 10 and set(o1.kind) == {"shape"}


def test_the_table_is_sorted_by_id():
    """Each ID's rows sit together, the IDs in the catalog's order (families S, T, L, O, D, P, G, C; numbers
    ascending), so a family's rows are one block to read and to edit."""
    from adbench.verdicts.documented import load

    ids = list(load().id)
    order = "STLODPGC"
    keys = [(order.index(i[0]), int(i[1:])) for i in ids]
    assert keys == sorted(keys), [ids[k] for k in range(1, len(ids)) if keys[k] < keys[k - 1]][:5]
    # control: one row moved out of its block is caught
    moved = keys[1:] + keys[:1]
    assert moved != sorted(moved)
