"""Configuration: loading, validation with the schema's defaults, and config/README.md.

``src/proofmatch/schemas/config.schema.yaml`` is the one source of truth: every key has a
description and a default. :func:`validate_config` runs once before any job (the workflow) or
command (the CLI): a wrong value is reported with its dotted key, what is wrong and what the
schema accepts, so a user can fix it without reading code, and every key left out gets its
default, so no rule or function repeats one: a library parameter or command-line option that
mirrors a key takes :func:`default` (:func:`add_option`), held to it by ``tests/test_defaults.py``.
``config/README.md`` is generated from the schema
(``proofmatch config --readme config/README.md``, :mod:`proofmatch.config_readme`).
"""

from __future__ import annotations

import argparse
import copy
import functools
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from proofmatch.config_yaml import ConfigError, load_yaml, short
from proofmatch.corpora import CorpusError, corpus_folders
from proofmatch.registry.encoders import ENCODERS, encoder_spec, run_names, split_run_name
from proofmatch.registry.sources import SOURCES


def schema() -> dict[str, Any]:
    """The config schema, with the ``encoder-mode`` names of the encoder registry as the values
    of every list of runs (``definitions.run``: the schema file leaves them to the registry)."""
    loaded = yaml.safe_load(schema_path().read_text(encoding="utf-8"))
    loaded["definitions"]["run"]["enum"] = run_names()
    return loaded


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
        return "add the missing key (see config/README.md)"
    if err.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return f"use a value allowed by {err.validator} {err.validator_value}"
    if err.validator == "type":
        return f"use a value of type {err.validator_value}" + (
            f" ({s['description']})" if "description" in s else ""
        )
    return s.get("description", "see config/README.md")


def _fill_defaults(validator_class: type) -> type:
    """``validator_class`` that also sets every absent property with a ``default`` (a copy of it)
    before validating it: the jsonschema FAQ's recipe, as ``snakemake.utils.validate`` uses it."""
    properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, props, instance, schema) -> Iterator[jsonschema.ValidationError]:
        if isinstance(instance, dict):
            for name, sub in props.items():
                if "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from properties(validator, props, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_Validator = _fill_defaults(jsonschema.Draft202012Validator)


