"""Config validation with messages that name the offending key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml


class ConfigError(ValueError):
    """A config value is missing, of the wrong type, or out of range."""


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<top level>"


def _describe(err: jsonschema.ValidationError) -> str:
    key = _key(err.absolute_path)
    if err.validator == "required":
        missing = err.message.split("'")[1]
        return f"config key '{_key([*err.absolute_path, missing])}' is missing"
    if err.validator == "additionalProperties":
        return f"config key '{key}': unknown key(s): {err.message.split('(')[-1].rstrip(')')}"
    if err.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bound = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[err.validator]
        return f"config key '{key}' = {err.instance!r} is out of range: allowed {bound} {err.validator_value}"
    if err.validator == "enum":
        return f"config key '{key}' = {err.instance!r} is not one of {err.validator_value}"
    if err.validator == "type":
        return f"config key '{key}' = {err.instance!r} has the wrong type: expected {err.validator_value}"
    return f"config key '{key}': {err.message}"


def load_schema(path: str | Path) -> dict:
    """Read the YAML JSON-schema."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def check_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Raise ConfigError listing every problem, each naming its key and allowed range."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_path))
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = "\n".join(f"  - {_describe(e)}" for e in errors)
        raise ConfigError(f"invalid configuration ({len(errors)} problem(s)):\n{lines}")
