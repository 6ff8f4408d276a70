"""Variants of a run: the same experiment trained with another seed, or on a share of its train part.

The tables read one run per cell, trained with the config's ``seed`` on the whole train part. The
report asks two more questions of the headline runs (config ``report``): how much a result moves
when only the seed changes (``report.seeds``, the seeds table), and how it grows with training data
(``report.fractions``, the data-scaling curve). A variant lives beside its run, its folder named
``{level}-{view}-{variant}`` (:func:`proofmatch.experiments.run_leaf`): ``seed14`` or ``frac0.25``.
A seed variant starts from the same ScratchBERT (pretrained once, with ``seed``): only fine-tuning
is reseeded. A fraction variant trains on :func:`scaling_data`, where the dev and test parts are the
run's own. Pure Python: the Snakefile imports it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from proofmatch import experiments as X
from proofmatch.registry.encoders import split_run_name

SEED_PREFIX, FRACTION_PREFIX = "seed", "frac"
PATTERN = rf"{SEED_PREFIX}\d+|{FRACTION_PREFIX}0\.\d+"  # the variant wildcard's constraint
HEADLINE_LEVEL = "conservation"
SCALING_ROOT = "results/scaling"


def seed_variant(seed: int) -> str:
    return f"{SEED_PREFIX}{int(seed)}"


def fraction_variant(fraction: float) -> str:
    if not 0 < fraction < 1:
        raise ValueError(f"a train fraction variant needs 0 < fraction < 1, got {fraction}")
    return f"{FRACTION_PREFIX}{fraction:g}"


def variant_seed(variant: str, seed: int) -> int:
    """The seed a variant trains with: its own for ``seed14``, otherwise the config's ``seed``."""
    m = re.fullmatch(rf"{SEED_PREFIX}(\d+)", variant)
    return int(m[1]) if m else seed


def variant_fraction(variant: str) -> float | None:
    """The train share of a ``frac`` variant, None for any other."""
    m = re.fullmatch(rf"{FRACTION_PREFIX}(0\.\d+)", variant)
    return float(m[1]) if m else None


def scaling_data(split: str, level: str, variant: str) -> str:
    """The replaced split with only the variant's share of its train part."""
    return f"{SCALING_ROOT}/{split}/{level}-{variant}.parquet"


def train_data(split: str, level: str, variant: str) -> str:
    """What a run (or variant) trains on: the replaced split, or its train share."""
    return (
        scaling_data(split, level, variant)
        if variant_fraction(variant)
        else X.replaced_data(split, level)
    )


def _runs(names: list[str]) -> list[tuple[str, str]]:
    return [split_run_name(name) for name in names]


def seed_runs(config: Mapping[str, Any]) -> list[tuple[int, X.Run]]:
    """(seed, run) of every headline run and seed of ``report.seeds``; the config's own seed is the
    tables' run (no variant)."""
    rep = config["report"]
    return [
        (
            s,
            X.Run(
                "mixed",
                enc,
                mode,
                HEADLINE_LEVEL,
                "both",
                "" if s == config["seed"] else seed_variant(s),
            ),
        )
        for enc, mode in _runs(rep["seed_runs"])
        for s in rep["seeds"]
    ]


def scaling_runs(config: Mapping[str, Any]) -> list[tuple[float, X.Run]]:
    """(fraction, run) of the scaling curve: each of ``report.fractions``, then 1 (the tables' run)."""
    rep = config["report"]
    fractions = sorted(rep["fractions"])
    return [
        (f, X.Run("mixed", enc, mode, HEADLINE_LEVEL, "both", fraction_variant(f) if f < 1 else ""))
        for enc, mode in _runs(rep["scaling_runs"])
        for f in [*fractions, 1.0]
    ]


def fused(run: X.Run, config: Mapping[str, Any]) -> bool:
    """Whether the run's fusion with BM25 is reported too (its encoder-mode is in ``fusion.runs``)."""
    return (run.encoder, run.mode) in X.fusion_runs(config)


def test_evaluations(run: X.Run, config: Mapping[str, Any]) -> list[X.Evaluation]:
    """The run's test evaluation at its own level, then its fusion's when :func:`fused`."""
    return (
        [run.evaluation("test"), run.fusion("test")]
        if fused(run, config)
        else [run.evaluation("test")]
    )


def evaluations(config: Mapping[str, Any]) -> list[X.Evaluation]:
    """Every evaluation the seeds and scaling tables read (test part at the run's level; fusions
    too), and the scaling curve's TF-IDF baselines fitted on each share."""
    runs = [r for _, r in seed_runs(config)] + [r for _, r in scaling_runs(config)]
    out = [ev for r in dict.fromkeys(runs) for ev in test_evaluations(r, config)]
    out += [
        baseline_variant(m, f)
        for m in SCALING_BASELINES
        for f in [*sorted(config["report"]["fractions"]), 1.0]
    ]
    return list(dict.fromkeys(out))


SCALING_BASELINES = ("tfidf", "tfidf_paper", "bm25")


def baseline_variant(method: str, fraction: float) -> X.Evaluation:
    """A baseline of the scaling curve: TF-IDF fitted on the train share; BM25 fits on the evaluated
    proofs and does not read the train part, so its point is the full-data one at every share."""
    ev = X.baseline("mixed", method, HEADLINE_LEVEL, "test")
    if fraction >= 1 or method == "bm25":
        return ev
    return X.Evaluation(
        ev.split,
        ev.model,
        ev.mode,
        ev.level,
        ev.view,
        ev.part,
        ev.test_level,
        fraction_variant(fraction),
    )
