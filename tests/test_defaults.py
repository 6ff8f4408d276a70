"""Every default lives in the schema (``config.schema.yaml``): a library parameter, dataclass
field or command-line option that mirrors a config key has no default, or the schema's.

Two checks hold that: the parameters and options listed in :data:`MIRRORS` / :data:`CLI_MIRRORS`
default to their key's ``config.default`` (or to nothing), and a walk over every function,
dataclass and CLI of the package finds no other default under a config key's name that is not
listed, here or as not mirroring one (:data:`NOT_MIRRORS`, with the reason). A new function that
types ``seed=0`` or ``min_tokens=20`` again fails the second check until it is listed, and the
first once its value drifts from the schema's.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import proofmatch
from proofmatch import cli, config

LATEX = {
    "timeout_s": "corpus.latex.timeout_s",
    "max_archive_mb": "corpus.latex.max_archive_mb",
    "max_files": "corpus.latex.max_files",
}
EXTRACT = {"max_file_mb": "extract.max_file_mb", "max_depth": "extract.max_depth"}
FILTER = {
    "language": "filter.language",
    "min_tokens": "filter.min_tokens",
    "max_tokens": "filter.max_tokens",
}
REPLACE = {
    "alpha": "replace.partial_alpha",
    "protected": "replace.protected",
    "rounding": "replace.partial_rounding",
}
SPLITS = {"fractions": "splits.fractions", "seed": "seed", "pr_category": "splits.pr_category"}
DECODE = {"topk": "decode.topk", "exact_max_n": "decode.exact_max_n", "seed": "seed"}
LIME = {"samples": "figure.lime_samples", "seed": "seed"}
PRETRAIN = {
    name: f"pretrain.{name}"
    for name in (
        "mlm_probability",
        "warmup_fraction",
        "weight_decay",
        "dropout",
        "micro_batch_size",
        "compile",
    )
}

# "module:qualified name" -> {parameter or field: the config key it mirrors}
MIRRORS: dict[str, dict[str, str]] = {
    "proofmatch.data.archives:Limits": LATEX,
    "proofmatch.data.xmlsafe:parse_document": {"max_depth": "extract.max_depth"},
    "proofmatch.data.extract:extract_bytes": {"max_depth": "extract.max_depth"},
    "proofmatch.data.extract:parse_article_bytes": {"max_depth": "extract.max_depth"},
    **{
        f"proofmatch.data.article_text:{f}": EXTRACT
        for f in ("article_paragraphs", "text_table", "article_text")
    },
    **{
        f"proofmatch.data.extract:{f}": EXTRACT
        for f in ("extract_file", "extract_files", "stream_files", "extract_shard", "extract_dir")
    },
    "proofmatch.data.filter_rules:classify": FILTER,
    "proofmatch.data.filters:filter_pairs": FILTER,
    "proofmatch.data.symbols:check_level": {"rounding": "replace.partial_rounding"},
    "proofmatch.data.symbols:shared_groups": {"protected": "replace.protected"},
    "proofmatch.data.symbols:plan_mapping": REPLACE,
    "proofmatch.data.symbols:unchanged_reason": {
        "alpha": "replace.partial_alpha",
        "rounding": "replace.partial_rounding",
    },
    "proofmatch.data.slots:replace_pair": REPLACE,
    "proofmatch.data.replace:replace_level_file": {**REPLACE, "seed": "seed"},
    "proofmatch.data.replace:replace_split_file": {**REPLACE, "seed": "seed"},
    "proofmatch.data.splits:make_splits": SPLITS,
    "proofmatch.data.splits:write_splits": SPLITS,
    "proofmatch.data.corpus:build_manifest": {"n_shards": "corpus.n_shards"},
    "proofmatch.data.corpus:write_manifest": {"n_shards": "corpus.n_shards"},
    "proofmatch.demo.generate:generate": {
        "n_articles": "corpus.demo.n_articles",
        "seed": "corpus.demo.seed",
    },
    "proofmatch.decoding.assign:global_decode": {
        "exact_max_n": "decode.exact_max_n",
        "seed": "seed",
    },
    "proofmatch.decoding.assign:DecodeSettings": DECODE,
    "proofmatch.evaluation.figure:explain_pair": LIME,
    "proofmatch.evaluation.figure:figure_from_matchers": LIME,
    "proofmatch.evaluation.figure:figure2": LIME,
    "proofmatch.evaluation.transfer:transfer_table": {"split": "transfer.split"},
    "proofmatch.models.tokenizer:train_tokenizer": {
        "vocab_size": "tokenizer.vocab_size",
        "min_frequency": "tokenizer.min_frequency",
    },
    "proofmatch.models.encoders:WordVocab.build": {"min_count": "matching.npt.min_count"},
    "proofmatch.models.matcher:npt_vocab": {"min_count": "matching.npt.min_count"},
    "proofmatch.models.params:PretrainParams": PRETRAIN,
    "proofmatch.models.pretrain:Pretraining": {"eval_every_unit": "pretrain.eval_every_unit"},
    "proofmatch.models.pretrain:build_pretraining": {"eval_every_unit": "pretrain.eval_every_unit"},
    "proofmatch.models.pretrain:check_due": {"unit": "pretrain.eval_every_unit"},
    "proofmatch.models.steps:batch_loss": {"margin": "matching.specter.margin"},
    "proofmatch.search.build:build_index": {"seed": "seed"},
    "proofmatch.search.corpus_index:index_corpus": {"seed": "seed"},
}

# Defaults under a config key's name that mirror no config key, and why.
ENCODING_BATCH = (
    "batch_size here is the encoding batch (memory), not a training batch of matching.*"
)
SAVED_MODEL = "what a model saved before the key existed was built with (reading config.json), not a run's setting"
NOT_MIRRORS: dict[str, dict[str, str]] = {
    "proofmatch.data.stacks:build_corpus": {
        "timeout_s": "one Stacks chapter's LaTeXML limit (a whole book "
        "chapter), not corpus.latex.timeout_s of one article"
    },
    "proofmatch.data.content_mathml:_new": {"text": "an element's text, not pretrain.text"},
    "proofmatch.texmath.parse:Node": {"text": "a parse node's text, not pretrain.text"},
    "proofmatch.data.extract:extract_dir": {
        "metadata": "a table the caller names (folder mode), not corpus.metadata"
    },
    "proofmatch.search.corpus_index:corpus_pairs": {
        "metadata": "a table the caller names (index-corpus), not corpus.metadata"
    },
    "proofmatch.search.corpus_index:index_corpus": {
        "metadata": "a table the caller names (index-corpus), not corpus.metadata"
    },
    "proofmatch.data.latex:convert_corpus": {
        "metadata": "a table the caller names, not corpus.metadata"
    },
    "proofmatch.experiments:model_folders": {"runs": "runs named by the caller, not transfer.runs"},
    "proofmatch.data.match_export:export": {
        "metadata": "whether the export writes article lines, not corpus.metadata"
    },
    "proofmatch.registry.encoders:EncoderSpec": {
        "checkpoint": "the matching key of an encoder's checkpoint, not pretrain.checkpoint"
    },
    "proofmatch.evaluation.figure:pick_pairs": {
        "max_tokens": "the longest pair LIME explains, not filter.max_tokens"
    },
    "proofmatch.evaluation.figure:figure_from_matchers": {
        "max_tokens": "as pick_pairs",
        "batch_size": ENCODING_BATCH,
    },
    "proofmatch.evaluation.figure:figure2": {
        "max_tokens": "as pick_pairs",
        "batch_size": ENCODING_BATCH,
    },
    "proofmatch.evaluation.figure:explain_pair": {"batch_size": ENCODING_BATCH},
    "proofmatch.search.explain:learned_cross": {"batch_size": ENCODING_BATCH},
    "proofmatch.evaluation.comparison:caption": {
        "articles": "the filtered corpus's article count, known once the run has it (None: the report's caption names the corpus only), not a config key"
    },
    "proofmatch.evaluation.fused:halves": {"batch_size": ENCODING_BATCH},
    "proofmatch.evaluation.fused:fusion_weight": {"batch_size": ENCODING_BATCH},
    "proofmatch.evaluation.fused:choose_weight_of": {"batch_size": ENCODING_BATCH},
    "proofmatch.search.explain:explain": {
        "max_tokens": "the longest query or proof an explanation takes, not filter.max_tokens",
        "batch_size": ENCODING_BATCH,
    },
    "proofmatch.evaluation.figure:match_probability_fn": {"batch_size": ENCODING_BATCH},
    "proofmatch.evaluation.evaluate:PairScorer.factors": {"batch_size": ENCODING_BATCH},
    "proofmatch.evaluation.evaluate:EvalSettings": {"batch_size": ENCODING_BATCH},
    "proofmatch.models.matcher:Matcher.embed": {"batch_size": ENCODING_BATCH},
    "proofmatch.models.matcher:Matcher.factors": {"batch_size": ENCODING_BATCH},
    "proofmatch.search.batching:BatchedEncoder.factors": {"batch_size": ENCODING_BATCH},
    "proofmatch.models.matcher:Matcher.score_pairs": {"batch_size": ENCODING_BATCH},
    "proofmatch.models.selection:rank_metrics": {"batch_size": ENCODING_BATCH},
    "proofmatch.search.build:build_index": {"batch_size": ENCODING_BATCH},
    "proofmatch.models.encoders:NPTConfig": {
        "dropout": SAVED_MODEL,
        "attention_dropout": SAVED_MODEL,
        "positions": SAVED_MODEL,
    },
    "proofmatch.models.matcher:MatcherConfig": {
        "pooling": SAVED_MODEL,
        "w_init": SAVED_MODEL,
        "normalize": SAVED_MODEL,
        "checkpoint": "the pretrained checkpoint a saved model started from (its name and digest), "
        "not pretrain.checkpoint",
    },
    "proofmatch.models.pretrained:cached_vectors": {"batch_size": ENCODING_BATCH},
    **{
        f"proofmatch.models.encoders:{name}": {
            "pooling": "a BERT encoder's own pooling when none is given ([CLS], SPECTER's); a run passes "
            "matching.bert.pooling, SPECTER-style matching.specter.pooling (matcher.build_matcher)",
            "normalize": "raw vectors unless asked; a pretrained checkpoint's run passes "
            "matching.pretrained.normalize (matcher.build_matcher)",
        }
        for name in ("BertEncoder", "BertEncoder.from_checkpoint", "BertEncoder.from_config")
    },
}

# The CLI options that mirror a config key: "module" -> {dest: key}
CLI_MIRRORS: dict[str, dict[str, str]] = {
    "proofmatch.demo.generate": {"articles": "corpus.demo.n_articles", "seed": "corpus.demo.seed"},
    "proofmatch.data.latex": LATEX,
    "proofmatch.data.filters": FILTER,
    "proofmatch.data.splits": SPLITS,
    "proofmatch.data.replace": {**REPLACE, "seed": "seed"},
    "proofmatch.evaluation.evaluate": DECODE,
    "proofmatch.evaluation.baselines": DECODE,
    "proofmatch.evaluation.figure": LIME,
    "proofmatch.search.build": {"seed": "seed"},
    "proofmatch.search.corpus_index": {"timeout_s": "corpus.latex.timeout_s"},
}
# Options under a config key's name with a default that mirrors none, and why. (A default of None
# is not checked: such an option overrides the config that --config names, e.g. train --seed.)
CLI_NOT_MIRRORS: dict[str, dict[str, str]] = {
    "proofmatch.evaluation.evaluate": {"batch_size": ENCODING_BATCH},
    "proofmatch.search.build": {"batch_size": ENCODING_BATCH},
    "proofmatch.data.corpus": {"articles": "the article table written, not corpus.demo.n_articles"},
}
# Names that mirror a config key under another name (besides every key's own last part).
ALIASES = {"alpha", "rounding", "samples", "unit", "articles"}


def watched_names() -> set[str]:
    """The names a default that mirrors a config key would go by: the last part of every key
    with a default (sections and other objects aside), and the aliases."""
    return {
        path.rsplit(".", 1)[-1]
        for path, s, _ in config.schema_keys()
        if "default" in s and s.get("type") != "object"
    } | ALIASES


def resolve(target: str) -> Any:
    module, _, qualname = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def defaults_of(obj: Callable) -> dict[str, Any]:
    """The parameters with a default of a function, or the fields with a default of a dataclass."""
    if dataclasses.is_dataclass(obj):
        return {
            f.name: f.default
            for f in dataclasses.fields(obj)
            if f.default is not dataclasses.MISSING
        }
    try:
        parameters = inspect.signature(obj).parameters
    except (TypeError, ValueError):  # a class without a signature of its own (an exception)
        return {}
    return {
        name: p.default
        for name, p in parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def _same(value: Any, schema_value: Any) -> bool:
    as_list = lambda v: list(v) if isinstance(v, (list, tuple)) else v  # noqa: E731 (a tuple default of a list key)
    return as_list(value) == as_list(schema_value)


def mismatches(defaults: dict[str, Any], mirrors: dict[str, str]) -> list[str]:
    """``param = value (schema: default)`` for every mirrored parameter whose default is not the schema's."""
    return [
        f"{name} = {defaults[name]!r} (schema {key}: {config.default(key)!r})"
        for name, key in mirrors.items()
        if name in defaults and not _same(defaults[name], config.default(key))
    ]


