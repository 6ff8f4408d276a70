"""``proofmatch index``: build a search index folder (its layout: :mod:`proofmatch.search.folder`).

Building reads the parts asked for, in that order, and encodes every proof once:

* a model index: one :meth:`proofmatch.models.matcher.Matcher.factors` call per part on that
  part's statements and proofs, exactly as ``proofmatch evaluate``
  encodes the part it evaluates; the model folder is copied in as the query encoder and the run
  is named by :func:`proofmatch.search.provenance.run_identity` (model digest, training
  fingerprint, metrics);
* a ``tfidf`` index: vocabulary and idf fitted on the indexed statements and proofs (a search
  engine fits on its corpus; the baseline fits on the train part); a ``bm25`` index: the proofs'
  BM25Okapi weights and statistics (:func:`proofmatch.scoring.lexical.bm25_fit`);
* a ``fusion`` index: both a model index's arrays and a ``bm25`` index's weights, and the weight
  λ of ``z(learned) + λ · z(BM25)`` (:mod:`proofmatch.scoring.fusion`): the run's
  ``fusion.json`` (chosen on its dev part) or a weight given by hand, recorded as such
  (:func:`proofmatch.search.provenance.fusion_weight`); a fusion of several runs: each run's
  arrays in ``members/<i>/``, its model in ``model-<i>/``, and their weights (:mod:`proofmatch.search.members`);
* above ``faiss_above`` proofs a model index adds a FAISS IVF index whose ``nprobe`` is
  calibrated to a target recall@10 on up to ``CALIBRATION_QUERIES`` indexed statements
  (:mod:`proofmatch.search.ann`). A fusion index has none: its scores are standardised over every
  candidate, which FAISS's top-k does not give, so above ``faiss_above`` it is built only when
  exact search is asked for (``backend="exact"``) and refused otherwise.

The folder is staged beside the target, ``index.json`` written last, and swapped in whole, so a
killed build leaves the old index or none, never a mix of the two.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from proofmatch import config
from proofmatch.artifacts import atomic_dir, read_parquet, write_json
from proofmatch.data.splits import PARTS, read_parts
from proofmatch.logs import setup_logging
from proofmatch.scoring.lexical import bm25_fit, tfidf_fit, tfidf_vectors
from proofmatch.scoring.tokens import token_lists
from proofmatch.search import ann
from proofmatch.search.display import fragment_text
from proofmatch.search.folder import (
    ARRAYS,
    BM25_IDF_FILE,
    FORMAT,
    META_FILE,
    MODEL_DIR,
    PROOFS_FILE,
    files_digest,
)
from proofmatch.search.members import (
    FusionSystem,
    add_member_arguments,
    system_from_args,
    write_members,
)
from proofmatch.search.provenance import FUSION_FILE, fusion_weight, model_dir, run_identity

log = logging.getLogger(__name__)

METHODS = ("model", "tfidf", "bm25", "fusion")
LEARNED = ("model", "fusion")  # methods with a model half
BACKENDS = ("auto", "exact", "faiss")
FAISS_ABOVE = 100_000  # backend auto: exact search up to this many proofs, FAISS above (not decode.exact_max_n)
CALIBRATION_QUERIES = 1000


# ----------------------------------------------------------------------------- building


def _display_columns(
    data: pd.DataFrame,
    pairs_parquet: str | os.PathLike | None,
    articles_parquet: str | os.PathLike | None,
) -> pd.DataFrame:
    """kind, statement/proof XHTML and title for every indexed pair (None where not given)."""
    out = pd.DataFrame({"pair_id": data["pair_id"].astype(str)})
    if pairs_parquet is not None:
        wanted = out["pair_id"].tolist()
        pairs = read_parquet(
            pairs_parquet,
            columns=["pair_id", "kind", "statement_xml", "proof_xml"],
            filters=[("pair_id", "in", wanted)],
        )
        pairs = pairs.drop_duplicates("pair_id")
        missing = set(wanted) - set(pairs["pair_id"])
        if missing:
            raise ValueError(
                f"{pairs_parquet}: {len(missing)} indexed pairs have no XHTML, e.g. "
                f"{sorted(missing)[0]!r}; is the pairs file from the same run?"
            )
        out = out.merge(pairs, on="pair_id", how="left")
    else:
        out["kind"], out["statement_xml"], out["proof_xml"] = None, None, None
    out["title"] = None
    if articles_parquet is not None:
        titles = read_parquet(articles_parquet, columns=["article_id", "title"]).drop_duplicates(
            "article_id"
        )
        out["title"] = data["article_id"].map(titles.set_index("article_id")["title"]).to_numpy()
    return out


def _proofs_table(
    data: pd.DataFrame,
    pairs_parquet: str | os.PathLike | None,
    articles_parquet: str | os.PathLike | None,
) -> pd.DataFrame:
    """The rows of ``proofs.parquet``: display columns, ids, part, statement and proof text, statement and
    proof tokens."""
    table = _display_columns(data, pairs_parquet, articles_parquet)
    table.insert(1, "article_id", data["article_id"].astype(str).to_numpy())
    table.insert(2, "part", data["part"].astype(str).to_numpy())
    table["statement_text"] = [
        fragment_text(x, t) for x, t in zip(table["statement_xml"], data["statement_tokens"])
    ]
    # the proof as one line of text, read once here rather than per search result (an XHTML parse each)
    table["proof_text"] = [
        fragment_text(x) if isinstance(x, str) else "" for x in table["proof_xml"]
    ]
    table["statement_tokens"] = [list(map(str, t)) for t in data["statement_tokens"]]
    table["proof_tokens"] = [
        list(map(str, t)) for t in data["proof_tokens"]
    ]  # what an explanation masks
    return table


def _model_arrays(
    run_dir: Path, frames: Sequence[pd.DataFrame], batch_size: int
) -> tuple[dict, Any]:
    """Per part, one ``Matcher.factors`` call as evaluation makes it; the arrays concatenated."""
    from proofmatch.models.matcher import load_matcher

    matcher = load_matcher(run_dir)
    view = matcher.config.view
    got: dict[str, list[np.ndarray]] = {k: [] for k in ARRAYS}
    for df in frames:
        A, B, row, col = matcher.factors(
            token_lists(df["statement_tokens"], view),
            token_lists(df["proof_tokens"], view),
            batch_size=batch_size,
        )
        for key, value in zip(ARRAYS, (A, row, B, col)):
            got[key].append(value)
    return {
        k: np.ascontiguousarray(np.concatenate(v), dtype=np.float32) for k, v in got.items()
    }, matcher


def build_index(
    out_dir: str | os.PathLike,
    data_parquet: str | os.PathLike,
    *,
    run_dir: str | os.PathLike | None = None,
    method: str = "model",
    pairs_parquet: str | os.PathLike | None = None,
    articles_parquet: str | os.PathLike | None = None,
    parts: Sequence[str] = PARTS,
    backend: str = "auto",
    batch_size: int = 64,
    seed: int = config.default("seed"),
    target_recall: float = 0.95,
    faiss_above: int = FAISS_ABOVE,
    fusion_weight_by_hand: float | None = None,
    system: FusionSystem | None = None,
) -> dict[str, Any]:
    """Build an index folder (module docstring) atomically; return its ``index.json`` content.

    ``fusion_weight_by_hand``: a fusion index's λ instead of ``run_dir/fusion.json``'s (recorded as
    given by hand). ``system``: a fusion of several runs (no ``run_dir``)."""
    if system is not None and (method != "fusion" or run_dir is not None):
        raise ValueError("a fusion of several runs is method fusion, with its runs in the system")
    _check_request(
        method, run_dir if system is None else system.runs[0][1], backend, fusion_weight_by_hand
    )
    fusion = None
    if method == "fusion" and system is None:
        fusion = fusion_weight(run_dir, fusion_weight_by_hand)
    parts = list(dict.fromkeys(parts))
    frames, data = _indexed_pairs(data_parquet, parts)
    if method == "fusion" and backend == "auto" and len(data) > faiss_above:
        raise ValueError(
            f"a fusion index of {len(data)} proofs is above the exact limit ({faiss_above}): fusion "
            "standardises the learned and BM25 scores over every candidate, which FAISS's top-k "
            "does not give. Pass backend exact (--backend exact) to build it with exact search "
            "(every query then scores every proof), or raise --faiss-above"
        )
    t0 = time.perf_counter()
    target = Path(out_dir)
    with atomic_dir(target) as staging:
        table = _proofs_table(data, pairs_parquet, articles_parquet)
        meta: dict[str, Any] = {
            "format": FORMAT,
            "method": method,
            "n": len(data),
            "parts": parts,
            "part_sizes": {p: len(f) for p, f in zip(parts, frames)},
            "data": str(data_parquet),
            "pairs": None if pairs_parquet is None else str(pairs_parquet),
            "articles": None if articles_parquet is None else str(articles_parquet),
            "pair_ids_sha256": hashlib.sha256("\n".join(table["pair_id"]).encode()).hexdigest(),
            "backend": "exact",
            "seed": int(seed),
        }
        if system is not None:
            meta.update(write_members(staging, system, frames, _model_arrays, batch_size))
        elif method in LEARNED:
            use_faiss = method == "model" and (
                backend == "faiss" or (backend == "auto" and len(data) > faiss_above)
            )
            meta.update(
                _write_learned(
                    staging, Path(run_dir), frames, batch_size, use_faiss, seed, target_recall
                )
            )
        if method in ("tfidf", "bm25", "fusion"):
            meta.update(_write_lexical(staging, method, data))
        if fusion is not None:
            meta["fusion"] = fusion
        table.to_parquet(staging / PROOFS_FILE, index=False)
        meta["build_seconds"] = round(time.perf_counter() - t0, 2)
        write_json(meta, staging / META_FILE)
    _log_built(target, meta, meta.get("fusion"))
    return meta


def _check_request(
    method: str,
    run_dir: str | os.PathLike | None,
    backend: str,
    fusion_weight_by_hand: float | None,
) -> None:
    """Refuse a method, backend and run that do not go together, before anything is read."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if (method in LEARNED) != (run_dir is not None):
        raise ValueError(
            "a model or fusion index needs run_dir (a training run); tfidf and bm25 need none"
        )
    if fusion_weight_by_hand is not None and method != "fusion":
        raise ValueError("a fusion weight is for --method fusion only")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    if backend == "faiss" and method != "model":
        raise ValueError(
            "the FAISS backend is for model vectors: tfidf/bm25 search is a sparse product, and "
            "fusion standardises the scores of every candidate, which FAISS's top-k does not give"
        )


