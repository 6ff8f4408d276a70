"""The encoders: what each one is called, how it trains, which config it reads and who builds it.

One registry, :data:`ENCODERS`, read by everything that names an encoder: the workflow's wildcard
values and the tables (:mod:`proofmatch.experiments`), the config schema's ``encoder-mode`` names
(:func:`proofmatch.config.schema` fills them in from here), what a training run reads of the config
(:func:`proofmatch.config.run_matching`, :mod:`proofmatch.models.params`) and the model builder
(:func:`proofmatch.models.matcher.build_matcher`, ``Matcher.from_pretrained``). Adding an encoder
is its module, one entry here and its schema block (docs/architecture.md, "Adding an encoder").

Pure Python: the Snakefile imports it before any job runs, so the builder is named by its dotted
path and imported only when a model is built (:meth:`EncoderSpec.load_builder`), and an entry
names its settings class itself (:mod:`proofmatch.registry.settings`, torch-free), which a new
encoder with settings of its own defines beside its entry.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from proofmatch.registry.checks import one_of
from proofmatch.registry.settings import (
    BertSettings,
    EncoderSettings,
    NPTSettings,
    PretrainedSettings,
    PretrainedSpecterSettings,
    SpecterSettings,
)


@dataclass(frozen=True)
class EncoderSpec:
    """One encoder.

    ``name``: its wildcard value and the first half of its runs' ``encoder-mode`` folder;
    ``label``: its name in the tables; ``modes``: how it is trained (``local``, ``hybrid``,
    ``triplet``), in table order; ``block``: the ``matching`` sub-block with its training settings
    (``matching.npt``, ``matching.bert``); ``settings``: further ``matching`` sub-blocks whose keys
    join its params (SPECTER-style's ``matching.specter``); ``checkpoint``: the ``matching`` key
    naming the checkpoint it starts from, a local path or hub id (MathBERT's ``matching.mathbert``;
    null there: its rows are not run); ``from_scratchbert``: it starts from the family's
    ScratchBERT, which the workflow then makes first; ``builder``: ``module:attribute`` of its
    :class:`proofmatch.models.matcher.EncoderBuilder`; ``settings_class``: the dataclass of its
    own settings (:mod:`proofmatch.registry.settings`), the keys of its ``block`` and ``settings``
    blocks that are not common to every run (``TrainParams.encoder`` of its runs)."""

    name: str
    label: str
    modes: tuple[str, ...]
    block: str
    builder: str
    settings_class: type[EncoderSettings]
    settings: tuple[str, ...] = ()
    checkpoint: str | None = None
    from_scratchbert: bool = False

    def reads(self) -> tuple[str, ...]:
        """The ``matching`` keys a run of this encoder reads besides ``max_length``, in order."""
        return (self.block, *self.settings, *filter(None, [self.checkpoint]))

    def load_builder(self) -> Any:
        """The builder object, imported now (torch and all)."""
        module, _, attribute = self.builder.partition(":")
        return getattr(importlib.import_module(module), attribute)


def _by_name(*specs: EncoderSpec) -> dict[str, EncoderSpec]:
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"encoder names given twice: {sorted(names)}")
    return {s.name: s for s in specs}


NPT_BUILDER = "proofmatch.models.matcher:NPT_BUILDER"
BERT_BUILDER = "proofmatch.models.matcher:BERT_BUILDER"

#: Every encoder by name, in the tables' order. The bilinear models train locally and hybrid
#: (§7.2: local + global loss), SPECTER-style with triplets. A pretrained checkpoint (MathBERT's
#: column) is also scored as it is (zeroshot) and with a bilinear head over its frozen vectors
#: (frozen): the two cheap points below fine-tuning (proofmatch.models.pretrained); and trained
#: with triplets as SPECTER trained SciBERT (mathspecter).
ENCODERS: dict[str, EncoderSpec] = _by_name(
    EncoderSpec("npt", "NPT", ("local", "hybrid"), "npt", NPT_BUILDER, NPTSettings),
    EncoderSpec(
        "scratchbert",
        "ScratchBERT",
        ("local", "hybrid"),
        "bert",
        BERT_BUILDER,
        BertSettings,
        from_scratchbert=True,
    ),
    EncoderSpec(
        "mathbert",
        "MathBERT",
        ("zeroshot", "frozen", "local", "hybrid"),
        "bert",
        BERT_BUILDER,
        PretrainedSettings,
        settings=("pretrained",),
        checkpoint="mathbert",
    ),
    EncoderSpec(
        "specter",
        "SPECTER-style",
        ("triplet",),
        "bert",
        BERT_BUILDER,
        SpecterSettings,
        settings=("specter",),
        from_scratchbert=True,
    ),
    EncoderSpec(
        "mathspecter",
        "SPECTER-style (MathBERT)",
        ("triplet",),
        "bert",
        BERT_BUILDER,
        PretrainedSpecterSettings,
        settings=("specter", "pretrained"),
        checkpoint="mathbert",
    ),
)


def encoder_spec(name: str) -> EncoderSpec:
    """The spec of encoder ``name``; an unknown name (a command line's, a saved model's) is refused."""
    return ENCODERS[one_of("encoder", name, ENCODERS)]


def checkpoint_label(key: str) -> str:
    """The name of the column a checkpoint key fills: the label of the first encoder that starts
    from it (``mathbert``: MathBERT, whose checkpoint SPECTER-style (MathBERT) also starts from)."""
    return next(s.label for s in ENCODERS.values() if s.checkpoint == key)


def run_names() -> list[str]:
    """Every ``encoder-mode`` name (``npt-local``, ...): the values of the config's run lists
    (``fusion.runs``, ``report.seed_runs``, ...)."""
    return [f"{s.name}-{mode}" for s in ENCODERS.values() for mode in s.modes]


def split_run_name(name: str) -> tuple[str, str]:
    """A run name of :func:`run_names` (``npt-local``) as ``(encoder, mode)``: what the config's
    run lists name, parsed in one place."""
    encoder, mode = name.split("-", 1)
    return encoder, mode