def package_callables() -> Iterator[tuple[str, Callable]]:
    """Every function, dataclass and method defined in the package, as ("module:qualname", object)."""
    for info in pkgutil.walk_packages(proofmatch.__path__, "proofmatch."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__ or not callable(obj):
                continue
            yield f"{info.name}:{name}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    member = (
                        member.__func__
                        if isinstance(member, (classmethod, staticmethod))
                        else member
                    )
                    if inspect.isfunction(member) and attr != "__init__":
                        yield f"{info.name}:{name}.{attr}", member


def cli_parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for module_name, _ in cli.COMMANDS.values():
        parser = argparse.ArgumentParser()
        importlib.import_module(module_name).add_arguments(parser)
        yield module_name, parser


# ---------------------------------------------------------------- library


@pytest.mark.parametrize("target", sorted(MIRRORS))
def test_library_defaults_are_the_schemas(target):
    obj = resolve(target)
    missing = sorted(set(MIRRORS[target]) - set(inspect.signature(obj).parameters))
    assert not missing, f"{target} has no parameter {missing}: update MIRRORS"
    assert not mismatches(defaults_of(obj), MIRRORS[target]), target


def test_no_other_default_goes_by_a_config_keys_name():
    watched = watched_names()
    found = {
        (target, name): value
        for target, obj in package_callables()
        for name, value in defaults_of(obj).items()
        if name in watched
    }
    unlisted = [
        f"{target}({name}={value!r})"
        for (target, name), value in found.items()
        if name not in MIRRORS.get(target, {}) and name not in NOT_MIRRORS.get(target, {})
    ]
    assert not unlisted, (
        "defaults under a config key's name: take the key's config.default (and list them in "
        f"MIRRORS) or say in NOT_MIRRORS why they mirror none: {unlisted}"
    )
    stale = [(t, n) for t, names in NOT_MIRRORS.items() for n in names if (t, n) not in found]
    assert not stale, f"NOT_MIRRORS names defaults that are gone: {stale}"