def _indexed_pairs(
    data_parquet: str | os.PathLike, parts: list[str]
) -> tuple[list[pd.DataFrame], pd.DataFrame]:
    """The parts' rows (one frame per part, as each is encoded) and all of them in one frame; a pair
    in two parts is an error (its row would be ambiguous)."""
    frames = read_parts(data_parquet, parts)
    data = pd.concat(frames, ignore_index=True)
    dup = data["pair_id"][data["pair_id"].duplicated()]
    if not dup.empty:
        raise ValueError(f"{data_parquet}: pair {dup.iloc[0]!r} is in two of the parts {parts}")
    return frames, data


def _write_learned(
    staging: Path,
    run_dir: Path,
    frames: Sequence[pd.DataFrame],
    batch_size: int,
    use_faiss: bool,
    seed: int,
    target_recall: float,
) -> dict[str, Any]:
    """A model or fusion index's half: the factor arrays, the model copy and, above the exact limit,
    the FAISS index; returns its ``index.json`` fields (``run``, ``model``, ``view``, ``dim``, FAISS's)."""
    arrays, matcher = _model_arrays(run_dir, frames, batch_size)
    for key, value in arrays.items():
        np.save(staging / f"{key}.npy", value)
    shutil.copytree(model_dir(run_dir), staging / MODEL_DIR, ignore=shutil.ignore_patterns(".*"))
    meta: dict[str, Any] = {
        "run": run_identity(run_dir),
        "model": {"digest": files_digest(staging / MODEL_DIR), "config": matcher.config.to_dict()},
        "view": matcher.config.view,
        "dim": int(arrays["proof_vectors"].shape[1]),
    }
    if use_faiss:
        meta["backend"] = "faiss"
        meta["faiss"] = _build_faiss(staging, arrays, seed, target_recall)
    return meta


