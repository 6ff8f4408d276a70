"""Configuration loading and schema validation.

The workflow validates its config before any job runs; a wrong value is reported with its
dotted key, what is wrong, and what the schema accepts, so a user can fix it without reading code.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml


class ConfigError(ValueError):
    """A configuration value that the schema rejects."""


def schema() -> dict[str, Any]:
    text = resources.files("proofmatch").joinpath("schemas/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def schema_path() -> Path:
    return Path(str(resources.files("proofmatch").joinpath("schemas/config.schema.yaml")))


def _hint(err: jsonschema.ValidationError) -> str:
    s = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "additionalProperties":
        allowed = sorted((err.schema.get("properties") or {}).keys())
        return f"remove the unknown key or use one of: {', '.join(allowed)}"
    if err.validator == "enum":
        return f"use one of: {', '.join(map(str, err.validator_value))}"
    if err.validator == "required":
        return "add the missing key (see config/config.yaml for an example)"
    if err.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return f"use a value allowed by {err.validator} {err.validator_value}"
    if err.validator == "type":
        return f"use a value of type {err.validator_value}"
    return s.get("description", "see src/proofmatch/schemas/config.schema.yaml")


def validate_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Raise :class:`ConfigError` naming every bad key and its fix; return ``cfg`` unchanged."""
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(cfg), key=lambda e: list(e.path))
    if errors:
        lines = []
        for e in errors:
            key = ".".join(str(p) for p in e.path) or "<top level>"
            lines.append(f"config key {key}: {e.message}; fix: {_hint(e)}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    if abs(sum(cfg["splits"].get("fractions", [0.8, 0.1, 0.1])) - 1.0) > 1e-6:
        raise ConfigError("config key splits.fractions: must sum to 1; fix: e.g. [0.8, 0.1, 0.1]")
    if cfg["corpus"]["source"] == "dir" and not cfg["corpus"].get("dir"):
        raise ConfigError("config key corpus.dir: required when corpus.source is 'dir'; fix: set it to a folder of XHTML articles")
    return cfg


def load_config(*paths: str | os.PathLike) -> dict[str, Any]:
    """Load and deep-merge YAML files (later files override earlier ones), then validate."""
    cfg: dict[str, Any] = {}
    for p in paths:
        cfg = deep_merge(cfg, yaml.safe_load(Path(p).read_text()) or {})
    return validate_config(cfg)


def run_matching(matching: dict[str, Any], encoder: str) -> dict[str, Any]:
    """The part of the config's ``matching`` block that one training run of ``encoder`` depends on.

    The workflow passes exactly this as a job's ``params`` (Snakemake reruns a job when its params
    change, so changing BERT settings never retrains NPT), and :func:`proofmatch.train.run_params`
    flattens it: one definition of what a run reads, torch-free so the Snakefile can import it.
    """
    block = "npt" if encoder == "npt" else "bert"
    part = {"max_length": matching["max_length"], block: matching[block]}
    if encoder == "specter":
        part["specter"] = matching["specter"]
    if encoder == "mathbert":
        part["mathbert"] = matching.get("mathbert")
    return part


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
