"""Evaluate a trained matcher on one part of a replaced data set (paper §3, §6, §8, Appendix B).

The part's statements and proofs are encoded once (``Matcher.factors``), the scores are streamed
in row chunks (:mod:`proofmatch.decoding.local`), and two artifacts are written atomically:

* a Parquet file with one row per statement: ``pair_id``, ``gold_rank`` (1-based, ties count
  against the gold), ``top1`` (pair_id of the best proof), ``global_pred`` (pair_id of the proof
  that global decoding assigned), ``topk_ids`` / ``topk_scores`` (the k best proofs, best first);
* a JSON file with ``n``, ``mrr``, ``acc``, ``global_acc``, ``global_method`` (exact/sparse),
  ``fallback_edges``, ``kbest_deficiency``, the Table 7 ``hubness`` counts and the settings.

Metrics are fractions in [0, 1]; the tables turn them into percentages.
:func:`write_outputs` is shared with :mod:`proofmatch.evaluation.baselines`, so both produce the same files.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from proofmatch import config
from proofmatch.artifacts import atomic_dir, write_json, write_parquet
from proofmatch.data import views as tok
from proofmatch.data.splits import PARTS, read_part, read_parts
from proofmatch.decoding.assign import DecodeSettings, GlobalResult, decode_all, decode_metrics
from proofmatch.decoding.local import LocalResult, factor_scorer
from proofmatch.evaluation.bootstrap import STATEMENTS, statements_block
from proofmatch.logs import setup_logging
from proofmatch.scoring.tokens import token_lists

log = logging.getLogger(__name__)


class PairScorer(Protocol):
    """What evaluation needs from a trained model: its scores as factors (implemented by
    :class:`proofmatch.models.matcher.Matcher`; a test may pass any object that has ``factors``)."""

    def factors(
        self,
        statement_tokens: Sequence[Sequence[str]],
        proof_tokens: Sequence[Sequence[str]],
        batch_size: int = ...,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(A, B, row_bias, col_bias) with scores = A @ B.T + row_bias[:, None] + col_bias[None, :]."""


@dataclass(frozen=True)
class EvalSettings:
    """How a trained run is evaluated: its decoding, the tokens it scores (``view``) and its
    encoding batch (memory only). One object from the config or the command line down to the
    decoding (:meth:`from_config`), in place of five values passed along each function."""

    decode: DecodeSettings
    view: str = "both"
    batch_size: int = 64

    def __post_init__(self) -> None:
        check_view(self.view)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], view: str = "both") -> EvalSettings:
        """The validated config's decoding (:meth:`DecodeSettings.from_config`), for ``view``."""
        return cls(DecodeSettings.from_config(cfg), view)

    def meta(self) -> dict[str, Any]:
        """What an evaluation JSON records of them."""
        decode = self.decode
        return {"view": self.view, "seed": int(decode.seed), "exact_max_n": int(decode.exact_max_n)}


# ----------------------------------------------------------------------------- outputs


def _list_array(values: pa.Array, n: int, k: int) -> pa.Array:
    """n lists of k values each, from a flat array (Arrow offsets, no Python loop)."""
    offsets = pa.array(np.arange(0, n * k + 1, k, dtype=np.int64))
    return pa.LargeListArray.from_arrays(offsets, values)


def results_table(pair_ids: Sequence[str], local: LocalResult, glob: GlobalResult) -> pa.Table:
    """Per-statement results as an Arrow table (the n x k id lists are one ``take``)."""
    ids = pa.array(np.asarray(pair_ids, dtype=object), pa.string())
    n, k = local.topk_idx.shape
    if len(ids) != n:
        raise ValueError(f"{len(ids)} pair ids for {n} decoded statements")
    return pa.table(
        {
            "pair_id": ids,
            "gold_rank": pa.array(local.gold_rank, pa.int64()),
            "top1": ids.take(pa.array(local.top1)),
            "global_pred": ids.take(pa.array(glob.assignment)),
            "topk_ids": _list_array(ids.take(pa.array(local.topk_idx.ravel())), n, k),
            "topk_scores": _list_array(pa.array(local.topk_score.ravel(), pa.float32()), n, k),
        }
    )