def _write_lexical(staging: Path, method: str, data: pd.DataFrame) -> dict[str, Any]:
    """A tfidf index's vocabulary, idf and proof vectors, or a bm25 or fusion index's BM25 weights
    and statistics; returns its ``index.json`` fields (``bm25``; none for tfidf)."""
    proofs = token_lists(data["proof_tokens"])
    if method == "tfidf":
        vocab, idf = tfidf_fit(token_lists(data["statement_tokens"]) + proofs)
        np.save(staging / "idf.npy", idf)
        (staging / "vocabulary.json").write_text(json.dumps(vocab, ensure_ascii=False))
        sp.save_npz(staging / "proof_weights.npz", tfidf_vectors(proofs, vocab, idf))
        return {}
    W, fit = bm25_fit(proofs)
    (staging / "vocabulary.json").write_text(json.dumps(fit.vocab, ensure_ascii=False))
    sp.save_npz(staging / "proof_weights.npz", sp.csr_matrix(W))
    np.save(staging / BM25_IDF_FILE, fit.idf)
    return {
        "bm25": {
            "k1": fit.k1,
            "b": fit.b,
            "avgdl": fit.avgdl,
            "idf": BM25_IDF_FILE,
            "idf_over": "the indexed proofs",
        }
    }


def _log_built(target: Path, meta: dict[str, Any], fusion: dict[str, Any] | None) -> None:
    log.info(
        "index %s: %d proofs (%s, %s backend) in %.1fs",
        target,
        meta["n"],
        meta["method"],
        meta["backend"],
        meta["build_seconds"],
    )
    for m in meta.get("members", []):
        log.info("run %s weight %.4g: %s", m["name"], m["weight"], m["run"]["run_dir"])
    if fusion is not None:
        by_hand = fusion["source"] == "hand"
        log.info(
            "fusion weight %.4g (%s%s)",
            fusion["weight"],
            "given by hand" if by_hand else "from ",
            "" if by_hand else fusion["file"],
        )


