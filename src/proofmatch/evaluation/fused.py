"""A trained run fused with BM25, evaluated like every other method (this project's addition).

The scoring core is :mod:`proofmatch.scoring.fusion` (shared with the search index); this module
applies it to a trained run in two steps, which the workflow's rule ``fuse_run`` takes in one
process (:func:`fuse_run`, the model loaded once):

1. :func:`fusion_weight`: the run's model and BM25 score the run's **dev**
   part; the local MRR of the fused scores is measured for every λ of the grid (config
   ``fusion.weights``) and the best λ is written with the run, ``results/runs/.../fusion.json``
   (keys: ``weight``, ``mrr_by_weight``, ``part``, ``n``, ``lexical``, ``normalize``, and what each
   half reaches alone). The search index reads the same file, so a run has one λ everywhere.
2. :func:`evaluate_fusion` (and rule ``transfer_fusion_evaluate``, one pool a job): a part at a
   test level (an in-corpus test part, or a transfer pool) is scored with the stored λ, never
   re-tuned, and decoded locally and globally (:func:`proofmatch.decoding.assign.decode_all`);
   :func:`proofmatch.evaluation.evaluate.write_outputs` writes the Parquet and JSON of a model's
   evaluation, plus ``weight``, ``normalize`` and ``lexical``.

BM25 is the baseline's (:func:`proofmatch.scoring.lexical.bm25_scorer`): fitted on the
evaluated part's proofs, on both inputs (text and math), whatever input view the learned half
reads. The learned half's scores are its factors (``Matcher.factors``), as in
:func:`proofmatch.evaluation.evaluate.evaluate_matcher`.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from proofmatch import config
from proofmatch.artifacts import read_json, write_json
from proofmatch.data import views as tok
from proofmatch.data.splits import read_part
from proofmatch.decoding.assign import decode_all
from proofmatch.decoding.local import ScoreRows, factor_scorer
from proofmatch.evaluation.evaluate import (
    EvalSettings,
    PairScorer,
    _load_matcher,
    add_decode_arguments,
    eval_settings,
    level_files,
    write_folder,
    write_outputs,
)
from proofmatch.experiments import FUSION_LEXICAL
from proofmatch.logs import setup_logging
from proofmatch.scoring.fusion import (
    NORMALIZE,
    choose_weight,
    fused_scorer,
    scorer_mrr,
    weight_mrr,
)
from proofmatch.scoring.lexical import bm25_scorer
from proofmatch.scoring.tokens import token_lists

log = logging.getLogger(__name__)

WEIGHT_PART = "dev"  # λ is chosen here, never on a test part or a transfer pool


def halves(
    matcher: PairScorer, data: pd.DataFrame, view: str = "both", batch_size: int = 64
) -> tuple[ScoreRows, ScoreRows]:
    """The learned and the BM25 row-chunk scorers of one part (statement i's gold is proof i).

    The learned half reads the run's input ``view``; BM25 reads both inputs, as the baseline."""
    if len(data) == 0:
        raise ValueError("fusion needs at least one pair")
    t0 = time.perf_counter()
    A, B, row_bias, col_bias = matcher.factors(
        token_lists(data["statement_tokens"], view),
        token_lists(data["proof_tokens"], view),
        batch_size=batch_size,
    )
    log.info("encoded %d statements and proofs in %.1fs", len(data), time.perf_counter() - t0)
    learned = factor_scorer(A, B, row_bias, col_bias, device=getattr(matcher, "device", None))
    lexical = bm25_scorer(token_lists(data["statement_tokens"]), token_lists(data["proof_tokens"]))
    return learned, lexical


def measure_weights(
    learned: ScoreRows, lexical: ScoreRows, n: int, weights: Sequence[float], normalize: str
) -> dict[str, Any]:
    """The content of a ``fusion.json`` for one part: the dev MRR of every weight, the chosen
    weight (best MRR, the smaller λ on a tie) and the MRR of each half alone."""
    by_weight = weight_mrr(learned, lexical, n, weights, normalize=normalize)
    weight = choose_weight(by_weight)
    return {
        "weight": weight,
        "mrr": by_weight[weight],
        "normalize": normalize,
        "lexical": FUSION_LEXICAL,
        "n": n,
        "mrr_by_weight": {repr(w): m for w, m in by_weight.items()},
        "learned_mrr": scorer_mrr(learned, n),
        "lexical_mrr": scorer_mrr(lexical, n),
    }


def fusion_weight(
    run_dir: str | os.PathLike,
    data_parquet: str | os.PathLike,
    out_json: str | os.PathLike,
    weights: Sequence[float],
    normalize: str,
    view: str = "both",
    batch_size: int = 64,
) -> dict[str, Any]:
    """Choose the fusion weight of ``run_dir`` on the dev part of ``data_parquet`` (the data the
    run was trained on) and write it to ``out_json`` (the run's ``fusion.json``)."""
    info = choose_weight_of(
        _load_matcher(run_dir),
        run_dir,
        data_parquet,
        read_part(data_parquet, WEIGHT_PART),
        weights,
        normalize,
        view,
        batch_size,
    )
    write_json(info, out_json)
    return info


def choose_weight_of(
    matcher: PairScorer,
    run_dir: str | os.PathLike,
    data_parquet: str | os.PathLike,
    dev: pd.DataFrame,
    weights: Sequence[float],
    normalize: str,
    view: str,
    batch_size: int = 64,
) -> dict[str, Any]:
    """:func:`fusion_weight`'s content, with the run's model loaded and its dev part read (``dev``)."""
    learned, lexical = halves(matcher, dev, view, batch_size)
    info = measure_weights(learned, lexical, len(dev), weights, normalize)
    info.update(
        part=WEIGHT_PART,
        view=view,
        run_dir=str(run_dir),
        data=str(data_parquet),
        weights=[float(w) for w in weights],
    )
    log.info(
        "fusion weight of %s: λ = %g (%s), dev MRR %.4f; the run alone %.4f, BM25 alone %.4f (n=%d)",
        run_dir,
        info["weight"],
        normalize,
        info["mrr"],
        info["learned_mrr"],
        info["lexical_mrr"],
        info["n"],
    )
    return info


def read_weight(fusion_json: str | os.PathLike | Mapping[str, Any]) -> tuple[float, str]:
    """(λ, normalization) of a run's ``fusion.json``, checked: chosen on a dev part, for BM25."""
    info = dict(fusion_json) if isinstance(fusion_json, Mapping) else read_json(fusion_json)
    missing = [k for k in ("weight", "normalize", "lexical", "part") if k not in info]
    if missing:
        raise ValueError(f"{fusion_json}: not a fusion weight file (no {missing})")
    if info["part"] != WEIGHT_PART or info["lexical"] != FUSION_LEXICAL:
        raise ValueError(
            f"{fusion_json}: the weight must be chosen on {WEIGHT_PART} for {FUSION_LEXICAL}; "
            f"got part {info['part']!r}, lexical {info['lexical']!r}"
        )
    return float(info["weight"]), str(info["normalize"])


def evaluate_fusion(
    run_dir: str | os.PathLike,
    fusion_json: str | os.PathLike,
    data_parquet: str | os.PathLike,
    part: str,
    out_parquet: str | os.PathLike,
    out_json: str | os.PathLike,
    settings: EvalSettings,
) -> dict[str, Any]:
    """Score ``part`` of ``data_parquet`` with the run fused with BM25 at the run's stored weight,
    decode it locally and globally, write Parquet + JSON (the keys of a model's evaluation)."""
    weight = read_weight(fusion_json)
    return evaluate_fused_part(
        _load_matcher(run_dir),
        run_dir,
        weight,
        fusion_json,
        read_part(data_parquet, part),
        data_parquet,
        part,
        out_parquet,
        out_json,
        settings,
    )


def evaluate_fused_part(
    matcher: PairScorer,
    run_dir: str | os.PathLike,
    weight: tuple[float, str],
    fusion_json: str | os.PathLike,
    data: pd.DataFrame,
    data_parquet: str | os.PathLike,
    part: str,
    out_parquet: str | os.PathLike,
    out_json: str | os.PathLike,
    settings: EvalSettings,
) -> dict[str, Any]:
    """:func:`evaluate_fusion` with the model loaded, the weight read (``(λ, normalization)``)
    and ``part`` of ``data_parquet`` read (``data``)."""
    lam, normalize = weight
    learned, lexical = halves(matcher, data, settings.view, settings.batch_size)
    scorer = fused_scorer(learned, lexical, lam, normalize=normalize)
    local, glob = decode_all(scorer, len(data), settings.decode)
    meta = {
        "part": part,
        "run_dir": str(run_dir),
        "data": str(data_parquet),
        **settings.meta(),
        "method": "fusion",
        "lexical": FUSION_LEXICAL,
        "weight": lam,
        "normalize": normalize,
        "weight_file": str(fusion_json),
    }
    return write_outputs(data["pair_id"].tolist(), local, glob, out_parquet, out_json, meta)


def fuse_run(
    run_dir: str | os.PathLike,
    data: Mapping[str, str | os.PathLike],
    level: str,
    plan: Sequence[tuple[str, str]],
    out_json: str | os.PathLike,
    out_dir: str | os.PathLike,
    weights: Sequence[float],
    normalize: str,
    settings: EvalSettings,
) -> dict[str, Any]:
    """Both steps for one run in one process (the workflow's ``fuse_run``): its weight chosen on
    the dev part of ``data[level]`` (the run's own level) and written to ``out_json``
    (:func:`fusion_weight`), then each ``(part, test_level)`` of ``plan`` scored at that weight
    and written as ``{part}-{test_level}.{parquet,json}`` in ``out_dir`` (:func:`evaluate_fusion`),
    the model loaded once. Every file is byte for byte what the two steps write as separate
    processes; ``out_dir`` is written whole (:func:`proofmatch.artifacts.atomic_dir`). Returns the
    weight file's content."""
    if level not in data:
        raise ValueError(f"no data file for the run's level {level!r} (given: {sorted(data)})")
    parts = level_files(data, plan)
    matcher = _load_matcher(run_dir)
    info = choose_weight_of(
        matcher,
        run_dir,
        data[level],
        read_part(data[level], WEIGHT_PART),
        weights,
        normalize,
        settings.view,
        settings.batch_size,
    )
    write_json(info, out_json)
    weight = read_weight(info)
    write_folder(
        data,
        parts,
        out_dir,
        lambda frame, path, part, parquet, json: evaluate_fused_part(
            matcher, run_dir, weight, out_json, frame, path, part, parquet, json, settings
        ),
    )
    log.info("wrote %s and %s", out_json, out_dir)
    return info


# ----------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="step", required=True)
    weight = sub.add_parser("weight", help="choose λ on a run's dev part and write its fusion.json")
    weight.add_argument(
        "--run-dir", required=True, help="results/runs/{split}/{encoder}-{mode}/{level}-{view}"
    )
    weight.add_argument(
        "--data", required=True, help="the run's results/replaced/{split}/{level}.parquet"
    )
    weight.add_argument("--out", required=True, help="the run's fusion.json")
    config.add_option(
        weight, "--weights", key="fusion.weights", type=float, nargs="+", help="λ tried"
    )
    config.add_option(
        weight,
        "--normalize",
        key="fusion.normalize",
        choices=NORMALIZE,
        help="z-scores or reciprocal ranks",
    )
    weight.add_argument("--view", default="both", choices=tok.VIEWS, help="tokens scored")
    weight.add_argument("--batch-size", type=int, default=64, help="pairs encoded at once")
    weight.add_argument("--log", default=None, help="log file")
    evaluate = sub.add_parser("evaluate", help="score and decode a part with a run fused with BM25")
    evaluate.add_argument("--run-dir", required=True)
    evaluate.add_argument("--weight-file", required=True, help="the run's fusion.json")
    add_decode_arguments(evaluate)
    evaluate.add_argument("--view", default="both", choices=tok.VIEWS, help="tokens scored")
    evaluate.add_argument("--batch-size", type=int, default=64, help="pairs encoded at once")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    if args.step == "weight":
        fusion_weight(
            args.run_dir,
            args.data,
            args.out,
            args.weights,
            args.normalize,
            args.view,
            args.batch_size,
        )
    else:
        evaluate_fusion(
            args.run_dir,
            args.weight_file,
            args.data,
            args.part,
            args.out_parquet,
            args.out_json,
            eval_settings(args),
        )
    return 0
