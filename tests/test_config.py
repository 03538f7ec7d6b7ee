"""Config validation: bad values stop Snakemake before any job, naming the key."""

import copy

import pytest
import yaml

from adbench.config import ConfigError, check_config

from conftest import ROOT, snakemake

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"


@pytest.fixture
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_shipped_config_and_smoke_overlay_are_valid(config):
    check_config(config, SCHEMA)
    check_config(deep_update(copy.deepcopy(config), yaml.safe_load((ROOT / ".test/config.yaml").read_text())), SCHEMA)


def deep_update(base, overlay):
    """Merge like Snakemake merges --configfile overlays: nested dicts key by key."""
    for key, val in overlay.items():
        base[key] = deep_update(base.get(key, {}), val) if isinstance(val, dict) else val
    return base


def _set(cfg, dotted, value):
    *parents, leaf = dotted.split(".")
    node = cfg
    for p in parents:
        node = node[p]
    if value is KeyError:
        del node[leaf]
    else:
        node[leaf] = value


@pytest.mark.parametrize("key, value, expected", [
    ("timing.rounds", KeyError, "'timing.rounds' is missing"),
    ("timing.rounds", 0, "'timing.rounds' = 0 is out of range: allowed >= 3"),
    ("scalar.a", "1.5", "'scalar.a' = '1.5' has the wrong type"),
    ("scalar.sweep_h", [0.1, -1e-3], "'scalar.sweep_h.1' = -0.001 is out of range: allowed > 0"),
    ("device", "tpu", "'device' = 'tpu' is not one of ['cpu', 'cuda']"),
    ("timing.processes", 1.5, "'timing.processes' = 1.5 has the wrong type"),
    ("scalar.directional.h", 0, "'scalar.directional.h' = 0 is out of range"),
    ("scalar.typo", 1, "unknown key(s)"),
])
def test_bad_values_name_the_key(config, key, value, expected):
    _set(config, key, value)
    with pytest.raises(ConfigError) as err:
        check_config(config, SCHEMA)
    assert expected in str(err.value)


def test_snakemake_stops_before_any_job(project):
    text = (project / "config.yaml").read_text().replace("rounds: 11", "rounds: 0")
    (project / "config.yaml").write_text(text)
    res = snakemake(project, "--cores", "1", "-n")
    assert res.returncode != 0
    assert "timing.rounds" in res.stderr + res.stdout
    assert not (project / "results").exists()