def _build_faiss(
    staging: Path, arrays: dict[str, np.ndarray], seed: int, target_recall: float
) -> dict:
    col = arrays["proof_bias"]
    extra = None if not np.any(col) else col
    vectors = ann.augment(arrays["proof_vectors"], extra)
    index = ann.build_ivf(vectors, seed)
    A = arrays["statement_vectors"]
    pick = np.sort(
        np.random.default_rng(seed).choice(len(A), min(len(A), CALIBRATION_QUERIES), replace=False)
    )
    queries = ann.augment(A[pick], None if extra is None else np.ones(len(pick), np.float32))
    info = ann.calibrate(index, queries, vectors, target_recall)
    info["augmented"] = extra is not None
    ann.save(index, str(staging / ann.INDEX_FILE))
    return info


# ----------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Encode every proof of a replaced split file once into a search index folder. Methods: model (a "
        "trained run's factors, --run), tfidf, bm25 (no model), and fusion: z(learned) + λ·z(BM25) per query, "
        "both standardised over the proofs a query searches (proofmatch.scoring.fusion). A fusion index "
        "holds the run's model arrays and the proofs' BM25 weights (idf over the indexed proofs); λ is RUN/"
        f"{FUSION_FILE}'s 'weight' (chosen on the run's dev part) unless --fusion-weight gives one, which the "
        "index records as given by hand. Fusion search is exact: above --exact-max-n proofs a fusion index is "
        "refused unless --backend exact."
    )
    parser.add_argument(
        "data", help="replaced-split Parquet, e.g. results/replaced/mixed/conservation.parquet"
    )
    parser.add_argument("--out", required=True, help="index folder to write")
    _add_method_arguments(parser)
    parser.add_argument(
        "--pairs", help="results/data/pairs.parquet: the XHTML fragments to display"
    )
    parser.add_argument("--articles", help="results/corpus/articles.parquet: article titles")
    parser.add_argument(
        "--parts",
        nargs="+",
        default=list(PARTS),
        choices=PARTS,
        help="parts whose proofs are indexed",
    )
    _add_search_arguments(parser)
    parser.add_argument("--log", default=None, help="log file (default: stderr only)")


