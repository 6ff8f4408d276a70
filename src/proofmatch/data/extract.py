"""Extract statement-proof pairs from LaTeXML / arXMLiv XHTML articles (untrusted input).

One article goes through :mod:`proofmatch.data.xmlsafe` (bounded read, gzip, text checks, HTML
entities, hardened parser) and then :func:`proofmatch.data.statements.find_pairs` (theorem-like
elements, their kinds, the proofs that follow them). This module runs that on many files, one
manifest shard or one folder, and writes the pairs as a Parquet table (:data:`PAIRS_SCHEMA`)
with a JSON report beside it. Every failure of one file is a counted skip
(:data:`proofmatch.data.xmlsafe.REASONS`) in the report, never a failed run. The report also
counts the near misses of the pair rule (``near_misses``, by side in ``near_miss_sides`` and by
the two class values in ``near_miss_classes``; see :mod:`proofmatch.data.statements`).

**Memory per job.** One article's pairs are bounded by its input
(:func:`proofmatch.data.statements.output_budget`); a shard's by :data:`SHARD_OUTPUT_CHARS`: the
file whose pairs would carry the shard's XML past it is skipped as ``shard_output_too_large``
(counted, its path in the report), so many small amplifying files cannot add up to an unbounded
shard, for this job or for the jobs that read its table. The pairs go to the shard's Parquet
in row groups of at most :data:`BATCH_CHARS` characters of XML (:class:`PairSink`), so the job
holds one batch and one article, never the shard.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from proofmatch import config
from proofmatch.artifacts import atomic_path, marked_schema, write_json
from proofmatch.data import corpus, listing
from proofmatch.data.statements import ArticleResult, OutputTooLarge, find_pairs, output_budget
from proofmatch.data.xmlsafe import (
    SkipFile,
    check_text,
    is_html_path,
    parse_document,
    read_bounded,
    replace_html_entities,
)
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

PAIR_COLUMNS = ["article_id", "statement_id", "kind", "position", "statement_xml", "proof_xml"]
PAIRS_SCHEMA = pa.schema(
    [
        ("article_id", pa.string()),
        ("statement_id", pa.string()),
        ("kind", pa.string()),
        ("position", pa.int64()),
        ("statement_xml", pa.string()),
        ("proof_xml", pa.string()),
    ]
)


#: Most characters of ``statement_xml`` + ``proof_xml`` one shard (or one folder) may hold: the
#: file whose pairs would cross it is skipped as ``shard_output_too_large``. Real shards hold far
#: less (the demo's 6,200 pairs of a shard: about 0.7 GB in memory as rows).
SHARD_OUTPUT_CHARS = 2**30
#: Characters of XML held before they are written out as one row group of the shard's Parquet.
BATCH_CHARS = 2**25


# --------------------------------------------------------------------------------------------
# one article


def extract_bytes(
    data: bytes,
    article_id: str,
    *,
    max_depth: int = config.default("extract.max_depth"),
    allow_html: bool = False,
) -> ArticleResult:
    """Pairs from one article's (decompressed) bytes; raises :class:`SkipFile` for a bad input."""
    root, parser, replaced, unknown = parse_article_bytes(
        data, max_depth=max_depth, allow_html=allow_html
    )
    try:
        result = find_pairs(
            root,
            article_id,
            may_have_entities=unknown > 0,
            max_output_chars=output_budget(len(data)),
        )
    except OutputTooLarge as exc:
        raise SkipFile("output_too_large", str(exc)) from None
    result.parser = parser
    result.entities_replaced = replaced
    return result


def parse_article_bytes(
    data: bytes, *, max_depth: int = config.default("extract.max_depth"), allow_html: bool = False
) -> tuple[Any, str, int, int]:
    """(root, parser, HTML entities replaced, unknown entities) of one article's (decompressed)
    bytes, read as extraction reads it (text checks, entities, hardened parser); raises
    :class:`SkipFile` for a bad input. :mod:`proofmatch.data.article_text` reads articles this way too."""
    check_text(data)
    data, replaced, unknown = replace_html_entities(data)
    root, parser = parse_document(data, max_depth=max_depth, allow_html=allow_html)
    return root, parser, replaced, unknown


def extract_file(
    path: str | os.PathLike,
    article_id: str,
    *,
    max_file_mb: float = config.default("extract.max_file_mb"),
    max_depth: int = config.default("extract.max_depth"),
) -> ArticleResult:
    """Pairs from one article file (``.xhtml``, ``.html``, optionally ``.gz``); may raise SkipFile."""
    data = read_bounded(path, int(max_file_mb * 2**20))
    return extract_bytes(data, article_id, max_depth=max_depth, allow_html=is_html_path(path))


