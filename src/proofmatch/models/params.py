"""The typed settings of one training run (:class:`TrainParams`) and of one MLM pretraining run
(:class:`PretrainParams`), built from the validated config.

Why a module of their own: the training loop, the model builder, pretraining and the
checkpoint's fingerprint all read them, the workflow's rule scripts and the CLI build them, and
none of that needs torch.

Where their values come from: the schema (``config.schema.yaml``) is the only place that holds a
default. :meth:`TrainParams.from_config` reads every field from the config's ``matching`` block,
and no field of :class:`TrainParams` has a default, because the schema's differ between the
``npt`` and ``bert`` blocks (``scale_scores``, ``eval_every``, ...) and one flat default could only
contradict one of them. :class:`PretrainParams` mirrors the one ``pretrain`` block key for key, so
its optional fields take the schema's defaults (:func:`proofmatch.config.default`).
``tests/test_defaults.py`` fails when a default here and the schema's disagree.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from proofmatch import config
from proofmatch.registry.checks import one_of
from proofmatch.registry.encoders import encoder_spec

P = TypeVar("P")
# The values of the schema's enums of the matching blocks (tests/test_registry.py holds them to it):
# code below TrainParams takes them as typed and checks them no more.
Optimizer = Literal["asgd", "adamw"]
WInit = Literal["identity", "bilinear", "zeros"]
Pooling = Literal["cls", "mean"]
EvalWeights = Literal["average", "raw"]  # ASGD's averaged parameters, or the parameters themselves
SelectMetric = Literal["mrr", "accuracy"]
HybridSelection = Literal["local", "global"]  # global: hybrid runs select on dev_global_acc
_CAST = {"int": int, "float": float, "bool": bool, "str": str}


def run_params(matching: Mapping[str, Any], encoder: str) -> dict[str, Any]:
    """Flatten the config's ``matching`` block (whole, or the workflow's
    :func:`proofmatch.config.run_matching` part of it) into the keys of one run of ``encoder``:
    ``max_length``, then its spec's ``block`` (``npt`` or ``bert``; NPT's own ``max_length``
    wins), then its further ``settings`` blocks (SPECTER-style's ``specter``)."""
    spec = encoder_spec(encoder)
    part = config.run_matching(dict(matching), encoder)
    params = {"max_length": part["max_length"]}
    for block in (spec.block, *spec.settings):
        params.update(part[block])
    return params


def start_checkpoint(
    matching: Mapping[str, Any], encoder: str, given: str | os.PathLike | None
) -> str | os.PathLike | None:
    """The BERT checkpoint a run of ``encoder`` starts from: ``given`` (the workflow's ScratchBERT
    input, ``--pretrained-dir``), else the config's key of its spec's ``checkpoint`` (MathBERT's
    ``matching.mathbert``; None: the run is reported as not configured); NPT starts from none."""
    key = encoder_spec(encoder).checkpoint
    if given is None and key:
        return matching.get(key)
    return given


# What a run's params record for the fields its encoder does not read (the keys of no block its
# spec reads): NPT reads no pooling, the BERT encoders no NPT shape, vocabulary or dropout, and
# only SPECTER-style its margin and hard_fraction. Not defaults (no run reads them): the values fingerprints recorded for these
# fields before TrainParams was built from the config, so a run's fingerprint, and with it the
# resume state it may have left, is the same as then.
UNREAD: dict[str, Any] = {
    "d_model": None,
    "n_layers": None,
    "n_heads": None,
    "d_k": None,
    "min_count": 2,
    "dropout": 0.1,
    "attention_dropout": 0.1,
    "positions": True,
    "pooling": "cls",
    "margin": 1.0,
    "hard_fraction": 0.0,
}


# TrainParams fields added after fingerprints were first recorded, at the value every run before
# them had (what a run of an encoder that does not read them holds): a fingerprint
# (proofmatch.models.checkpoint.fingerprint) leaves a field out at this value, and typed_params
# reads a recorded one back with it.
ADDED: dict[str, Any] = {
    "normalize": False,
    "cosine_scale": 1.0,
    "train_layers": None,
    "head_epochs": 0,
    "head_learning_rate": 0.0,
    "head_batch_size": 0,
}


@dataclass(frozen=True)
class TrainParams:
    """The settings of one training run: the config's ``matching`` part for one encoder, flat;
    what its checkpoint's fingerprint hashes. Build it with :meth:`from_config`."""

    epochs: int
    batch_size: int  # the global batch, whatever the number of processes
    learning_rate: float
    lr_decay: float  # the rate is multiplied by this after each epoch ...
    lr_decay_start: int  # ... from this epoch on (counted from 1)
    eval_every: int  # dev evaluation every this many epochs, and after the last
    max_length: int  # token positions per text
    optimizer: Optimizer
    scale_scores: bool  # bilinear scores divided by d (model.score_scale)
    w_init: WInit  # start of the bilinear W
    d_model: int | None  # NPT: width, layers, heads, query/key size per head
    n_layers: int | None
    n_heads: int | None
    d_k: int | None
    min_count: int  # NPT vocabulary: tokens seen at least this often
    dropout: float  # NPT: on embeddings and layer outputs ...
    attention_dropout: float  # ... and on attention probabilities
    positions: bool  # NPT: sinusoidal position table
    pooling: Pooling  # ScratchBERT/MathBERT (SPECTER-style: matching.specter.pooling)
    margin: float  # SPECTER triplets: margin and share of same-article negatives
    hard_fraction: float
    eval_weights: EvalWeights  # ASGD: dev evaluation and model/ read its average or raw weights
    select_metric: SelectMetric  # model selection on dev MRR or dev accuracy (local decoding) ...
    hybrid_selection: HybridSelection  # ... or, for hybrid runs, dev accuracy of global decoding
    # A pretrained checkpoint's settings (matching.pretrained; read by MathBERT only). Added after
    # fingerprints were first recorded: the others hold ADDED's values, every earlier run's, and a
    # fingerprint leaves them out at those values, so an earlier run's stays what it was.
    normalize: bool  # L2-normalised vectors, scores cosine · cosine_scale
    cosine_scale: float
    train_layers: int | None  # fine-tune only the top this many layers (None: all)
    head_epochs: int  # the frozen encoder's bilinear head: passes over cached embeddings, ...
    head_learning_rate: float  # ... its AdamW rate ...
    head_batch_size: int  # ... and its batch

    def __post_init__(self) -> None:
        """Refuse a value outside its ``Literal`` type: the one check of the enums for the code
        below, which trusts them; params come from the validated config, but also from a
        recorded fingerprint, the command line's config or a caller that built them by hand."""
        for name, values in _literals(type(self)).items():
            one_of(name, getattr(self, name), values)

    @classmethod
    def from_config(cls, matching: Mapping[str, Any], encoder: str) -> TrainParams:
        """The params of a run of ``encoder`` from the validated config's ``matching`` block
        (whole, or the workflow's :func:`proofmatch.config.run_matching` part of it, a job's
        params); fields the encoder does not read are :data:`UNREAD`. An unknown key (a typo in
        a block that did not pass validation) is refused."""
        return typed_params(cls, {**UNREAD, **ADDED, **run_params(matching, encoder)})


@dataclass(frozen=True)
class PretrainParams:
    """The settings of one MLM pretraining run (the config's ``pretrain`` block but
    ``eval_every_unit``, which the loop reads on its own); what its checkpoint's fingerprint
    hashes. Build it with :meth:`from_config`."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_length: int  # tokens per packed chunk
    epochs: int
    batch_size: int  # chunks per step: the global batch, whatever the processes
    learning_rate: float
    eval_every_steps: int  # validation (and a checkpoint) every this many steps
    mlm_probability: float = config.default("pretrain.mlm_probability")
    warmup_fraction: float = config.default(
        "pretrain.warmup_fraction"
    )  # linear warm-up share, then linear decay
    weight_decay: float = config.default("pretrain.weight_decay")
    dropout: float = config.default("pretrain.dropout")
    micro_batch_size: int | None = config.default(
        "pretrain.micro_batch_size"
    )  # None: a process's whole share
    compile: bool = config.default(
        "pretrain.compile"
    )  # torch.compile the model on a GPU (ignored on a CPU)
    max_position_embeddings: int | None = None  # not a config key; None: max(512, max_length)

    @classmethod
    def from_config(cls, pretrain: Mapping[str, Any]) -> PretrainParams:
        """The params of the validated config's ``pretrain`` block (``eval_every_unit`` and
        ``text`` left out: :func:`proofmatch.models.pretrain.pretrain` reads them; ``checkpoint``
        too: with one, nothing is pretrained)."""
        skip = ("eval_every_unit", "text", "checkpoint")
        return typed_params(cls, {k: v for k, v in pretrain.items() if k not in skip})


def typed_params(cls: type[P], values: Mapping[str, Any]) -> P:
    """``values`` as the dataclass ``cls``: unknown keys are refused (a typo would otherwise be
    ignored), and so are missing ones without a default and None for a field not typed
    ``X | None``; values are cast to the field's type (``1`` -> ``1.0``). Also reads back the
    ``params`` a fingerprint recorded (``metrics.json``, a checkpoint's ``state.pt``)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if cls is TrainParams:  # a fingerprint leaves out the ADDED fields at their value
        values = {**ADDED, **values}
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
            f"missing {cls.__name__} keys {missing}; {cls.__name__}.from_config reads them from the config"
        )
    nulls = sorted(k for k, v in values.items() if v is None and "None" not in str(fields[k].type))
    if nulls:
        raise ValueError(f"{cls.__name__} keys {nulls} cannot be None")

    def kind(f: dataclasses.Field) -> type:  # "int | None" -> int (annotations are strings here)
        name = f.type.split(" |")[0] if isinstance(f.type, str) else f.type.__name__
        return _CAST.get(name, str)  # a Literal alias (Optimizer, ...): its values are strings

    return cls(**{k: None if v is None else kind(fields[k])(v) for k, v in values.items()})


def _literals(cls: type) -> dict[str, tuple[Any, ...]]:
    """The values of each field of ``cls`` typed by a ``Literal`` (or ``Literal | None``)."""
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        for arg in args:
            if typing.get_origin(arg) is Literal:
                out[name] = typing.get_args(arg)
    return out