def write_outputs(
    pair_ids: Sequence[str],
    local: LocalResult,
    glob: GlobalResult,
    out_parquet: str | os.PathLike,
    out_json: str | os.PathLike,
    meta: dict[str, Any],
) -> dict[str, Any]:
    """Write the per-statement Parquet and the metrics JSON; return the JSON's content. The JSON
    ends with the per-statement block that the tables' intervals resample
    (:func:`proofmatch.evaluation.bootstrap.statements_block`), so a table reads no Parquet."""
    write_parquet(results_table(pair_ids, local, glob), out_parquet)
    block = statements_block(pair_ids, local.gold_rank, local.top1, glob.assignment)
    metrics = {**decode_metrics(local, glob), **meta, STATEMENTS: block}
    write_json(metrics, out_json)
    log.info(
        "wrote %s and %s: MRR %.4f acc %.4f global acc %.4f (%s)",
        out_parquet,
        out_json,
        metrics["mrr"],
        metrics["acc"],
        metrics["global_acc"],
        metrics["global_method"],
    )
    return metrics


# ----------------------------------------------------------------------------- evaluation


def evaluate_matcher(
    matcher: PairScorer, data: pd.DataFrame, settings: EvalSettings
) -> tuple[LocalResult, GlobalResult]:
    """Encode the pairs of ``data`` once and decode them locally and globally; scores and top-k
    lists are computed on the matcher's device (its ``device`` attribute; CPU if it has none)."""
    statements = token_lists(data["statement_tokens"], settings.view)
    proofs = token_lists(data["proof_tokens"], settings.view)
    t0 = time.perf_counter()
    A, B, row_bias, col_bias = matcher.factors(statements, proofs, batch_size=settings.batch_size)
    log.info("encoded %d statements and proofs in %.1fs", len(statements), time.perf_counter() - t0)
    scorer = factor_scorer(A, B, row_bias, col_bias, device=getattr(matcher, "device", None))
    return decode_all(scorer, len(statements), settings.decode)


def _load_matcher(run_dir: str | os.PathLike) -> PairScorer:
    """The trained matcher of ``run_dir`` (every evaluation job's, Figure 2's and fusion's): torch is
    imported here, only when a real run is scored, and tests replace this with a fake."""
    from proofmatch.models.matcher import load_matcher

    return load_matcher(run_dir)


def evaluate_run(
    run_dir: str | os.PathLike,
    data_parquet: str | os.PathLike,
    part: str,
    out_parquet: str | os.PathLike,
    out_json: str | os.PathLike,
    settings: EvalSettings,
) -> dict[str, Any]:
    """Evaluate the model of ``run_dir`` on ``part`` of ``data_parquet``; write Parquet + JSON.

    ``settings`` has no default: the workflow passes its config's, the CLI the schema's
    (:func:`add_decode_arguments`)."""
    return evaluate_part(
        _load_matcher(run_dir),
        run_dir,
        read_part(data_parquet, part),
        data_parquet,
        part,
        out_parquet,
        out_json,
        settings,
    )


def evaluate_part(
    matcher: PairScorer,
    run_dir: str | os.PathLike,
    data: pd.DataFrame,
    data_parquet: str | os.PathLike,
    part: str,
    out_parquet: str | os.PathLike,
    out_json: str | os.PathLike,
    settings: EvalSettings,
) -> dict[str, Any]:
    """:func:`evaluate_run` with the model loaded and ``part`` of ``data_parquet`` read (``data``)."""
    local, glob = evaluate_matcher(matcher, data, settings)
    meta = {"part": part, "run_dir": str(run_dir), "data": str(data_parquet), **settings.meta()}
    meta["method"] = "model"
    return write_outputs(data["pair_id"].tolist(), local, glob, out_parquet, out_json, meta)


def check_view(view: str) -> None:
    if view not in tok.VIEWS:
        raise ValueError(f"unknown input view {view!r}; expected one of {tok.VIEWS}")


def level_files(
    data: Mapping[str, str | os.PathLike], plan: Sequence[tuple[str, str]]
) -> dict[str, list[str]]:
    """The parts to read from each test level's data file of ``plan`` (``(part, test_level)``
    pairs), checking that ``data`` (test level -> replaced split Parquet) has every level."""
    parts: dict[str, list[str]] = {}
    for part, level in plan:
        if part not in PARTS:
            raise ValueError(f"unknown part {part!r}; expected one of {PARTS}")
        if level not in data:
            raise ValueError(f"no data file for test level {level!r} (given: {sorted(data)})")
        parts.setdefault(level, []).append(part)
    return parts


