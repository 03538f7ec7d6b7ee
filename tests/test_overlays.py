"""Test overlays (.test/*.yaml) list only the keys they change: the rest comes from config.yaml."""

from __future__ import annotations

import yaml
from snakemake.utils import update_config

from conftest import ROOT


def restated(overlay: dict, base: dict, path: str = "") -> list[str]:
    """Dotted keys whose overlay value equals the base value (a restated fact that can drift)."""
    out = []
    for key, val in overlay.items():
        where = f"{path}.{key}" if path else key
        if isinstance(val, dict) and isinstance(base.get(key), dict):
            out += restated(val, base[key], where)
        elif key in base and base[key] == val:
            out.append(where)
    return out


def test_smoke_overlays_restate_no_key():
    base = yaml.safe_load((ROOT / "config.yaml").read_text())
    for name in ("config.yaml", "matrix.yaml"):
        overlay = yaml.safe_load((ROOT / ".test" / name).read_text())
        assert restated(overlay, base) == [], f".test/{name} restates config.yaml"


def test_restated_finds_an_equal_leaf_and_snakemake_merges_key_by_key():
    base = {"charlm": {"train": {"steps": 1000, "lr": 0.002}}, "seed": 0}
    assert restated({"charlm": {"train": {"steps": 12, "lr": 0.002}}}, base) == ["charlm.train.lr"]  # control
    merged = {"charlm": {"train": dict(base["charlm"]["train"])}, "seed": 0}
    update_config(merged, {"charlm": {"train": {"steps": 12}}})  # Snakemake's own overlay merge
    assert merged["charlm"]["train"] == {"steps": 12, "lr": 0.002}  # lr kept: the overlay need not restate it
