"""``proofmatch config``: the merged configuration with every default, and config/README.md from the
schema (every key with its type, allowed values, default and description).

Generated, never edited by hand (``proofmatch config --readme config/README.md``;
tests/test_config_readme.py fails when the file and the schema differ).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from proofmatch.config import load_config, resolve_schema, schema, schema_keys

README_HEADER = """# Configuration

<!-- Generated from src/proofmatch/schemas/config.schema.yaml by
     `proofmatch config --readme config/README.md`: edit the schema, not this file
     (tests/test_config_readme.py fails when the two differ). -->

The workflow reads `config/config.yaml` (the demo: the project's generated corpus and tiny
models; the demo's choices, each at its default below) and any override given after it,
`snakemake --configfile config/config.yaml config/paper.yaml ...`, merged key by key:
`config/paper.yaml` (the paper's corpus and model sizes), `config/stacks.yaml` (the Stacks
project chapters), `config/smoke.yaml` (fewest epochs and 64-token inputs, for the end-to-end
test). The merged configuration is validated once, before any job runs; a wrong value is
reported with its key and a fix, and a key left out takes its default. Checks across keys run in the same pass
(`filter.min_tokens` ≤ `max_tokens`, a known `filter.language`, heads dividing
`pretrain.hidden_size`, `matching.max_length` within ScratchBERT's positions), then the paths
(each corpus folder and metadata file exists, `matching.mathbert` is a folder or a hub id). Each
config file is read strictly: a key given twice is refused, a YAML error or a byte that is not
UTF-8 names the file, line and column, aliases (`*name`) expanding past 100,000 values are
refused, NaN and infinities are refused, and an error quotes a value by its first 240 characters
at most. Snakemake itself reads a `--configfile` before the workflow's own check and reports a
syntax error or non-UTF-8 bytes there without naming the file: `proofmatch check-config FILE...`
runs every check the workflow runs before any job (after `config/config.yaml`, as Snakemake
merges them) and names them. `proofmatch config FILE...` prints the merged configuration with
every default filled in.
"""


def _allowed(s: dict[str, Any]) -> str:
    """What a value may be, in words: ``integer ≥ 1``, ``number in (0, 1]``, ``one of a, b``."""
    if "enum" in s:
        return "one of " + ", ".join(f"`{v}`" for v in s["enum"])
    if "oneOf" in s:
        return "; or ".join(_allowed(alt) for alt in s["oneOf"])
    types = s.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    nullable = "null" in types
    kind = " or ".join(t for t in types if t != "null")
    if kind == "array":
        item = s.get("items", {})
        item_kind = item.get("type", "value")
        item_kind = " or ".join(item_kind) if isinstance(item_kind, list) else item_kind
        kind = f"list of {_allowed(item) if 'enum' in item else item_kind}"
        if "minItems" in s and s.get("minItems") == s.get("maxItems"):
            kind = f"{kind} ({s['minItems']} items)"
        if item.get("maxLength") == 1:
            kind += " (one character each)"
    low = (
        ("≥", s["minimum"])
        if "minimum" in s
        else (">", s["exclusiveMinimum"])
        if "exclusiveMinimum" in s
        else None
    )
    high = (
        ("≤", s["maximum"])
        if "maximum" in s
        else ("<", s["exclusiveMaximum"])
        if "exclusiveMaximum" in s
        else None
    )
    if low and high:
        kind += f" in {'[' if low[0] == '≥' else '('}{low[1]}, {high[1]}{']' if high[0] == '≤' else ')'}"
    elif low or high:
        op, value = low or high
        kind += f" {op} {value}"
    if "pattern" in s:
        kind += f" matching `{s['pattern']}`"
    return kind + (", or null" if nullable else "")


def _default(s: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    return "`" + json.dumps(s["default"], ensure_ascii=False) + "`" if "default" in s else "–"


def schema_markdown(root: dict[str, Any] | None = None) -> str:
    """config/README.md: per top-level section, its description and a table of its keys
    (default, allowed values, description)."""
    from tabulate import tabulate

    root = root or schema()
    keys = schema_keys(root)
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    parts = [README_HEADER]
    for section, sub in root["properties"].items():
        s = resolve_schema(sub, root)
        rows = [
            (
                f"`{path}`",
                _default(k, req),
                cell(_allowed(k)),
                cell(k.get("description", "")).replace("*", "\\*"),
            )
            for path, k, req in keys
            if (path == section or path.startswith((section + ".", section + "[]")))
            and k.get("type") != "object"
        ]
        parts.append(f"## `{section}`\n")
        if s.get("type") == "object" and s.get("description"):
            parts.append(s["description"][0].upper() + s["description"][1:] + ".\n")
        parts.append(
            tabulate(
                rows,
                headers=["key", "default", "allowed", "description"],
                tablefmt="github",
                disable_numparse=True,
            )
            + "\n"
        )
    return "\n".join(parts)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "configs", nargs="*", help="config YAML files, merged in order (later ones win)"
    )
    parser.add_argument(
        "--readme", default=None, help="write the keys' documentation (config/README.md) here"
    )


def main(args: argparse.Namespace) -> int:
    """Print the merged, validated configuration with every default, or write config/README.md."""
    if args.readme:
        Path(args.readme).write_text(schema_markdown(), encoding="utf-8")
    if args.configs or not args.readme:
        yaml.safe_dump(load_config(*args.configs), sys.stdout, allow_unicode=True, sort_keys=False)
    return 0