def _non_finite(value: Any, key: str = "") -> Iterator[str]:
    """The dotted keys of NaN and infinite numbers in a loaded config."""
    if isinstance(value, float) and not math.isfinite(value):
        yield key or "<top level>"
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _non_finite(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _non_finite(v, f"{key}.{i}")


def validate_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Fill in the schema's defaults (in place: the workflow's ``config`` is completed for every
    rule and script) and raise :class:`ConfigError` naming every bad key and its fix; return ``cfg``.

    Why not ``snakemake.utils.validate`` as well: one validation, which the CLI runs too and
    which reports every error with its key and fix, not only the first."""
    bad_numbers = [
        f"config key {key}: {cfg_value} is not a finite number; fix: a finite value"
        for key, cfg_value in ((k, _value_at(cfg, k)) for k in _non_finite(cfg))
    ]
    if bad_numbers:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(bad_numbers))
    errors = sorted(_Validator(schema()).iter_errors(cfg), key=lambda e: list(map(str, e.path)))
    if errors:
        lines = []
        for e in errors:
            key = ".".join(str(p) for p in e.path) or "<top level>"
            lines.append(f"config key {key}: {short(e.message)}; fix: {short(_hint(e))}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    if abs(sum(cfg["splits"]["fractions"]) - 1.0) > 1e-6:
        raise ConfigError("config key splits.fractions: must sum to 1; fix: e.g. [0.8, 0.1, 0.1]")
    if cfg["seed"] not in cfg["report"]["seeds"]:
        raise ConfigError(
            f"config key report.seeds: must include seed ({cfg['seed']}), whose runs are the "
            f"tables' own; fix: e.g. [{cfg['seed']}, {cfg['seed'] + 1}, {cfg['seed'] + 2}]"
        )
    _check_corpus(cfg["corpus"], "corpus")
    for i, entry in enumerate(cfg.get("transfer", {}).get("corpora", [])):
        _check_corpus(entry, f"transfer.corpora.{i}")
        if SOURCES[entry["source"]].after_extraction:
            raise ConfigError(
                f"config key transfer.corpora.{i}.source: {entry['source']} brings split data, "
                "not a corpus to score; fix: a transfer corpus of XHTML articles (dir, latex, demo)"
            )
    if SOURCES[cfg["corpus"]["source"]].after_extraction and cfg["pretrain"]["text"] == "corpus":
        raise ConfigError(
            f"config key pretrain.text: corpus needs the articles' XHTML, which source "
            f"{cfg['corpus']['source']} does not bring; fix: pretrain.text: pairs"
        )
    check_config(cfg)
    return cfg


def _value_at(cfg: Any, key: str) -> Any:
    for part in key.split("."):
        cfg = cfg[int(part)] if isinstance(cfg, list) else cfg[part]
    return cfg


def check_config(cfg: dict[str, Any]) -> None:
    """The checks across keys that the schema cannot state (a validated ``cfg``); all errors at once."""
    errors = []
    flt = cfg["filter"]
    if flt["min_tokens"] > flt["max_tokens"]:
        errors.append(
            f"config key filter.min_tokens: {flt['min_tokens']} is more than filter.max_tokens "
            f"{flt['max_tokens']}, so every pair would be dropped; fix: min_tokens <= max_tokens"
        )
    language = flt["language"]
    codes = _language_codes()
    if language is not None and codes and language not in codes:
        errors.append(
            f"config key filter.language: {language!r} is not a language code the detector (CLD2) knows, "
            f"so every article would be dropped; fix: a code such as en, fr, de (or null to keep all)"
        )
    bert = cfg["pretrain"]
    if bert["hidden_size"] % bert["num_attention_heads"]:
        errors.append(
            f"config key pretrain.num_attention_heads: {bert['num_attention_heads']} heads do not divide "
            f"pretrain.hidden_size {bert['hidden_size']}; fix: a divisor of hidden_size "
            f"(BERT-base: 768 and 12)"
        )
    positions = max(
        512, bert["max_length"]
    )  # proofmatch.models.pretrain: the position table's size
    if cfg["matching"]["max_length"] > positions:
        errors.append(
            f"config key matching.max_length: {cfg['matching']['max_length']} tokens exceed ScratchBERT's "
            f"{positions} positions (max(512, pretrain.max_length)); fix: at most {positions}"
        )
    errors += _left_out_but_used(cfg) + _unservable(cfg)
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(errors))


def _left_out_but_used(cfg: dict[str, Any]) -> list[str]:
    """A run that ``report.leave_out`` names but another run list still asks for."""
    left = set(cfg["report"]["leave_out"])
    lists = {
        "fusion.runs": cfg["fusion"]["runs"],
        "report.seed_runs": cfg["report"]["seed_runs"],
        "report.scaling_runs": cfg["report"]["scaling_runs"],
        "transfer.runs": cfg.get("transfer", {}).get("runs", []),
        "fusion.search_runs": cfg["fusion"]["search_runs"],
    }
    return [
        f"config key {key}: {name} is also in report.leave_out; fix: drop it from one of the two"
        for key, names in lists.items()
        for name in names
        if name in left
    ]


def _unservable(cfg: dict[str, Any]) -> list[str]:
    """A search run whose encoder starts from a checkpoint that is not configured: its index
    could not be built (its table rows say "not run"; an index has nothing to show)."""
    errors = []
    for name in cfg["fusion"]["search_runs"]:
        key = encoder_spec(split_run_name(name)[0]).checkpoint
        if key and not cfg["matching"][key]:
            errors.append(
                f"config key fusion.search_runs: {name} starts from matching.{key}, which is not "
                f"set; fix: set matching.{key} to a local path or hub id, or serve another run "
                "(npt-local)"
            )
    return errors


@functools.lru_cache(maxsize=1)
def _language_codes() -> frozenset[str]:
    """The language codes CLD2 (polyglot's detector) reports; empty when it is not installed."""
    try:
        import pycld2
    except ImportError:
        return frozenset()
    return frozenset(code for _, code in pycld2.LANGUAGES)


#: A Hugging Face hub id: ``name`` or ``owner/name``.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def check_paths(cfg: dict[str, Any]) -> None:
    """The checks that read the file system, before any job (the workflow runs them; tests with
    made-up folders do not): every corpus folder read from exists, and each encoder's checkpoint
    key (``matching.mathbert``) is an existing folder or a hub id."""
    errors = []
    entries = [("corpus", cfg["corpus"])] + [
        (f"transfer.corpora.{i}", e)
        for i, e in enumerate(cfg.get("transfer", {}).get("corpora", []))
    ]
    for key, entry in entries:
        reads = SOURCES[entry["source"]].reads  # what its folders hold; None: it reads none
        if reads is None:
            continue
        dirs = entry["dir"] if isinstance(entry["dir"], list) else [entry["dir"]]
        for j, d in enumerate(dirs):
            if not Path(d).is_dir():
                sub = f"{key}.dir" + (f".{j}" if isinstance(entry["dir"], list) else "")
                errors.append(
                    f"config key {sub}: folder {d} does not exist; fix: the folder of the "
                    f"{reads} (relative paths start at the working folder)"
                )
        tables = entry.get("metadata")
        for j, t in enumerate(tables if isinstance(tables, list) else [tables]):
            if t is not None and not Path(t).is_file():
                sub = f"{key}.metadata" + (f".{j}" if isinstance(tables, list) else "")
                errors.append(
                    f"config key {sub}: file {short(str(t))} does not exist; fix: the path of "
                    "the metadata table (CSV/TSV/Parquet; relative paths start at the working "
                    "folder), or null"
                )
    for spec in ENCODERS.values():
        if spec.checkpoint:
            errors.extend(_check_checkpoint(cfg["matching"][spec.checkpoint], spec.checkpoint))
    given = cfg["pretrain"].get("checkpoint")
    if given:
        folder = Path(given)
        weights = [w for w in ("model.safetensors", "pytorch_model.bin") if (folder / w).is_file()]
        lacks = [f for f in ("config.json", "vocab.txt") if not (folder / f).is_file()]
        if not folder.is_dir() or lacks or not weights:
            errors.append(
                f"config key pretrain.checkpoint: {given} is not a BERT checkpoint folder"
                + (
                    f" (no {', '.join(lacks + ([] if weights else ['pytorch_model.bin or model.safetensors']))})"
                    if folder.is_dir()
                    else " (no such folder)"
                )
                + "; fix: the folder of the released ScratchBERT: config.json, pytorch_model.bin "
                "or model.safetensors, vocab.txt"
            )
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(errors))


