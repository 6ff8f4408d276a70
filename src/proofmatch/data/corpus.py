"""Corpus input: list a folder of XHTML articles, join their metadata, and shard the list.

The later stages never run one job per article (a corpus has 10^5 files); they run one job per
shard. Shards are balanced by file size with the longest-processing-time rule (largest file first,
to the lightest shard; ties by article id and shard index), so the assignment is a pure function
of the file list and sizes: a rerun over the same folder gives the same manifest, byte for byte.

A corpus may span several folders, each with its own metadata table (config ``corpus.dir`` and
``corpus.metadata`` as parallel lists, :func:`corpus_folders`): each folder's files are matched
against its own table, and the ids must be unique over the whole corpus.

Article ids come from the metadata's ``file`` column when a row names the file (matched on the
trailing path components, so ``xhtml/sets.xhtml.gz`` matches ``<anything>/xhtml/sets.xhtml.gz``),
otherwise from the file name without its article suffix (``1234.5678v2.xhtml.gz`` ->
``1234.5678v2``; other dots are kept).
"""

from __future__ import annotations

import argparse
import heapq
import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from proofmatch.artifacts import read_table, write_parquet
from proofmatch.corpora import CorpusError, PathLike, corpus_folders
from proofmatch.data.listing import display_path, scan_articles, skipped_entry, strip_article_suffix
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

#: Recognised article files (matched case-insensitively, longest first).
UNKNOWN_CATEGORY = "unknown"
_CATEGORY_SEP = re.compile(r"[\s,|]+")

MANIFEST_SCHEMA = pa.schema(
    [
        ("article_id", pa.string()),
        ("path", pa.string()),
        ("bytes", pa.int64()),
        ("shard", pa.int64()),
    ]
)
ARTICLES_SCHEMA = pa.schema(
    [
        ("article_id", pa.string()),
        ("title", pa.string()),
        ("categories", pa.list_(pa.string())),
        ("primary_category", pa.string()),
        ("chapter", pa.string()),
    ]
)


# --------------------------------------------------------------------------------------------
# listing and ids


def _path_parts(value: str) -> tuple[str, ...]:
    parts = PurePosixPath(value.replace("\\", "/")).parts
    return tuple(p for p in parts if p not in ("", ".", "/"))


def metadata_file_ids(paths: Sequence[Path], metadata: pd.DataFrame | None) -> list[str | None]:
    """The article id of each path from the metadata's ``file`` column (the longest trailing match
    of path components), None where no row matches."""
    by_parts: dict[tuple[str, ...], str] = {}
    if metadata is not None and "file" in metadata.columns:
        for aid, file in zip(metadata["article_id"], metadata["file"]):
            if isinstance(file, str) and file.strip():
                by_parts[_path_parts(file.strip())] = aid
    longest = max((len(k) for k in by_parts), default=0)
    out: list[str | None] = []
    for path in paths:
        parts = Path(os.path.abspath(path)).parts
        out.append(
            next(
                (
                    by_parts[parts[-k:]]
                    for k in range(min(longest, len(parts)), 0, -1)
                    if parts[-k:] in by_parts
                ),
                None,
            )
        )
    return out


def assign_article_ids(paths: Sequence[Path], metadata: pd.DataFrame | None) -> list[str]:
    """One id per path: the metadata row whose ``file`` matches (longest match), else the stem.

    Two files with the same id are an error that names both, because every later artifact is
    keyed by ``article_id``; :func:`unique_article_ids` skips the later one instead.
    """
    ids: list[str] = []
    owner: dict[str, Path] = {}
    for path, aid in zip(paths, metadata_file_ids(paths, metadata)):
        if aid is None:
            aid = strip_article_suffix(path.name)
        if aid in owner:
            raise CorpusError(f"duplicate article id {aid!r}: files {owner[aid]} and {path}")
        owner[aid] = path
        ids.append(aid)
    return ids