# --------------------------------------------------------------------------------------------
# many files: report and table


def new_report(max_file_mb: float, max_depth: int) -> dict[str, Any]:
    return {
        "files_seen": 0,
        "files_ok": 0,
        "files_skipped": {},
        "skipped_files": [],
        "theorem_like": 0,
        "theorem_like_kinds": {},
        "kind_sources": {},
        "unknown_kind_titles": {},
        "pairs": 0,
        "articles_with_pairs": 0,
        "kinds": {},
        "files_html_parser": 0,
        "entities_replaced": 0,
        "unresolved_entities": 0,
        "duplicate_statement_ids": 0,
        "near_misses": 0,
        "near_miss_sides": {},
        "near_miss_classes": {},
        "max_file_mb": max_file_mb,
        "max_depth": max_depth,
    }


#: Report entries that are {name: count} tables (summed key by key when shards merge).
_COUNT_KEYS = (
    "files_skipped",
    "theorem_like_kinds",
    "kind_sources",
    "unknown_kind_titles",
    "kinds",
    "near_miss_sides",
    "near_miss_classes",
)


def _add_counts(target: dict[str, int], counts: dict[str, int]) -> None:
    for key, value in counts.items():
        target[key] = target.get(key, 0) + value


def merge_reports(reports: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Sum per-shard extraction reports into one (limits taken from the first report)."""
    reports = list(reports)
    if not reports:
        raise ValueError("no extraction reports to merge")
    out = new_report(reports[0]["max_file_mb"], reports[0]["max_depth"])
    for rep in reports:
        for key, value in rep.items():
            if key in _COUNT_KEYS:
                _add_counts(out[key], value)
            elif key == "skipped_files":
                out[key].extend(value)
            elif key not in ("max_file_mb", "max_depth", "shard"):
                out[key] += value
    out["skipped_files"].sort(key=lambda s: s["path"])
    return _sorted_counts(out)


def _sorted_counts(report: dict[str, Any]) -> dict[str, Any]:
    for key in _COUNT_KEYS:
        report[key] = dict(sorted(report[key].items(), key=lambda kv: (-kv[1], kv[0])))
    return report


def extract_files(
    items: Sequence[tuple[str, str]],
    *,
    max_file_mb: float = config.default("extract.max_file_mb"),
    max_depth: int = config.default("extract.max_depth"),
    desc: str = "extract",
    listing_skipped: Sequence[dict[str, str]] = (),
) -> tuple[pa.Table, dict[str, Any]]:
    """Extract (article_id, path) items in order; return (pairs, report). Never raises per file.

    The pairs come as an Arrow table (``.to_pandas()`` for a frame): 10^5 XML fragments convert
    to Arrow directly much faster than through pandas' string arrays. ``listing_skipped``: files
    left out before extraction (:func:`proofmatch.data.listing.scan_articles`), counted as seen
    and skipped. The whole table is held; :func:`extract_shard` and :func:`extract_dir` stream
    it to their Parquet instead (:func:`stream_files`).
    """
    batches: list[pa.Table] = []
    report = stream_files(
        items,
        batches.append,
        max_file_mb=max_file_mb,
        max_depth=max_depth,
        desc=desc,
        listing_skipped=listing_skipped,
    )
    table = pa.concat_tables(batches) if batches else pairs_table([])
    return table, report


def stream_files(
    items: Sequence[tuple[str, str]],
    write: Callable[[pa.Table], None],
    *,
    max_file_mb: float = config.default("extract.max_file_mb"),
    max_depth: int = config.default("extract.max_depth"),
    desc: str = "extract",
    listing_skipped: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    """Extract (article_id, path) items in order, handing the pairs to ``write`` as tables of at
    most :data:`BATCH_CHARS` characters of XML (or one article's, if larger); return the report.

    A file whose pairs would carry the total past :data:`SHARD_OUTPUT_CHARS` is skipped as
    ``shard_output_too_large`` (later, smaller files may still fit).
    """
    report = new_report(max_file_mb, max_depth)
    for skip in listing_skipped:
        report["files_seen"] += 1
        report["files_skipped"][skip["reason"]] = report["files_skipped"].get(skip["reason"], 0) + 1
        report["skipped_files"].append(dict(skip))
    rows: list[dict[str, Any]] = []
    held = total = 0
    for article_id, path in tqdm(items, desc=desc, unit="file"):
        report["files_seen"] += 1
        try:
            if not (listing.is_utf8(article_id) and listing.is_utf8(path)):
                raise SkipFile("bad_name", "the path or id is not valid UTF-8; rename the file")
            res = extract_file(path, article_id, max_file_mb=max_file_mb, max_depth=max_depth)
            chars = sum(len(p["statement_xml"]) + len(p["proof_xml"]) for p in res.pairs)
            if total + chars > SHARD_OUTPUT_CHARS:
                raise SkipFile(
                    "shard_output_too_large",
                    f"its pairs ({chars:,} characters of XML) would carry the shard past "
                    f"{SHARD_OUTPUT_CHARS:,} (it holds {total:,}); fix: more shards "
                    "(corpus.n_shards), or check the file for repeated nested statements",
                )
        except SkipFile as skip:
            reason, detail = skip.reason, skip.detail
        except (
            Exception
        ) as exc:  # a bug must not cost the other articles; it is reported, not hidden
            log.exception("unexpected error on %s", path)
            reason, detail = "internal_error", f"{type(exc).__name__}: {exc}"
        else:
            report["files_ok"] += 1
            report["theorem_like"] += sum(res.theorem_like_kinds.values())
            _add_counts(report["theorem_like_kinds"], res.theorem_like_kinds)
            _add_counts(report["kind_sources"], res.kind_sources)
            _add_counts(report["unknown_kind_titles"], res.unknown_kind_titles)
            _add_counts(report["kinds"], Counter(p["kind"] for p in res.pairs))
            report["pairs"] += len(res.pairs)
            report["articles_with_pairs"] += bool(res.pairs)
            report["files_html_parser"] += res.parser == "html"
            report["entities_replaced"] += res.entities_replaced
            report["unresolved_entities"] += res.unresolved_entities
            report["duplicate_statement_ids"] += res.duplicate_ids
            report["near_misses"] += sum(res.near_misses.values())
            _add_counts(report["near_miss_sides"], res.near_misses)
            _add_counts(report["near_miss_classes"], res.near_miss_classes)
            if rows and held + chars > BATCH_CHARS:
                write(pairs_table(rows))
                rows, held = [], 0
            rows.extend(res.pairs)
            held += chars
            total += chars
            del res
            continue
        log.warning("skipped %s (%s): %s", path, reason, detail)
        report["files_skipped"][reason] = report["files_skipped"].get(reason, 0) + 1
        report["skipped_files"].append(
            {"path": listing.display_path(path), "reason": reason, "detail": detail}
        )
    if rows:
        write(pairs_table(rows))
    return _sorted_counts(report)


def pairs_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Pair rows as an Arrow table with :data:`PAIRS_SCHEMA` (column-wise: 5x faster than pandas)."""
    return pa.table(
        {f.name: pa.array([r[f.name] for r in rows], type=f.type) for f in PAIRS_SCHEMA},
        schema=PAIRS_SCHEMA,
    )


def _extract_to(
    items: Sequence[tuple[str, str]],
    out_parquet: str | os.PathLike,
    report_json: str | os.PathLike,
    *,
    shard: int | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Extract ``items`` straight into ``out_parquet`` (row group by row group) and write the
    report beside it: both staged first, renamed in only when both are written, so a failure
    leaves neither (never a Parquet without its report)."""
    with (
        atomic_path(out_parquet, ".parquet", digest=True) as tmp_parquet,
        atomic_path(report_json, ".json") as tmp_json,
    ):
        with pq.ParquetWriter(tmp_parquet, marked_schema(PAIRS_SCHEMA)) as writer:
            report = stream_files(items, writer.write_table, **kwargs)
        if shard is not None:
            report["shard"] = shard
        write_json(report, tmp_json)
    skipped = ", ".join(f"{k} {v}" for k, v in report["files_skipped"].items()) or "none"
    log.info(
        "%d files, %d ok, skipped: %s; %d theorem-like, %d pairs, %d near misses -> %s",
        report["files_seen"],
        report["files_ok"],
        skipped,
        report["theorem_like"],
        report["pairs"],
        report["near_misses"],
        out_parquet,
    )
    return report


def extract_shard(
    manifest_path: str | os.PathLike,
    shard: int,
    out_parquet: str | os.PathLike,
    report_json: str | os.PathLike,
    max_file_mb: float = config.default("extract.max_file_mb"),
    max_depth: int = config.default("extract.max_depth"),
) -> dict[str, Any]:
    """Extract the pairs of one manifest shard; write the pairs Parquet and the JSON report."""
    manifest, n_shards = corpus.read_manifest(manifest_path)
    if not 0 <= shard < n_shards:
        raise corpus.CorpusError(
            f"shard {shard} out of range: manifest {manifest_path} has {n_shards} shards"
        )
    part = manifest[manifest["shard"] == shard].sort_values("article_id")
    items = list(zip(part["article_id"], part["path"]))
    listing_skipped = (
        corpus.read_manifest_skipped(manifest_path) if shard == 0 else []
    )  # counted once
    return _extract_to(
        items,
        out_parquet,
        report_json,
        shard=shard,
        max_file_mb=max_file_mb,
        max_depth=max_depth,
        desc=f"extract shard {shard}/{n_shards}",
        listing_skipped=listing_skipped,
    )


def extract_dir(
    corpus_dir: str | os.PathLike,
    out_parquet: str | os.PathLike,
    report_json: str | os.PathLike | None = None,
    *,
    metadata: str | os.PathLike | None = None,
    max_file_mb: float = config.default("extract.max_file_mb"),
    max_depth: int = config.default("extract.max_depth"),
) -> dict[str, Any]:
    """Extract every article under ``corpus_dir`` into one table (report beside it by default)."""
    listed, left_out = listing.scan_articles(corpus_dir)
    meta = corpus.read_metadata(metadata) if metadata else None
    ids, paths, duplicates = corpus.unique_article_ids(listed, meta)
    items = sorted(zip(ids, map(str, paths)))
    return _extract_to(
        items,
        out_parquet,
        report_json or report_path(out_parquet),
        max_file_mb=max_file_mb,
        max_depth=max_depth,
        listing_skipped=sorted(left_out + duplicates, key=lambda s: s["path"]),
    )


def report_path(out_parquet: str | os.PathLike) -> Path:
    """``PAIRS.parquet`` -> ``PAIRS.report.json``."""
    out = Path(out_parquet)
    return out.with_name(
        (out.name[: -len(".parquet")] if out.name.endswith(".parquet") else out.name)
        + ".report.json"
    )


# --------------------------------------------------------------------------------------------
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "corpus_dir", nargs="?", help="folder of articles (or use --manifest/--shard)"
    )
    parser.add_argument("--manifest", help="manifest.parquet from `proofmatch manifest`")
    parser.add_argument("--shard", type=int, help="shard index of the manifest to extract")
    parser.add_argument("--out", required=True, help="output pairs Parquet")
    parser.add_argument("--report", help="report JSON (default: beside --out as NAME.report.json)")
    parser.add_argument("--metadata", help="metadata table for article ids (folder mode only)")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        help="config YAML (repeatable): extract.max_file_mb / max_depth (default: the schema's)",
    )
    parser.add_argument(
        "--max-file-mb",
        type=float,
        default=None,
        help="skip files larger than this (decompressed); overrides the config's extract.max_file_mb",
    )
    parser.add_argument(
        "--max-depth",
        type=int,
        default=None,
        help="skip files nested deeper than this; overrides the config's extract.max_depth",
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def _bad_limits(limits: dict[str, Any]) -> str | None:
    """Why the limits cannot be used (the command line bypasses the schema), or None."""
    mb, depth = limits["max_file_mb"], limits["max_depth"]
    if not (isinstance(mb, (int, float)) and math.isfinite(mb) and 0 < mb <= 1024):
        return (
            f"--max-file-mb {mb}: must be a number > 0 and at most 1024 (config extract.max_file_mb; "
            "a file is read whole into memory); fix: e.g. 64"
        )
    if not 16 <= depth <= 256:
        return (
            f"--max-depth {depth}: must be between 16 and 256 (libxml2 stops at 256); fix: e.g. 256"
        )
    return None


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    limits: dict[str, Any] = dict(
        config.load_config(*args.config)["extract"]
    )  # none given: the schema's
    if args.max_file_mb is not None:
        limits["max_file_mb"] = args.max_file_mb
    if args.max_depth is not None:
        limits["max_depth"] = args.max_depth
    bad = _bad_limits(limits)
    if bad:
        log.error("%s", bad)
        return 2
    by_manifest = args.manifest is not None or args.shard is not None
    if by_manifest == (args.corpus_dir is not None):
        log.error("give either CORPUS_DIR or both --manifest and --shard")
        return 2
    report = args.report or report_path(args.out)
    try:
        if by_manifest:
            if args.manifest is None or args.shard is None:
                log.error("--manifest and --shard go together")
                return 2
            extract_shard(args.manifest, args.shard, args.out, report, **limits)
        else:
            extract_dir(args.corpus_dir, args.out, report, metadata=args.metadata, **limits)
    except corpus.CorpusError as exc:
        log.error("%s", exc)
        return 2
    return 0
