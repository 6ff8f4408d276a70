"""Each encoder's own training settings: one frozen dataclass per kind of encoder, which its
registry entry names (:attr:`proofmatch.registry.encoders.EncoderSpec.settings_class`), as a
transformers config class belongs to its model type.

Why one class per encoder, not one flat class: a run holds, and its checkpoint's fingerprint
hashes, only what its encoder reads (NPT no pooling, ScratchBERT no NPT shape), and a new encoder
names an existing class or brings its own beside its registry entry without touching a class
shared by the others. Why torch-free and here: the Snakefile imports the registry, which names
these classes; the builders (:mod:`proofmatch.models.matcher`), the training loop and a pretrained
checkpoint's head run read them as ``TrainParams.encoder`` (:mod:`proofmatch.models.params`).

A class's fields are the keys of its spec's ``block`` and ``settings`` blocks that are not common
training settings (:class:`proofmatch.models.params.TrainParams`' own fields). No field has a
default: the schema holds them. :func:`typed_params` builds any of these dataclasses from a mapping
(the config's, or a recorded fingerprint's), refusing unknown and missing keys, and
:class:`EncoderSettings` refuses a value outside a field's ``Literal`` type.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from proofmatch.registry.checks import one_of

P = TypeVar("P")
Pooling = Literal["cls", "mean"]  # the schema's enum (tests/test_registry.py holds it to it)
_CAST = {"int": int, "float": float, "bool": bool, "str": str}


def check_literals(obj: Any) -> None:
    """Refuse a field of the dataclass ``obj`` whose value is outside its ``Literal`` type: the
    one check of the enums for the code below, which trusts them; settings come from the validated
    config, but also from a recorded fingerprint, the command line or a caller that built them."""
    for name, values in _literals(type(obj)).items():
        one_of(name, getattr(obj, name), values)


@dataclass(frozen=True)
class EncoderSettings:
    """The base of every encoder's settings: the enum check, and what the shared code asks of any
    encoder, answered here for an encoder whose settings say nothing about it."""

    def __post_init__(self) -> None:
        check_literals(self)

    def score_cosine(self) -> float | None:
        """None: scores are the bilinear form of the encoder's vectors as they are; a number:
        the vectors are L2-normalised and scores are cosine times it."""
        return None

    def tuned_layers(self) -> int | None:
        """How many of a pretrained encoder's top layers fine-tune (None: all of them)."""
        return None

    def batch_neighbours(self) -> int:
        """0: local and hybrid training draw random batches; k > 0: batches are built around each
        pair's k BM25 neighbours (:func:`proofmatch.models.sampling.neighbour_batches`)."""
        return 0


@dataclass(frozen=True)
class NPTSettings(EncoderSettings):
    """NPT (``matching.npt``): its shape, word vocabulary and dropout."""

    d_model: int  # width, layers, heads, query/key size per head
    n_layers: int
    n_heads: int
    d_k: int
    min_count: int  # vocabulary: tokens seen at least this often
    dropout: float  # on embeddings and layer outputs ...
    attention_dropout: float  # ... and on attention probabilities
    positions: bool  # sinusoidal position table


@dataclass(frozen=True)
class BertSettings(EncoderSettings):
    """A BERT encoder fine-tuned from a checkpoint (``matching.bert``): how it pools its tokens."""

    pooling: Pooling


@dataclass(frozen=True)
class SpecterSettings(BertSettings):
    """SPECTER-style (``matching.bert`` + ``matching.specter``, whose ``pooling`` wins): the
    triplet loss's margin and the share of negatives drawn from the same article."""

    margin: float
    hard_fraction: float


@dataclass(frozen=True)
class PretrainedSettings(BertSettings):
    """A pretrained checkpoint (``matching.bert`` + ``matching.pretrained``, whose keys win):
    normalised vectors, the top layers that fine-tune, its batches, and the frozen encoder's
    bilinear head."""

    normalize: bool  # L2-normalised vectors, scores cosine · cosine_scale
    cosine_scale: float
    train_layers: int | None  # fine-tune only the top this many layers (None: all)
    bm25_neighbours: int  # fine-tuning batches built around this many BM25 neighbours (0: random)
    head_epochs: int  # the frozen encoder's head: passes over cached embeddings, ...
    head_learning_rate: float  # ... its AdamW rate ...
    head_batch_size: int  # ... and its batch

    def score_cosine(self) -> float | None:
        return self.cosine_scale if self.normalize else None

    def tuned_layers(self) -> int | None:
        return self.train_layers

    def batch_neighbours(self) -> int:
        return self.bm25_neighbours


@dataclass(frozen=True)
class PretrainedSpecterSettings(PretrainedSettings):
    """SPECTER-style from a pretrained checkpoint (``matching.bert`` + ``matching.specter`` +
    ``matching.pretrained``, whose keys win): the checkpoint's pooling, vectors and schedule, and
    the triplet loss's margin and same-article share of negatives."""

    margin: float
    hard_fraction: float


def typed_params(cls: type[P], values: Mapping[str, Any]) -> P:
    """``values`` as the dataclass ``cls``: unknown keys are refused (a typo would otherwise be
    ignored), and so are missing ones without a default and None for a field not typed
    ``X | None``; values are cast to the field's type (``1`` -> ``1.0``)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(
            f"unknown {cls.__name__} keys {unknown}; expected some of {sorted(fields)}"
        )
    required = {
        n
        for n, f in fields.items()
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    missing = sorted(required - set(values))
    if missing:
        raise ValueError(
            f"missing {cls.__name__} keys {missing}; its from_config reads them from the config"
        )
    nulls = sorted(k for k, v in values.items() if v is None and "None" not in str(fields[k].type))
    if nulls:
        raise ValueError(f"{cls.__name__} keys {nulls} cannot be None")

    def kind(f: dataclasses.Field) -> type:  # "int | None" -> int (annotations are strings here)
        name = f.type.split(" |")[0] if isinstance(f.type, str) else f.type.__name__
        return _CAST.get(name, _same)  # a Literal alias (checked after) or a dataclass: as given

    return cls(**{k: None if v is None else kind(fields[k])(v) for k, v in values.items()})


def _same(value: Any) -> Any:
    return value


def _literals(cls: type) -> dict[str, tuple[Any, ...]]:
    """The values of each field of ``cls`` typed by a ``Literal`` (or ``Literal | None``)."""
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        for arg in args:
            if typing.get_origin(arg) is Literal:
                out[name] = typing.get_args(arg)
    return out