def unique_article_ids(
    paths: Sequence[Path], metadata: pd.DataFrame | None, owner: dict[str, Path] | None = None
) -> tuple[list[str], list[Path], list[dict[str, str]]]:
    """(ids, their paths, duplicates left out): a file whose id an earlier file (in ``paths``
    order, or in ``owner``: ids of other folders) already has is skipped as ``duplicate_id``."""
    owner = {} if owner is None else owner
    ids: list[str] = []
    kept: list[Path] = []
    skipped: list[dict[str, str]] = []
    for path, aid in zip(paths, metadata_file_ids(paths, metadata)):
        if aid is None:
            aid = strip_article_suffix(path.name)
        if aid in owner:
            skipped.append(
                skipped_entry(
                    path,
                    "duplicate_id",
                    f"the id of {display_path(owner[aid])} and {display_path(path)} "
                    f"is {aid!r}; the first is kept (rename one)",
                )
            )
            continue
        owner[aid] = path
        ids.append(aid)
        kept.append(path)
    return ids, kept, skipped


# --------------------------------------------------------------------------------------------
# metadata


def parse_categories(value: Any) -> list[str]:
    """Categories from a string (space, comma or ``|`` separated) or a list; order kept, deduplicated."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    if isinstance(value, str):
        items = _CATEGORY_SEP.split(value)
    elif isinstance(value, (list, tuple, np.ndarray)):
        items = [str(v) for v in value if v is not None]
    else:
        raise TypeError(f"categories must be text or a list, got {type(value).__name__}")
    return list(dict.fromkeys(c.strip() for c in items if c and c.strip()))


def _read_table(path: Path) -> pd.DataFrame:
    name = path.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        if name.endswith((".tsv", ".tsv.gz", ".tab")):
            return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
        if name.endswith((".csv", ".csv.gz")):
            return pd.read_csv(path, dtype=str, keep_default_na=False)
    except Exception as exc:  # pandas/pyarrow raise many types; all mean "unreadable"
        raise CorpusError(
            f"cannot read metadata table {path}: {type(exc).__name__}: {exc}"
        ) from exc
    raise CorpusError(f"metadata table {path}: unsupported format (use .csv, .tsv or .parquet)")


def _text_or_none(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def read_metadata(path: str | os.PathLike) -> pd.DataFrame:
    """Read and normalise a metadata table: article_id, title, categories, primary_category, file,
    chapter.

    ``chapter`` groups articles that are parts of one work (a book chapter split into several
    files): the Unmixed split keeps a chapter on one side. Without the column, or where it is
    empty, an article is its own chapter.

    ``categories`` becomes a list with the primary category first (a ``primary_category`` column,
    when given, is moved or inserted to the front); ``primary_category`` is ``"unknown"`` when no
    category is known. Errors name the file and the 1-based data row.
    """
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"metadata table {path} does not exist")
    raw = _read_table(path)
    missing = [c for c in ("article_id", "title", "categories") if c not in raw.columns]
    if missing:
        raise CorpusError(
            f"metadata table {path}: missing column(s) {', '.join(missing)} "
            f"(has: {', '.join(map(str, raw.columns))})"
        )
    rows: list[dict[str, Any]] = []
    first_row: dict[str, int] = {}
    file_row: dict[tuple[str, ...], int] = {}
    for i, rec in enumerate(raw.to_dict("records"), start=1):
        aid = _unique_article_id(path, i, rec, first_row)
        file = _unique_file(path, i, rec, file_row)
        cats = _categories(path, i, aid, rec)
        rows.append(
            {
                "article_id": aid,
                "title": _text_or_none(rec["title"]),
                "categories": cats,
                "primary_category": cats[0] if cats else UNKNOWN_CATEGORY,
                "file": file,
                "chapter": _text_or_none(rec.get("chapter")) or aid,
            }
        )
    return pd.DataFrame(
        rows, columns=["article_id", "title", "categories", "primary_category", "file", "chapter"]
    )


def _unique_article_id(path: Path, i: int, rec: dict[str, Any], first_row: dict[str, int]) -> str:
    """Data row ``i``'s article id, recorded in ``first_row``; empty or seen before: an error."""
    aid = _text_or_none(rec["article_id"])
    if aid is None:
        raise CorpusError(f"metadata table {path}, data row {i}: empty article_id")
    if aid in first_row:
        raise CorpusError(
            f"metadata table {path}: duplicate article_id {aid!r} in data rows {first_row[aid]} and {i}"
        )
    first_row[aid] = i
    return aid


