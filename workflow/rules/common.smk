# Shared helpers: config checks, provenance params and the registry of report inputs.
import sys
from functools import lru_cache

# Import the checkout's package (the one the scripts run), even before `pip install -e`.
sys.path.insert(0, str(ROOT / "src"))

from adbench.config import ConfigError, check_config
from adbench.provenance import code_hash, versions

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
try:
    check_config(config, SCHEMA)
except ConfigError as err:
    raise WorkflowError(str(err)) from None

ENV = "../../envs/adbench.yaml"
# family -> files the report reads (tables, values, figures, meta.json); each rules file
# appends its own, and render_report takes them all as input.
REPORT_FILES = {}


def register(family, *paths):
    """Add output paths of a family to the report's inputs."""
    REPORT_FILES.setdefault(family, []).extend(str(p) for p in paths)


@lru_cache(maxsize=None)
def _code(modules):
    return code_hash(*modules)


def prov(*modules, packages=("torch", "numpy"), seed=None, threads=None, uses_device=False):
    """params.prov: the versions and package-code hash a job depends on, plus device,
    seed and torch threads. In params, so a change re-runs exactly the jobs affected.
    Only rules with uses_device=True run on config["device"]; the rest are CPU probes."""
    return {
        "versions": versions(("python", *packages)),
        "code": _code(tuple(sorted(modules))),
        "device": config["device"] if uses_device else "cpu",
        "seed": config["seed"] if seed is None else seed,
        "torch_threads": threads or config["threads"],
    }


def report_inputs(wildcards=None):
    """Every registered family output, in family order."""
    return [p for paths in REPORT_FILES.values() for p in paths]


def report_values(wildcards=None):
    """The registered values.csv files: what the comparison joins to the documented table."""
    return [p for p in report_inputs() if Path(p).name == "values.csv"]
