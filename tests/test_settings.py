"""Which settings a documented figure or a claim was measured under (adbench.settings), and the comparison's
not-judged rows when the run's configuration differs."""

from __future__ import annotations

import pandas as pd
import pytest

from adbench import settings
from adbench.verdicts import documented
from adbench.verdicts.verdict import compare

RUN = {"scalar": {"a": 1.5, "reference_h": 0.1, "sweep_h": [1e-1, 1e-5]},
       "depth": {"d1": {"chains": [{"w": 1.0}, {"w": 3.0}]}}, "gpt2": {"target": " Paris"}}


def test_parse_reads_yaml_values():
    assert settings.parse("scalar.a=1.5; gpt2.target=\" Paris\"; scalar.sweep_h=[0.1, 1.0e-5]") == [
        ("scalar.a", 1.5), ("gpt2.target", " Paris"), ("scalar.sweep_h", [0.1, 1e-5])]
    assert settings.parse("") == []
    with pytest.raises(ValueError, match="must read key=value"):
        settings.parse("scalar.a")


def test_lookup_follows_dots_and_list_items():
    assert settings.lookup(RUN, "depth.d1.chains[1].w") == 3.0
    with pytest.raises(KeyError, match="no item 2"):
        settings.lookup(RUN, "depth.d1.chains[2].w")
    with pytest.raises(KeyError, match="missing 'b'"):
        settings.lookup(RUN, "scalar.b")


def test_differences_compare_numbers_as_numbers():
    # YAML 1.1 reads 1e-5 as text and 1.0e-5 as a number: the same value either way
    assert settings.differences("scalar.sweep_h=[0.1, 1e-5]; scalar.a=1.5", RUN) == []
    assert settings.differences("scalar.reference_h=0.2", RUN) == ["scalar.reference_h = 0.1; documents 0.2"]
    assert settings.differences("depth.d1.chains[0].w=1.0", RUN) == []
    assert settings.differences("scalar.b=-2.0", RUN) == ["scalar.b is not configured; documents -2.0"]
    assert settings.differences("scalar.reference_h=0.2", None) == []  # a caller that does not know the run


def _documented(config: str) -> pd.DataFrame:
    row = dict(id="S1", quantity="central_dL_da", description="d", documented="-0.1815845310", unit="", kind="exact",
               band="", doc="000", section="s", note="", tolerance="", pattern="", config=config)
    return pd.DataFrame([row], columns=documented.COLUMNS)


def test_a_row_measured_under_other_settings_is_not_judged_even_when_missing():
    measured = pd.DataFrame([{"id": "S1", "quantity": "central_dL_da", "value": -0.17, "note": ""}])
    other = {"scalar": {"reference_h": 0.2}}
    row = compare(_documented("scalar.reference_h=0.1"), measured, settings=other).iloc[0]
    assert (row.status, row.note) == ("not judged", "configuration differs from the documents "
                                                    "(scalar.reference_h = 0.2; documents 0.1)")
    empty = measured.iloc[:0]
    assert compare(_documented("scalar.reference_h=0.1"), empty, settings=other).status.item() == "not judged"
    # controls: the documents' settings judge the row (MISMATCH for the wrong value), and no settings judge as before
    assert compare(_documented("scalar.reference_h=0.1"), measured, settings={"scalar": {"reference_h": 0.1}}
                   ).status.item() == "MISMATCH"
    assert compare(_documented("scalar.reference_h=0.1"), empty).status.item() == "MISSING"


def test_the_shipped_table_declares_settings_the_default_configuration_meets():
    """Every documented row's declared settings are config.yaml's, except where config.yaml chooses otherwise on
    purpose (G6 times checkpointing at batch 1, the documents at 8): those rows read not judged."""
    import yaml
    from pathlib import Path

    cfg = yaml.safe_load((Path(__file__).parents[1] / "config.yaml").read_text())
    table = documented.load()
    differing = {(r.id, r.quantity) for r in table.itertuples() if settings.differences(r.config, cfg)}
    assert differing == {("G6", "checkpoint_time_overhead_pct"), ("G6", "checkpoint_time_overhead_pct_transformers")}
    assert (table.config != "").sum() > len(table) / 2
