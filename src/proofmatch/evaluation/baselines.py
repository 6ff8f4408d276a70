"""Token-matching baselines (paper §8's TF-IDF, this project's BM25), decoded like the models.

The scorers are :mod:`proofmatch.scoring.lexical` (what each method counts and how). Here a
baseline's statement x proof scores feed the same local/global decoders and output writer as
:mod:`proofmatch.evaluation.evaluate`, so their Parquet/JSON files have the same columns and keys.
TF-IDF is fitted on the *train* part's statements and proofs; BM25 needs no fit beyond the
evaluated part's proofs (its corpus).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from proofmatch.data.splits import read_parts
from proofmatch.decoding.assign import DecodeSettings, decode_all
from proofmatch.evaluation.evaluate import EvalSettings, add_decode_arguments, write_outputs
from proofmatch.experiments import METHODS
from proofmatch.logs import setup_logging
from proofmatch.scoring.lexical import bm25_scorer, tfidf_paper_scorer, tfidf_scorer
from proofmatch.scoring.tokens import token_lists


def run_baseline(
    method: str,
    data_parquet: str | os.PathLike,
    part: str,
    out_parquet: str | os.PathLike,
    out_json: str | os.PathLike,
    decode: DecodeSettings,
    threads: int | None = None,
) -> dict[str, Any]:
    """Score ``part`` of ``data_parquet`` with a baseline, decode it, write Parquet + JSON (as evaluate.py).
    ``threads``: the ranking's threads; the workflow passes the job's, so the job never imports
    torch (None: torch's thread count, as a model's evaluation)."""
    if method not in METHODS:
        raise ValueError(f"unknown baseline {method!r}; expected one of {METHODS}")
    fitted = method in ("tfidf", "tfidf_paper")  # fitted on the train part; BM25 needs none
    data, *train = read_parts(data_parquet, [part, "train"] if fitted else [part])
    statements = token_lists(data["statement_tokens"])
    proofs = token_lists(data["proof_tokens"])
    if fitted:
        fit = tfidf_scorer if method == "tfidf" else tfidf_paper_scorer
        scorer = fit(
            token_lists(train[0]["statement_tokens"]) + token_lists(train[0]["proof_tokens"]),
            statements,
            proofs,
        )
    else:
        scorer = bm25_scorer(statements, proofs)
    local, glob = decode_all(scorer, len(statements), decode, threads=threads)
    meta = {"part": part, "method": method, "data": str(data_parquet)}
    meta.update(EvalSettings(decode).meta())  # view: both
    return write_outputs(data["pair_id"].tolist(), local, glob, out_parquet, out_json, meta)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--method", required=True, choices=METHODS, help="lexical baseline")
    add_decode_arguments(parser)


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    run_baseline(
        args.method,
        args.data,
        args.part,
        args.out_parquet,
        args.out_json,
        DecodeSettings(args.topk, args.exact_max_n, args.seed),
    )
    return 0