def test_train_params_have_no_defaults_and_pretrain_params_the_schemas():
    """TrainParams mirrors two blocks whose defaults differ (npt, bert): no field may pick one."""
    from proofmatch.models.params import PretrainParams, TrainParams

    assert defaults_of(TrainParams) == {}
    fields = set(defaults_of(PretrainParams)) - {"max_position_embeddings"}  # not a config key
    assert fields == set(PRETRAIN)


# ---------------------------------------------------------------- command line


@pytest.mark.parametrize("module", sorted(CLI_MIRRORS))
def test_cli_defaults_are_the_schemas(module):
    parser = dict(cli_parsers())[module]
    defaults = {a.dest: a.default for a in parser._actions}
    missing = sorted(set(CLI_MIRRORS[module]) - set(defaults))
    assert not missing, f"{module} has no option {missing}: update CLI_MIRRORS"
    assert not mismatches(defaults, CLI_MIRRORS[module]), module


def test_no_other_cli_default_goes_by_a_config_keys_name():
    watched = watched_names()
    found = {
        (module, action.dest): action.default
        for module, parser in cli_parsers()
        for action in parser._actions
        if action.dest in watched and action.default is not None
    }
    unlisted = [
        f"{module} --{dest}={value!r}"
        for (module, dest), value in found.items()
        if dest not in CLI_MIRRORS.get(module, {}) and dest not in CLI_NOT_MIRRORS.get(module, {})
    ]
    assert not unlisted, (
        f"CLI defaults under a config key's name: use config.add_option, or list why not: {unlisted}"
    )
    stale = [(m, d) for m, dests in CLI_NOT_MIRRORS.items() for d in dests if (m, d) not in found]
    assert not stale, f"CLI_NOT_MIRRORS names options that are gone: {stale}"


