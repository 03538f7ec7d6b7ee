"""The results contract: exact CSVs, atomic writes."""

import os

import pandas as pd
import pytest

from adbench import io


def test_csv_round_trips_float64_exactly(tmp_path):
    df = pd.DataFrame({"x": [0.1, 1 / 3, 2.7755575615628914e-17, -0.18070663892364855], "name": list("abcd")})
    io.write_csv(df, tmp_path / "t.csv")
    text = (tmp_path / "t.csv").read_text()
    assert text.splitlines()[0] == "x,name"  # one header row, no index column
    back = io.read_csv(tmp_path / "t.csv")
    assert back.x.tolist() == df.x.tolist()


def test_failed_write_leaves_neither_target_nor_temp(tmp_path, monkeypatch):
    target = tmp_path / "out.csv"

    def boom(*a, **k):
        raise KeyboardInterrupt("killed mid-way")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        io.write_csv(pd.DataFrame({"a": [1]}), target)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_previous_complete_file(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    io.write_json({"v": 1}, target)
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        io.write_json({"v": 2}, target)
    assert target.read_text().strip().endswith("}") and '"v": 1' in target.read_text()
