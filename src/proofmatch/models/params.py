"""The typed settings of one training run (:class:`TrainParams`) and of one MLM pretraining run
(:class:`PretrainParams`), built from the validated config.

Why a module of their own: the training loop, the model builder, pretraining and the
checkpoint's fingerprint all read them, the workflow's rule scripts and the CLI build them, and
none of that needs torch.

Where their values come from: the schema (``config.schema.yaml``) is the only place that holds a
default. :meth:`TrainParams.from_config` reads every field from the config's ``matching`` block,
sliced once: the fields every encoder reads into :class:`TrainParams`, the rest into the settings
class of the encoder's registry entry (``TrainParams.encoder``, :mod:`proofmatch.registry.settings`).
No field of either has a default, because the schema's differ between the ``npt`` and ``bert``
blocks (``scale_scores``, ``eval_every``, ...) and one flat default could only contradict one.
:class:`PretrainParams` mirrors the one ``pretrain`` block key for key, so its optional fields
take the schema's defaults (:func:`proofmatch.config.default`).
``tests/test_defaults.py`` fails when a default here and the schema's disagree.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from proofmatch import config
from proofmatch.registry.encoders import encoder_spec
from proofmatch.registry.settings import (  # noqa: F401 (Pooling, _literals: read from here too)
    EncoderSettings,
    Pooling,
    _literals,
    check_literals,
    typed_params,
)

# The values of the schema's enums of the matching blocks (tests/test_registry.py holds them to it):
# code below TrainParams takes them as typed and checks them no more.
Optimizer = Literal["asgd", "adamw"]
WInit = Literal["identity", "bilinear", "zeros"]
EvalWeights = Literal["average", "raw"]  # ASGD's averaged parameters, or the parameters themselves
SelectMetric = Literal["mrr", "accuracy"]
HybridSelection = Literal["local", "global"]  # global: hybrid runs select on dev_global_acc


def run_params(matching: Mapping[str, Any], encoder: str) -> dict[str, Any]:
    """The keys of one run of ``encoder``, flat, from the config's ``matching`` block (whole, or
    the workflow's :func:`proofmatch.config.run_matching` part of it, whose other keys are not
    read): ``max_length``, then its spec's ``block`` (``npt`` or ``bert``; NPT's own
    ``max_length`` wins), then its further ``settings`` blocks (SPECTER-style's ``specter``)."""
    spec = encoder_spec(encoder)
    params = {"max_length": matching["max_length"]}
    for block in (spec.block, *spec.settings):
        params.update(matching[block])
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


class StaleRecord(ValueError):
    """A recorded fingerprint's params written under another :attr:`TrainParams.VERSION`."""


@dataclass(frozen=True)
class TrainParams:
    """The settings of one training run: those every encoder reads, and ``encoder``, the
    encoder's own (the dataclass its spec names, :mod:`proofmatch.registry.settings`); what its
    checkpoint's fingerprint hashes. Build it with :meth:`from_config`."""

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
    eval_weights: EvalWeights  # ASGD: dev evaluation and model/ read its average or raw weights
    select_metric: SelectMetric  # model selection on dev MRR or dev accuracy (local decoding) ...
    hybrid_selection: HybridSelection  # ... or, for hybrid runs, dev accuracy of global decoding
    encoder: EncoderSettings  # the encoder's own settings (its spec's settings_class)

    #: The shape of the params a fingerprint records (``params_version``): 2, the common fields
    #: and the encoder's own, flat (:meth:`flat`). Records without it held every encoder's fields.
    VERSION: ClassVar[int] = 2

    def __post_init__(self) -> None:
        """Refuse a value outside its ``Literal`` type (:func:`check_literals`)."""
        check_literals(self)

    @classmethod
    def from_config(cls, matching: Mapping[str, Any], encoder: str) -> TrainParams:
        """The params of a run of ``encoder`` from the validated config's ``matching`` block
        (whole, or the workflow's :func:`proofmatch.config.run_matching` part of it, a job's
        params), sliced once (:func:`run_params`). An unknown key (a typo in a block that did not
        pass validation) is refused."""
        return cls.from_flat(run_params(matching, encoder), encoder)

    @classmethod
    def from_flat(cls, values: Mapping[str, Any], encoder: str) -> TrainParams:
        """``values`` (the keys of :meth:`flat`) as the params of a run of ``encoder``: the common
        fields here, the rest as its spec's ``settings_class``; a key of neither is refused."""
        own = encoder_spec(encoder).settings_class
        common = {f.name for f in dataclasses.fields(cls)} - {"encoder"}
        known = common | {f.name for f in dataclasses.fields(own)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown TrainParams keys {unknown} for encoder {encoder!r}; "
                f"expected some of {sorted(known)}"
            )
        settings = typed_params(own, {k: v for k, v in values.items() if k not in common})
        fields = {k: v for k, v in values.items() if k in common}
        return typed_params(cls, {**fields, "encoder": settings})

    @classmethod
    def from_record(cls, fingerprint: Mapping[str, Any]) -> TrainParams:
        """The params a training run's fingerprint recorded (``metrics.json``, ``state.pt``). A
        record of another :attr:`VERSION` (one without ``params_version``: written before it)
        raises :class:`StaleRecord`: its run is retrained, not read back."""
        version = fingerprint.get("params_version")
        if version != cls.VERSION:
            raise StaleRecord(
                f"a fingerprint of params_version {version} (None: written before versions); "
                f"this version reads {cls.VERSION}: retrain the run"
            )
        return cls.from_flat(fingerprint["params"], fingerprint["encoder"])

    def flat(self) -> dict[str, Any]:
        """The common fields and the encoder's own in one mapping: what a fingerprint records."""
        common = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del common["encoder"]
        return {**common, **dataclasses.asdict(self.encoder)}

    def replaced(self, **changes: Any) -> TrainParams:
        """These params with ``changes`` (names of :meth:`flat`), each to its dataclass."""
        own = {f.name for f in dataclasses.fields(self.encoder)}
        mine = {k: changes.pop(k) for k in list(changes) if k in own}
        return dataclasses.replace(
            self, **changes, encoder=dataclasses.replace(self.encoder, **mine)
        )


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