def evaluate_folder(
    run_dir: str | os.PathLike,
    data: Mapping[str, str | os.PathLike],
    plan: Sequence[tuple[str, str]],
    out_dir: str | os.PathLike,
    settings: EvalSettings,
) -> dict[str, dict[str, Any]]:
    """Every evaluation of one trained run in one process (the workflow's ``evaluate_run``):
    for each ``(part, test_level)`` of ``plan``, the files :func:`evaluate_run` writes for that part
    of ``data[test_level]``, named ``{part}-{test_level}.{parquet,json}`` in ``out_dir``.

    Why one process: a demo evaluation is a fraction of a second of work after a second or more
    of Python and torch start-up, and a run is evaluated at up to five parts and levels. The
    model is loaded once and each data file read once; every file is byte for byte what
    :func:`evaluate_run` writes. ``out_dir`` is written whole (:func:`proofmatch.artifacts.atomic_dir`):
    a killed job leaves the previous folder or none. Returns each file stem's metrics."""
    parts = level_files(data, plan)
    matcher = _load_matcher(run_dir)
    out = write_folder(
        data,
        parts,
        out_dir,
        lambda frame, path, part, parquet, json: evaluate_part(
            matcher, run_dir, frame, path, part, parquet, json, settings
        ),
    )
    log.info("wrote %s: %s", out_dir, ", ".join(sorted(out)))
    return out


PartWriter = Callable[[pd.DataFrame, str | os.PathLike, str, Path, Path], dict[str, Any]]


def write_folder(
    data: Mapping[str, str | os.PathLike],
    parts: Mapping[str, Sequence[str]],
    out_dir: str | os.PathLike,
    write_part: PartWriter,
) -> dict[str, dict[str, Any]]:
    """The folder of one run's (or fusion's) evaluations: for each test level's ``parts``
    (:func:`level_files`), each part read once and handed to ``write_part(frame, data file,
    part, parquet, json)``, which writes ``{part}-{test_level}.{parquet,json}``. ``out_dir`` is
    written whole (:func:`proofmatch.artifacts.atomic_dir`). Returns each file stem's result."""
    out: dict[str, dict[str, Any]] = {}
    with atomic_dir(out_dir) as staging:
        for level, wanted in parts.items():
            for part, frame in zip(wanted, read_parts(data[level], wanted)):
                stem = f"{part}-{level}"
                out[stem] = write_part(
                    frame, data[level], part, staging / f"{stem}.parquet", staging / f"{stem}.json"
                )
    return out


# ----------------------------------------------------------------------------- CLI


def add_decode_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared with ``proofmatch baselines``."""
    parser.add_argument("--data", required=True, help="results/replaced/{split}/{level}.parquet")
    parser.add_argument("--part", default="test", choices=PARTS, help="part evaluated")
    parser.add_argument("--out-parquet", required=True, help="per-pair ranks and top-k (parquet)")
    parser.add_argument("--out-json", required=True, help="metrics (JSON)")
    config.add_option(parser, "--topk", key="decode.topk", type=int, help="k of the k-best lists")
    config.add_option(
        parser,
        "--exact-max-n",
        key="decode.exact_max_n",
        type=int,
        help="exact dense LAP up to this n, sparse k-best LAPMOD above",
    )
    config.add_option(
        parser, "--seed", key="seed", type=int, help="seed of the fallback permutation"
    )
    parser.add_argument("--log", default=None, help="log file")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run-dir", required=True, help="results/runs/{split}/{encoder}-{mode}/{level}-{view}"
    )
    add_decode_arguments(parser)
    parser.add_argument("--view", default="both", choices=tok.VIEWS, help="tokens scored")
    parser.add_argument("--batch-size", type=int, default=64, help="pairs encoded at once")


def eval_settings(args: argparse.Namespace) -> EvalSettings:
    """The settings of the command line's options (:func:`add_decode_arguments`, ``--view``,
    ``--batch-size``)."""
    decode = DecodeSettings(args.topk, args.exact_max_n, args.seed)
    return EvalSettings(decode, args.view, args.batch_size)


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    evaluate_run(
        args.run_dir, args.data, args.part, args.out_parquet, args.out_json, eval_settings(args)
    )
    return 0