def _unique_file(
    path: Path, i: int, rec: dict[str, Any], file_row: dict[tuple[str, ...], int]
) -> str | None:
    """Data row ``i``'s ``file`` (or None), recorded in ``file_row``; a file two rows name: an error."""
    file = _text_or_none(rec.get("file"))
    if file is not None:
        key = _path_parts(file)
        if key in file_row:
            raise CorpusError(
                f"metadata table {path}: file {file!r} is listed in data rows {file_row[key]} and {i}"
            )
        file_row[key] = i
    return file


def _categories(path: Path, i: int, aid: str, rec: dict[str, Any]) -> list[str]:
    """Data row ``i``'s categories, its ``primary_category`` (when given) moved or inserted first."""
    try:
        cats = parse_categories(rec["categories"])
    except TypeError as exc:
        raise CorpusError(f"metadata table {path}, data row {i} ({aid}): {exc}") from exc
    primary = _text_or_none(rec.get("primary_category"))
    if primary is not None:
        cats = [primary] + [c for c in cats if c != primary]
    return cats


# --------------------------------------------------------------------------------------------
# sharding and the manifest


def shard_by_bytes(sizes: Sequence[int], keys: Sequence[str], n_shards: int) -> list[int]:
    """Longest-processing-time assignment of items to ``n_shards`` shards, balanced by size.

    Items are taken largest first (ties: smaller key first) and each goes to the shard with the
    fewest bytes so far (ties: lower shard index). Deterministic, O(n log n).
    """
    if n_shards < 1:
        raise CorpusError(f"number of shards must be at least 1, got {n_shards}")
    order = sorted(range(len(sizes)), key=lambda i: (-int(sizes[i]), keys[i]))
    heap = [(0, s) for s in range(n_shards)]
    out = [0] * len(sizes)
    for i in order:
        load, shard = heapq.heappop(heap)
        out[i] = shard
        heapq.heappush(heap, (load + max(int(sizes[i]), 1), shard))
    return out