def _add_method_arguments(parser: argparse.ArgumentParser) -> None:
    """What scores the proofs: the method, its run and a fusion weight by hand."""
    parser.add_argument(
        "--run",
        "--run-dir",
        dest="run",
        action="append",
        metavar="[NAME=]RUN",
        help="training run folder (results/runs/...); required for --method model and fusion; "
        "repeated: a fusion of several runs (--weights and --bm25-weight, or --weights-from)",
    )
    parser.add_argument(
        "--method",
        default="model",
        choices=METHODS,
        help="model, tfidf, bm25, or fusion (model + BM25; needs --run and RUN/"
        f"{FUSION_FILE} or --fusion-weight)",
    )
    parser.add_argument(
        "--fusion",
        action="store_const",
        const="fusion",
        dest="method",
        help="the same as --method fusion",
    )
    parser.add_argument(
        "--fusion-weight",
        type=float,
        default=None,
        metavar="λ",
        help=f"fusion: this λ instead of RUN/{FUSION_FILE}'s (recorded in index.json as given "
        "by hand)",
    )
    add_member_arguments(parser)


def _add_search_arguments(parser: argparse.ArgumentParser) -> None:
    """How the index is searched and built: exact or FAISS, its recall, batches and seed."""
    parser.add_argument(
        "--backend",
        default="auto",
        choices=BACKENDS,
        help=f"auto: exact up to --faiss-above proofs, FAISS above (default {FAISS_ABOVE}); "
        "a fusion index is always exact (above the limit only with --backend exact)",
    )
    parser.add_argument(
        "--faiss-above",
        "--exact-max-n",
        dest="faiss_above",
        type=int,
        default=FAISS_ABOVE,
        help="backend auto: FAISS above this many proofs (--exact-max-n: its former name)",
    )
    parser.add_argument(
        "--recall", type=float, default=0.95, help="FAISS: target recall@10 for nprobe"
    )
    parser.add_argument("--batch-size", type=int, default=64, help="proofs encoded at once")
    config.add_option(
        parser, "--seed", key="seed", type=int, help="seed of the FAISS training and calibration"
    )


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    try:
        system = system_from_args(args)
        meta = build_index(
            args.out,
            args.data,
            run_dir=None if system is not None or not args.run else args.run[0],
            method=args.method,
            pairs_parquet=args.pairs,
            articles_parquet=args.articles,
            parts=args.parts,
            backend=args.backend,
            batch_size=args.batch_size,
            seed=args.seed,
            target_recall=args.recall,
            faiss_above=args.faiss_above,
            fusion_weight_by_hand=args.fusion_weight,
            system=system,
        )
    except (ValueError, FileNotFoundError) as err:
        print(f"proofmatch index: {err}", file=sys.stderr)
        return 2
    summary = {k: meta[k] for k in ("method", "n", "parts", "backend")}
    if "fusion" in meta:
        summary["fusion_weight"], summary["fusion_weight_source"] = (
            meta["fusion"]["weight"],
            meta["fusion"]["source"],
        )
    if "members" in meta:
        summary["weights"] = {m["name"]: m["weight"] for m in meta["members"]}
    print(json.dumps(summary, sort_keys=True))
    return 0