def _check_checkpoint(given: str | None, key: str) -> list[str]:
    """The error, if any, of ``matching.<key>``: a checkpoint that is neither an existing folder
    nor a hub id (MathBERT's: ``tbs17/MathBERT``)."""
    if (
        given is None
        or Path(given).expanduser().exists()
        or (_HUB_ID.fullmatch(given) and not given.startswith((".", "~")))
    ):
        return []
    return [
        f"config key matching.{key}: {given} is neither an existing folder nor a hub id "
        f"(owner/name); fix: the path of a downloaded checkpoint, a hub id such as "
        f"tbs17/MathBERT, or null"
    ]


def _check_corpus(entry: dict[str, Any], key: str) -> None:
    """Several folders only where the source allows them (dir), each with at most one metadata
    table where the manifest reads the folders as they are (proofmatch.registry.sources)."""
    spec = SOURCES[entry["source"]]
    if spec.reads is not None and not spec.several and isinstance(entry["dir"], list):
        raise ConfigError(
            f"config key {key}.dir: source {spec.name} reads one folder of {spec.reads}; "
            f"fix: one folder (convert several into one, or use source dir on their XHTML)"
        )
    if spec.reads is not None and spec.folder is None:
        try:
            corpus_folders(entry["dir"], entry["metadata"], key)
        except CorpusError as exc:
            raise ConfigError(str(exc)) from exc


def load_config(*paths: str | os.PathLike) -> dict[str, Any]:
    """Load and deep-merge YAML files (later files override earlier ones), then validate."""
    cfg: dict[str, Any] = {}
    for p in paths:
        loaded = load_yaml(p) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(
                f"config file {p}: holds a {type(loaded).__name__}, not keys; fix: top-level keys such as corpus:"
            )
        cfg = deep_merge(cfg, loaded)
    return validate_config(cfg)


def run_matching(
    matching: dict[str, Any], encoder: str, decode: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The part of the config's ``matching`` block that one training run of ``encoder`` depends on:
    ``max_length`` and the keys its spec reads (:meth:`proofmatch.registry.encoders.EncoderSpec.reads`).

    With ``decode`` (the config's ``decode`` block) and ``hybrid_selection: global`` in the
    encoder's block, also ``decode`` (``topk``, ``exact_max_n``): a hybrid run then selects on the
    dev accuracy of global decoding as the config's evaluation decodes (``config/paper.yaml``:
    ``exact_max_n: 1``). Without it (``hybrid_selection: local``, the demo and Stacks) the part
    holds no decode key, so a change of ``decode.*`` re-evaluates those runs but retrains none.

    The workflow passes exactly this as a job's ``params`` (Snakemake reruns a job when its params
    change, so changing BERT settings never retrains NPT), and
    :meth:`proofmatch.models.params.TrainParams.from_config` flattens it: one definition of what a
    run reads, torch-free so the Snakefile can import it.
    """
    spec = encoder_spec(encoder)
    part = {"max_length": matching["max_length"], **{k: matching[k] for k in spec.reads()}}
    if decode is not None and matching[spec.block].get("hybrid_selection") == "global":
        part["decode"] = {"topk": decode["topk"], "exact_max_n": decode["exact_max_n"]}
    return part


def settings(config: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The part of ``config`` under the dotted ``keys`` (``report``: the whole block,
    ``splits.pr_category``: one value), nested as in the config; every other key left out.

    The workflow hands a job that needs config values beyond single ones exactly this as a param
    (``params.settings``): Snakemake reruns a job when its params change, and a job reads no
    other setting (its script never touches ``snakemake.config``; ``tests/test_params.py``), so
    no changed key can leave an artifact stale. A key the job then reads but was not declared
    fails with ``KeyError`` instead of being read silently.
    """
    out: dict[str, Any] = {}
    for key in keys:
        *path, last = key.split(".")
        src, dst = config, out
        for part in path:
            src = src[part]
            dst = dst.setdefault(part, {})
        dst[last] = copy.deepcopy(src[last])
    return out


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = (
            deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
        )
    return out


