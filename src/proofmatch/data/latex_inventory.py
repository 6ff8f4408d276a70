"""The inventory of a LaTeX source folder (rule ``latex_inventory``). Which corpora of a config are
LaTeX corpora, and their inputs and folders, is :mod:`proofmatch.corpora`'s.

Why: conversion runs in shards with a per-article cache (:mod:`proofmatch.data.latex`), so before
anything is converted each article source gets a stable id, a file-name-safe key, a content hash
(what the cache compares) and a shard.

**Input layout** (arXiv's source layout), one top-level entry per article, of a kind of
:func:`proofmatch.data.archives.source_kind`. Other top-level files (a ``metadata.csv``, PDFs) and
hidden entries are ignored. The article id is the ``article_id`` of the metadata row whose
``file`` names the entry (matched on trailing path components, as in :mod:`proofmatch.data.corpus`),
else the entry name without its suffix. A top-level symbolic link is the user's own layout and is
followed; links *inside* an article are checked when it is unpacked.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd
import pyarrow as pa

from proofmatch.artifacts import read_table, write_parquet
from proofmatch.data.archives import source_kind
from proofmatch.data.corpus import metadata_file_ids, read_metadata, shard_by_bytes

log = logging.getLogger(__name__)

_CHUNK = 1 << 20

INVENTORY_SCHEMA = pa.schema(
    [
        ("article_id", pa.string()),
        ("key", pa.string()),
        ("path", pa.string()),
        ("kind", pa.string()),
        ("bytes", pa.int64()),
        ("sha256", pa.string()),
        ("shard", pa.int64()),
        ("skip", pa.string()),
        ("detail", pa.string()),
    ]
)


# --------------------------------------------------------------------------------------------
# inventory: sources, ids, content hashes, shards


def list_sources(src_dir: str | os.PathLike) -> list[tuple[Path, str, str]]:
    """(path, kind, stem) of every article entry directly under ``src_dir``, sorted by name."""
    root = Path(src_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"LaTeX source folder {root} does not exist or is not a folder")
    found, ignored = [], []
    for path in sorted(root.iterdir(), key=lambda p: p.name):
        if path.name.startswith("."):
            continue
        kind = source_kind(path)
        if kind is None:
            ignored.append(path.name)
        else:
            found.append((path, *kind))
    if ignored:
        log.info(
            "%d top-level entries of %s are no article source and are ignored, e.g. %s",
            len(ignored),
            root,
            ignored[:3],
        )
    return found


def safe_key(article_id: str) -> str:
    """A file-name-safe, injective form of an article id (``math/0501001`` -> ``math%2F0501001``)."""
    key = quote(article_id, safe="-_.~")
    return "%2E" + key[1:] if key.startswith(".") else key


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def content_hash(path: Path, kind: str) -> tuple[str, int]:
    """(sha256, bytes) of a source: its bytes, or for a folder every file's relative path and hash
    (a link by its target), so a rename, an edit or a new file changes it."""
    if kind != "dir":
        return _sha256_file(path), path.stat().st_size
    digest, total = hashlib.sha256(), 0
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        dirnames.sort()
        for name in sorted(
            filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        ):
            full = Path(dirpath) / name
            rel = full.relative_to(path).as_posix()
            if full.is_symlink():
                digest.update(f"L\0{rel}\0{os.readlink(full)}\0".encode())
            elif full.is_file():
                size = full.stat().st_size
                total += size
                digest.update(f"F\0{rel}\0{_sha256_file(full)}\0".encode())
    return digest.hexdigest(), total


def source_fingerprint(src_dir: str | os.PathLike) -> str:
    """A cheap fingerprint of a source tree (path, size, mtime of every entry): the workflow's
    params of the inventory job, so adding, editing or removing any file reruns it."""
    root = Path(src_dir)
    digest = hashlib.sha256()
    if not root.is_dir():
        return "missing"
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames + dirnames):
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(
                    full
                )  # a top-level link's target counts; os.walk does not descend links
            except OSError:
                st = os.lstat(full)
            digest.update(
                f"{os.path.relpath(full, root)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode()
            )
    return digest.hexdigest()


def build_inventory(
    src_dir: str | os.PathLike, n_shards: int, metadata_path: str | os.PathLike | None = None
) -> pd.DataFrame:
    """One row per article source: id, key, path, kind, bytes, sha256, conversion shard.

    A source that cannot be read or repeats an id gets ``skip`` (a reason) and shard -1; the
    others are balanced over ``n_shards`` by size (:func:`proofmatch.data.corpus.shard_by_bytes`).
    """
    sources = list_sources(src_dir)
    metadata = read_metadata(metadata_path) if metadata_path else None
    ids = metadata_file_ids([p for p, _, _ in sources], metadata)
    rows: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    # A source the metadata names keeps its id over one whose id is only its file name.
    order = sorted(range(len(sources)), key=lambda i: (ids[i] is None, sources[i][0].name))
    for (path, kind, stem), aid in ((sources[i], ids[i]) for i in order):
        aid = aid or stem
        row = {
            "article_id": aid,
            "key": safe_key(aid),
            "path": os.path.abspath(path),
            "kind": kind,
            "bytes": 0,
            "sha256": "",
            "shard": -1,
            "skip": None,
            "detail": None,
        }
        if aid in seen:
            row.update(skip="duplicate_id", detail=f"id {aid!r} is also given by {seen[aid]}")
        else:
            seen[aid] = path.name
            try:
                row["sha256"], row["bytes"] = content_hash(path, kind)
            except OSError as exc:
                row.update(skip="unreadable", detail=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    inv = pd.DataFrame(rows, columns=INVENTORY_SCHEMA.names)
    todo = inv["skip"].isna()
    inv.loc[todo, "shard"] = shard_by_bytes(
        inv.loc[todo, "bytes"].tolist(), inv.loc[todo, "article_id"].tolist(), n_shards
    )
    return inv.sort_values("article_id", ignore_index=True)


def write_inventory(
    src_dir: str | os.PathLike,
    n_shards: int,
    metadata_path: str | os.PathLike | None,
    out_parquet: str | os.PathLike,
) -> pd.DataFrame:
    """Write ``inventory.parquet`` (records ``n_shards`` in its metadata)."""
    inv = build_inventory(src_dir, n_shards, metadata_path)
    write_parquet(inv, out_parquet, INVENTORY_SCHEMA.with_metadata({"n_shards": str(n_shards)}))
    log.info(
        "inventory of %s: %d article sources, %d skipped, %d shards -> %s",
        src_dir,
        len(inv),
        int(inv["skip"].notna().sum()),
        n_shards,
        out_parquet,
    )
    return inv


def read_inventory(path: str | os.PathLike) -> tuple[pd.DataFrame, int]:
    """The inventory and its shard count."""
    table = read_table(path)
    meta = table.schema.metadata or {}
    return table.to_pandas(), int(meta.get(b"n_shards", b"1"))
