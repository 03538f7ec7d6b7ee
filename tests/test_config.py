"""adbench.config's machinery: check_config names the offending key for every kind of schema error, bounds
carry their reason, the helpers behind the checks of meaning, the family modules it gathers, and reading the
config imports no torch. The bad values of each family's keys are one table in tests/test_bad_configs.py."""

import copy
from pathlib import Path

import pytest
import yaml

from adbench import config as C
from adbench.config import ConfigError, check_config

from conftest import ROOT

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"


@pytest.fixture
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def deep_update(base, overlay):
    """Merge like Snakemake merges --configfile overlays: nested dicts key by key."""
    for key, val in overlay.items():
        base[key] = deep_update(base.get(key, {}), val) if isinstance(val, dict) else val
    return base


SHIPPED = yaml.safe_load((ROOT / "config.yaml").read_text())


def merged(over: dict) -> dict:
    """config.yaml with `over` laid on top (a fresh copy each time)."""
    return deep_update(copy.deepcopy(SHIPPED), copy.deepcopy(over))


def problems(over: dict) -> str:
    """check_config's message for config.yaml + overlay ('' when it passes)."""
    try:
        check_config(merged(over), SCHEMA)
    except ConfigError as err:
        return str(err)
    return ""


def test_shipped_config_and_smoke_overlay_are_valid(config):
    check_config(config, SCHEMA)
    check_config(deep_update(copy.deepcopy(config), yaml.safe_load((ROOT / ".test/config.yaml").read_text())), SCHEMA)


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


def test_strict_is_a_boolean_and_the_command_line_spelling_is_named():
    """`--config strict=true` reaches the config as the text 'true' (Snakemake reads only True / False as
    booleans): the message says how to write it. Negative control: both booleans pass."""
    message = problems({"strict": "true"})
    assert "config key 'strict' = 'true' has the wrong type: expected boolean" in message
    assert "(on the command line write --config strict=True)" in message
    assert problems({"strict": True}) == "" and problems({"strict": False}) == ""
    number = problems({"strict": 1})   # make report STRICT=1 passes strict=True, not 1
    assert "config key 'strict' = 1 has the wrong type: expected boolean" in number
    assert "on the command line" not in number   # a number: no spelling hint


def test_bounds_carry_their_reason():
    message = problems({"timing": {"processes": 21}})
    assert "'timing.processes' = 21 is out of range: allowed <= 20" in message
    assert "multiplies the DAG" in message


@pytest.mark.parametrize("values, order, broken", [
    ([0.1, 0.01, 0.001], "strictly monotonic", False),
    ([1, 2, 3], "strictly monotonic", False),        # either direction: the first change sets it
    ([5, 5, 16], "monotonic", False),
    ([5, 5, 16], "strictly monotonic", True),
    ([5, 16, 5], "monotonic", True),
    ([1], "strictly increasing", False),
    ([2, 1], "increasing", True),
    ([1, 1], "increasing", False),
    ([1, 1], "strictly increasing", True),
])
def test_monotonic_orders(values, order, broken):
    assert (C.monotonic(values, order) is not None) is broken


def test_outside_bounds():
    assert C.outside(2, 0, 2) is None and C.outside(0, 0, 2) is None
    assert C.outside([0, 3, 4], 0, 2) == "3, 4 are outside 0..2"
    assert C.outside(1, 2, None) == "1 is below 2"
    assert C.outside(65519.9, 0, 65520, below=True) is None and C.outside(65520.0, 0, 65520, below=True)


def test_every_familys_config_checks_module_is_gathered():
    on_disk = sorted(p.parent.name for p in (ROOT / "src/adbench").glob("*/config_checks.py"))
    assert [m.__name__ for m in C.family_checks()] == [f"adbench.{f}.config_checks" for f in on_disk]
    assert len(on_disk) > 1
    assert C.gathered("CONFORMING") == [r for m in C.family_checks() for r in getattr(m, "CONFORMING", [])]
    # control: a module list without the table, or without modules, gathers nothing
    assert C.gathered("CONFORMING", [Path]) == [] and C.gathered("IN_RANGE", []) == []


def test_reading_the_config_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys, yaml; from adbench.config import check_config; "
            f"check_config(yaml.safe_load(open({str(ROOT / 'config.yaml')!r})), {str(SCHEMA)!r}); "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