def build_manifest(
    corpus_dir: PathLike | Sequence[PathLike],
    n_shards: int,
    metadata_path: PathLike | Sequence[PathLike | None] | None,
    skipped: list[dict[str, str]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(manifest, articles) for a corpus of one or several folders (:func:`corpus_folders`); both
    sorted by article_id. Each folder's files take their ids from that folder's table; a file
    whose id an earlier file (earlier folder, or earlier path in one folder) has is left out as
    ``duplicate_id``. Entries left out (:data:`LISTING_REASONS`) are appended to ``skipped``."""
    skipped = [] if skipped is None else skipped
    paths: list[Path] = []
    ids: list[str] = []
    meta_by_id: dict[str, dict[str, Any]] = {}
    owner: dict[str, Path] = {}
    for folder, table in corpus_folders(corpus_dir, metadata_path):
        listed, left_out = scan_articles(folder)
        metadata = read_metadata(table) if table else None
        folder_ids, folder_paths, duplicates = unique_article_ids(listed, metadata, owner)
        skipped += left_out + duplicates
        if metadata is not None:
            rows = metadata.set_index("article_id").to_dict("index")
            unused = len(set(rows) - set(folder_ids))
            if unused:
                log.warning(
                    "%d metadata rows of %s name no article in %s; they are ignored",
                    unused,
                    table,
                    folder,
                )
            missing = sum(aid not in rows for aid in folder_ids)
            if missing:
                log.warning(
                    "%d of %d articles in %s have no row in %s (title null, category unknown)",
                    missing,
                    len(folder_ids),
                    folder,
                    table,
                )
            meta_by_id.update({aid: rows[aid] for aid in folder_ids if aid in rows})
        paths += folder_paths
        ids += folder_ids
    sizes = [p.stat().st_size for p in paths]
    shards = shard_by_bytes(sizes, ids, n_shards)
    manifest = pd.DataFrame(
        {
            "article_id": ids,
            "path": [os.path.abspath(p) for p in paths],
            "bytes": np.asarray(sizes, dtype=np.int64),
            "shard": np.asarray(shards, dtype=np.int64),
        }
    ).sort_values("article_id", ignore_index=True)
    records = []
    for aid in manifest["article_id"]:
        meta = meta_by_id.get(aid)
        records.append(
            {
                "article_id": aid,
                "title": meta["title"] if meta else None,
                "categories": list(meta["categories"]) if meta else [],
                "primary_category": meta["primary_category"] if meta else UNKNOWN_CATEGORY,
                "chapter": meta["chapter"] if meta else aid,
            }
        )
    return manifest, pd.DataFrame(records, columns=ARTICLES_SCHEMA.names)


def write_manifest(
    corpus_dir: PathLike | Sequence[PathLike],
    n_shards: int,
    metadata_path_or_None: PathLike | Sequence[PathLike | None] | None,
    manifest_out: str | os.PathLike,
    articles_out: str | os.PathLike,
) -> None:
    """Write manifest.parquet (article_id, path, bytes, shard) and articles.parquet.

    The manifest's Parquet metadata records ``n_shards`` so that a shard index can be checked
    even when a shard is empty (more shards than articles), and ``skipped``: the entries left
    out of the corpus with their reasons (:func:`read_manifest_skipped`; shard 0's extraction
    report counts them).
    """
    skipped: list[dict[str, str]] = []
    manifest, articles = build_manifest(corpus_dir, n_shards, metadata_path_or_None, skipped)
    schema = MANIFEST_SCHEMA.with_metadata(
        {"n_shards": str(n_shards), "skipped": json.dumps(skipped)}
    )
    write_parquet(manifest, manifest_out, schema)
    write_parquet(articles, articles_out, ARTICLES_SCHEMA)
    loads = manifest.groupby("shard")["bytes"].sum().reindex(range(n_shards), fill_value=0)
    log.info(
        "manifest: %d articles, %d shards, bytes per shard min %d max %d; %s",
        len(manifest),
        n_shards,
        int(loads.min()),
        int(loads.max()),
        manifest_out,
    )


def read_manifest(path: str | os.PathLike) -> tuple[pd.DataFrame, int]:
    """The manifest table and its shard count."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"manifest {path} does not exist")
    table = read_table(path)
    missing = [c for c in MANIFEST_SCHEMA.names if c not in table.column_names]
    if missing:
        raise CorpusError(f"manifest {path}: missing column(s) {', '.join(missing)}")
    meta = table.schema.metadata or {}
    df = table.to_pandas()
    n_shards = (
        int(meta[b"n_shards"])
        if b"n_shards" in meta
        else int(df["shard"].max() + 1 if len(df) else 1)
    )
    return df, n_shards


def read_manifest_skipped(path: str | os.PathLike) -> list[dict[str, str]]:
    """The entries :func:`write_manifest` left out of the corpus (``[]`` for an older manifest)."""
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta[b"skipped"]) if b"skipped" in meta else []


# --------------------------------------------------------------------------------------------
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "corpus_dir",
        nargs="+",
        help="folder(s) of *.xhtml, *.html, *.xhtml.gz, *.html.gz (recursive); several make one corpus",
    )
    parser.add_argument(
        "--shards", type=int, required=True, help="number of shards (jobs) to split into"
    )
    parser.add_argument(
        "--metadata",
        nargs="+",
        default=None,
        help="CSV/TSV/Parquet: article_id, title, categories[, primary_category, file, chapter]; "
        "one per folder, in order ('none' for a folder without one)",
    )
    parser.add_argument(
        "--manifest", default="results/corpus/manifest.parquet", help="output manifest"
    )
    parser.add_argument(
        "--articles", default="results/corpus/articles.parquet", help="output article table"
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    try:
        metadata = (
            None
            if args.metadata is None
            else [None if m.lower() == "none" else m for m in args.metadata]
        )
        write_manifest(args.corpus_dir, args.shards, metadata, args.manifest, args.articles)
    except CorpusError as exc:
        log.error("%s", exc)
        return 2
    return 0
