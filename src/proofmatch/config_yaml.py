"""A config file read as YAML, strictly: duplicate keys refused, aliases that expand past a bound
refused, every error naming the file, the line and what to fix (:class:`ConfigError`).

Apart from :mod:`proofmatch.config` (the schema, validation and defaults) because reading a file
safely is its own concern and needs nothing of the schema; :mod:`proofmatch.config` re-exports
:class:`ConfigError` and :func:`load_yaml`, where every caller takes them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A configuration value that the schema rejects."""


#: Most characters of a value an error message quotes.
QUOTE_CHARS = 120
#: Most values (mappings, lists, scalars) a config file may hold once its aliases are expanded.
MAX_CONFIG_VALUES = 100_000


def short(text: str, limit: int = QUOTE_CHARS * 2) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader that refuses a key given twice in one mapping (plain YAML keeps the last)."""


def _strict_mapping(
    loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False
) -> dict[Any, Any]:
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                f"in the mapping starting at line {node.start_mark.line + 1}",
                node.start_mark,
                f"duplicate key {key!r} (first at line {seen[key].line + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)


def load_yaml(path: str | os.PathLike) -> Any:
    """One YAML file, duplicate keys refused; any error names the file and line and what to fix."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"config file {path}: cannot be read ({type(exc).__name__}: {short(str(exc))})"
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"config file {path}, line {line}, column {column}: byte {data[exc.start]:#04x} is "
            "not UTF-8; fix: save the file as UTF-8"
        ) from None
    try:
        loaded = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = short(" ".join(filter(None, [exc.context, exc.problem])))
        fix = (
            "give each key once"
            if "duplicate key" in (exc.problem or "")
            else "fix the YAML syntax there (indent with spaces, quote values with ': ' or '#')"
        )
        raise ConfigError(f"config file {path}{where}: {what}; fix: {fix}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path}: {short(str(exc))}") from None
    if _expanded_size(loaded, MAX_CONFIG_VALUES) > MAX_CONFIG_VALUES:
        raise ConfigError(
            f"config file {path}: its aliases (*name) expand to more than "
            f"{MAX_CONFIG_VALUES:,} values; fix: write the values out, or alias less"
        )
    return loaded


def _expanded_size(value: Any, cap: int) -> int:
    """How many values ``value`` holds with every shared (aliased) part counted each time it is
    used; counting stops past ``cap``."""
    count, stack = 0, [value]
    while stack and count <= cap:
        v = stack.pop()
        count += 1
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return count