# ----------------------------------------------------------------------------- config/README.md


def resolve_schema(sub: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """A property's schema with its ``$ref`` followed (the property's own keys win)."""
    if "$ref" not in sub:
        return sub
    target: Any = root
    for part in sub["$ref"].removeprefix("#/").split("/"):
        target = target[part]
    return {**resolve_schema(target, root), **{k: v for k, v in sub.items() if k != "$ref"}}


def schema_keys(root: dict[str, Any] | None = None) -> list[tuple[str, dict[str, Any], bool]]:
    """Every key of the schema as (dotted path, its resolved schema, required), depth first;
    a list of objects contributes ``path[].key`` rows."""
    root = root or schema()
    out: list[tuple[str, dict[str, Any], bool]] = []

    def walk(obj: dict[str, Any], prefix: str) -> None:
        for name, sub in obj.get("properties", {}).items():
            s = resolve_schema(sub, root)
            path = f"{prefix}{name}"
            out.append((path, s, name in obj.get("required", [])))
            if s.get("type") == "object":
                walk(s, path + ".")
            elif s.get("type") == "array" and s.get("items", {}).get("type") == "object":
                walk(s["items"], path + "[].")

    walk(root, "")
    return out


@functools.lru_cache(maxsize=1)
def _defaults() -> dict[str, Any]:
    """Every schema key's default by dotted path, read once: library signatures take their
    defaults from here at import time, and parsing the schema for each would cost seconds."""
    return {path: s["default"] for path, s, _ in schema_keys() if "default" in s}


def default(key: str) -> Any:
    """The schema's default of a dotted key (``"filter.min_tokens"``, ``"transfer.corpora[].latex.timeout_s"``):
    what a library parameter or a CLI option that mirrors a config key defaults to, instead of
    repeating the value (``tests/test_defaults.py`` holds them to it). A fresh copy each call."""
    found = _defaults()
    if key not in found:
        raise KeyError(f"no config key {key!r} with a default in the schema (see config/README.md)")
    return copy.deepcopy(found[key])


def add_option(
    parser: argparse.ArgumentParser, *flags: str, key: str, help: str = "", **kwargs: Any
) -> argparse.Action:
    """A command-line option that mirrors the config key ``key``: its default is the schema's
    (:func:`default`) and its help names the key and that default, so no CLI retypes a value the
    workflow takes from the config. ``kwargs`` go to ``add_argument`` (type, nargs, choices, ...)."""
    text = (
        f"{help} (config {key}; default %(default)s)"
        if help
        else f"config {key}; default %(default)s"
    )
    return parser.add_argument(*flags, default=default(key), help=text, **kwargs)


# ----------------------------------------------------------------------------- check-config

#: What Snakemake reads first: the workflow's own config file, then each ``--configfile``.
WORKFLOW_CONFIG = Path("config/config.yaml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "configs",
        nargs="*",
        help="config YAML files as given to snakemake --configfile, merged in order after "
        "config/config.yaml (when the working folder has one)",
    )


def main(args: argparse.Namespace) -> int:
    """``proofmatch check-config``: every check the workflow runs before any job (YAML, schema,
    folders and files), each error naming the file and line or the key. Snakemake reads a
    ``--configfile`` itself before the workflow's own check runs, and reports a YAML error or
    non-UTF-8 bytes there without naming the file; this names them."""
    files = [WORKFLOW_CONFIG] if WORKFLOW_CONFIG.is_file() else []
    files += [Path(c) for c in args.configs]
    if not files:
        raise ConfigError("no config file: give one, or run in a folder with config/config.yaml")
    check_paths(load_config(*files))
    print(f"config ok: {', '.join(map(str, files))}")
    return 0