def test_the_clis_agree_on_the_seed():
    seeds = {
        module: parser.get_default("seed")
        for module, parser in cli_parsers()
        if parser.get_default("seed") is not None
    }
    assert set(seeds.values()) <= {config.default("seed"), config.default("corpus.demo.seed")}, (
        seeds
    )
    assert (
        seeds["proofmatch.data.replace"]
        == seeds["proofmatch.data.splits"]
        == config.default("seed")
    )


# ---------------------------------------------------------------- the checks can fail


def test_a_planted_wrong_default_is_caught():
    """What the checks above do with a retyped default that drifted (``seed=0`` against the
    schema's 13), one under a watched name, and a CLI option typed by hand."""

    def planted(
        data,
        seed=0,
        min_tokens=config.default("filter.min_tokens"),  # noqa: B008 (the planted drift reads the schema)
        batch_size=64,
    ):
        return data

    assert mismatches(
        defaults_of(planted), {"seed": "seed", "min_tokens": "filter.min_tokens"}
    ) == [f"seed = 0 (schema seed: {config.default('seed')!r})"]
    assert {"seed", "min_tokens"} <= set(defaults_of(planted)) & watched_names()
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    config.add_option(parser, "--min-tokens", key="filter.min_tokens", type=int)
    defaults = {a.dest: a.default for a in parser._actions}
    assert mismatches(defaults, {"seed": "seed", "min_tokens": "filter.min_tokens"}) == [
        f"seed = 0 (schema seed: {config.default('seed')!r})"
    ]
    assert "config filter.min_tokens; default" in parser.format_help()
