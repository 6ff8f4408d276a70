"""``proofmatch index-corpus DIR --out INDEX``: a folder of papers to a search index in one
command, with no split and no training on them.

``DIR`` holds XHTML+MathML articles (``*.xhtml``, ``*.html``, optionally gzipped) or, when it
holds none, LaTeX sources (sub-folders, ``.tex``, ``.tar.gz``: converted with LaTeXML as
``proofmatch latex`` does). The workflow's own stages then run in one process, each writing what
it writes in the workflow into ``INDEX.corpus/`` beside the index (kept, to read with
``proofmatch show``): the manifest (``proofmatch.data.corpus``), the extraction
(``proofmatch.data.extract``) with its report, the linearization, the filter stage
(``proofmatch.data.filters``: by default only duplicate and empty pairs are left out, since a
search wants every proof; ``--filter`` applies the paper's filters of the config, Appendix A).
Every kept pair is indexed, in one part (``test``): a statement finds the proofs of every
article. Tokens are the original symbols (Conservation: what a user types).

Scoring (:func:`proofmatch.search.build.build_index`): BM25 without ``--run``; with ``--run``
(a training run's folder: its ``model/``, trained on any corpus, this one or another), the run
fused with BM25 by the weight λ chosen on the dev part of the corpus it was trained on (its
``fusion.json``; ``--fusion-weight`` gives one by hand), or the run alone with ``--no-fusion``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from proofmatch import config
from proofmatch.artifacts import read_parquet, write_parquet
from proofmatch.corpora import CorpusError
from proofmatch.data import corpus, extract, filters, latex, linearize, listing
from proofmatch.data.archives import Limits
from proofmatch.data.splits import DATA_COLUMNS
from proofmatch.logs import setup_logging
from proofmatch.search.build import build_index
from proofmatch.search.provenance import fusion_weight

log = logging.getLogger(__name__)

PART = "test"  # the one part every pair of the corpus is indexed in
# Without --filter: no language filter, no length bounds (a pair needs one token each side).
OPEN_FILTER = {"language": None, "min_tokens": 1, "max_tokens": 10**9}


class CorpusIndexError(ValueError):
    """A folder that gives no searchable pair; the message says what was found and where."""


def work_folder(out: str | Path) -> Path:
    """Where the stages' files go: ``INDEX.corpus/`` beside the index."""
    out = Path(out)
    return out.with_name(out.name + ".corpus")


def xhtml_folder(src: Path, work: Path, metadata: str | None, limits: Limits) -> tuple[Path, Any]:
    """``src`` itself when it holds XHTML articles; else its LaTeX sources converted with
    LaTeXML into ``work/latex/xhtml`` (metadata: the converted corpus's ``metadata.csv``)."""
    if not src.is_dir():
        raise CorpusIndexError(f"{src} is not a folder")
    try:
        listing.scan_articles(src)
        return src, metadata
    except CorpusError:  # no XHTML article: LaTeX sources
        pass
    report = latex.convert_corpus(src, work / "latex", metadata, limits)
    if not report["counts"].get("converted"):
        raise CorpusIndexError(
            f"{src} holds no XHTML article and no LaTeX source LaTeXML converted "
            f"(counts {json.dumps(report['counts'])}; {work / 'latex' / 'report.json'})"
        )
    return work / "latex" / "xhtml", work / "latex" / "metadata.csv"


def corpus_pairs(
    src: str | Path,
    work: str | Path,
    metadata: str | None = None,
    paper_filters: bool = False,
    limits: Limits | None = None,
) -> dict[str, Path]:
    """The workflow's corpus stages on ``src`` in ``work``: the files the index reads."""
    src, work = Path(src), Path(work)
    xhtml, metadata = xhtml_folder(src, work, metadata, limits or Limits())
    files = {
        "manifest": work / "corpus/manifest.parquet",
        "articles": work / "corpus/articles.parquet",
        "extract": work / "extract/shard-000.parquet",
        "extract_report": work / "extract/shard-000.report.json",
        "linearize": work / "linearize/shard-000.parquet",
        "pairs": work / "data/pairs.parquet",
        "audit": work / "data/filter_audit.parquet",
        "filter_report": work / "data/filter_report.json",
        "data": work / "data/index.parquet",
    }
    corpus.write_manifest(xhtml, 1, metadata, files["manifest"], files["articles"])
    extract.extract_shard(files["manifest"], 0, files["extract"], files["extract_report"])
    linearize.linearize_shard(files["extract"], files["linearize"])
    bounds = (
        {
            "language": config.default("filter.language"),
            "min_tokens": config.default("filter.min_tokens"),
            "max_tokens": config.default("filter.max_tokens"),
        }
        if paper_filters
        else OPEN_FILTER
    )
    report = filters.filter_pairs(
        [str(files["linearize"])],
        [str(files["extract_report"])],
        files["pairs"],
        files["audit"],
        files["filter_report"],
        **bounds,
    )
    pairs = read_parquet(files["pairs"], columns=[c for c in DATA_COLUMNS if c != "part"])
    if len(pairs) < 2:
        raise CorpusIndexError(
            f"{src}: {len(pairs)} searchable pair(s) in {report['articles_kept']} article(s) "
            f"({report['input_pairs']} extracted; {files['filter_report']}): an index needs 2"
        )
    pairs.insert(2, "part", PART)
    write_parquet(pairs, files["data"])
    log.info(
        "%s: %d pairs of %d articles to index (%d extracted)",
        src,
        len(pairs),
        pairs["article_id"].nunique(),
        report["input_pairs"],
    )
    return files


def index_corpus(
    src: str | Path,
    out: str | Path,
    *,
    run_dir: str | Path | None = None,
    fusion: bool = True,
    fusion_weight_by_hand: float | None = None,
    metadata: str | None = None,
    paper_filters: bool = False,
    limits: Limits | None = None,
    seed: int = config.default("seed"),
) -> dict[str, Any]:
    """Index every pair of the papers in ``src`` into ``out`` (module docstring); its index.json."""
    if run_dir is None and (fusion_weight_by_hand is not None or not fusion):
        raise CorpusIndexError("--fusion-weight and --no-fusion need --run (a training run)")
    method = "bm25" if run_dir is None else ("fusion" if fusion else "model")
    if method == "fusion":  # a missing or bad weight refused before the corpus is read
        fusion_weight(run_dir, fusion_weight_by_hand)
    files = corpus_pairs(src, work_folder(out), metadata, paper_filters, limits)
    return build_index(
        out,
        files["data"],
        run_dir=run_dir,
        method=method,
        pairs_parquet=files["pairs"],
        articles_parquet=files["articles"],
        parts=[PART],
        seed=seed,
        fusion_weight_by_hand=fusion_weight_by_hand,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n\n")[1].replace("\n", " ")
    parser.add_argument(
        "dir", help="folder of XHTML+MathML articles, or of LaTeX sources (folders, .tex, .tar.gz)"
    )
    parser.add_argument("--out", required=True, help="index folder to write (INDEX.corpus/ beside)")
    parser.add_argument(
        "--metadata", default=None, help="CSV/TSV/Parquet: article_id, title, categories"
    )
    parser.add_argument(
        "--run",
        default=None,
        help="a training run folder (RUN/model/, RUN/fusion.json): score with it fused with BM25; "
        "or a saved model folder (encoder and head) with --fusion-weight or --no-fusion; without "
        "it BM25 alone",
    )
    parser.add_argument(
        "--no-fusion", action="store_true", help="with --run: the run alone, no BM25"
    )
    parser.add_argument(
        "--fusion-weight",
        type=float,
        default=None,
        metavar="λ",
        help="with --run: this λ instead of RUN/fusion.json's (recorded as given by hand)",
    )
    parser.add_argument(
        "--filter",
        action="store_true",
        help="apply the paper's filters (language, length: the config's filter.*); default: "
        "every pair with a statement and a proof",
    )
    config.add_option(
        parser,
        "--timeout-s",
        key="corpus.latex.timeout_s",
        type=float,
        help="LaTeX sources: per-article LaTeXML time limit",
    )
    parser.add_argument(
        "--query",
        action="append",
        default=[],
        help="then search the new index for this statement, as `proofmatch search INDEX QUERY` "
        "does (repeatable)",
    )
    parser.add_argument("-k", type=int, default=5, help="--query: results shown")
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    try:
        meta = index_corpus(
            args.dir,
            args.out,
            run_dir=args.run,
            fusion=not args.no_fusion,
            fusion_weight_by_hand=args.fusion_weight,
            metadata=args.metadata,
            paper_filters=args.filter,
            limits=Limits(timeout_s=args.timeout_s),
        )
    except (ValueError, FileNotFoundError, CorpusError) as err:
        print(f"proofmatch index-corpus: {err}", file=sys.stderr)
        return 2
    print(
        json.dumps(
            {"index": str(args.out), "method": meta["method"], "n": meta["n"]}, sort_keys=True
        )
    )
    return max([0, *(search(args.out, q, args.k) for q in args.query)])


def search(index: str | Path, query: str, k: int) -> int:
    """``proofmatch search INDEX QUERY -k K`` on the new index; its exit status."""
    from proofmatch.search import search_cli

    parser = argparse.ArgumentParser(prog="proofmatch search")
    search_cli.add_arguments(parser)
    print()
    return search_cli.main(parser.parse_args([str(index), query, "-k", str(k)]))
