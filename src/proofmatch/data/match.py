"""A released MATcH dataset folder as the project's data, and the project's data in that layout.

``corpus.source: match`` enters the workflow after extraction, filtering, splitting and symbol
replacement (:mod:`proofmatch.registry.sources`): the release holds them done. :func:`import_folder`
reads the folder that holds ``mixed/``, ``unmixed/`` and ``pb/`` (or some of them; the format:
:mod:`proofmatch.data.matchfmt`) and writes what the workflow's later stages read, as the XHTML
route would have written it:

* ``results/replaced/{split}/{level}.parquet``: each split at each level, its parts as released
  (``mixed_*`` is Mixed, ``unmixed_*`` Unmixed, ``pb/*_no_protected`` the probability-domain split
  ``pr`` and ``pb/{partial,full}_*_protected`` its levels ``partial_p``/``full_p``), no re-split and no
  re-replacement; the ``mapping`` column is ``null`` (the release does not record it);
* ``results/data/pairs.parquet``: every pair once, at Conservation, with an XHTML fragment of its
  lines (what Table 2 and the search pages read);
* ``results/corpus/articles.parquet`` and ``manifest.parquet``: the articles (from the files'
  article lines, or the headers' ids in files without them), for Table 1;
* ``results/data/filter_report.json`` (the paper comparison's corpus size) and the import's own
  report (:func:`proofmatch.data.match_counts.compare_counts` says how its counts differ from the
  paper's). The pairs, articles and manifest tables are filled by
  :mod:`proofmatch.data.match_tables`.

A family's level files must hold the same pairs in the same order: the first header that differs
is an error naming both files and the line. So is a level file with fewer or more pairs than
Conservation, an unknown file name, an empty folder and every format error of a file. A file no
stage reads (an unsplit file, a protected copy of a level the project keeps once) is a counted,
reported skip. Every output is written atomically (:mod:`proofmatch.artifacts`).

:mod:`proofmatch.data.match_export` writes a results tree's splits and levels in the released
layout, byte for byte as the reference writer (``proofmatch export-match``).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from proofmatch import experiments as X
from proofmatch.artifacts import (
    atomic_path,
    read_json,
    write_json,
    write_parquet,
)
from proofmatch.data.match_columns import FileColumns, read_columns
from proofmatch.data.match_counts import compare_counts, counts_text
from proofmatch.data.match_tables import PAIRS_COLUMNS, new_pairs, write_articles
from proofmatch.data.matchfmt import (
    FAMILIES,
    FILE_PARTS,
    MatchFormatError,
    Pair,
    expected_names,
    file_name,
    file_role,
)
from proofmatch.data.replace import OUTPUT_SCHEMA
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

SPLIT_LEVELS = {
    "mixed": X.LEVELS,
    "unmixed": X.LEVELS,
    "pr": X.ALL_LEVELS,
}


# ----------------------------------------------------------------------------- the folder


def scan(folder: str | os.PathLike) -> tuple[dict[tuple[str, str, str], Path], dict[str, str]]:
    """The files of a released folder: ``{(split, level, part): path}`` and the skipped files
    with their reasons. An unknown name or an empty folder is a :class:`MatchFormatError`."""
    root = Path(folder)
    if not root.is_dir():
        raise MatchFormatError(root, None, "not a folder")
    files: dict[tuple[str, str, str], Path] = {}
    skipped: dict[str, str] = {}
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            skipped[entry.name] = "hidden"
            continue
        if not entry.is_dir() or entry.name not in FAMILIES:
            raise MatchFormatError(
                entry,
                None,
                f"unknown entry; a MATcH folder holds the folders {', '.join(FAMILIES)}",
            )
        for path in sorted(entry.iterdir()):
            rel = f"{entry.name}/{path.name}"
            if path.name.startswith("."):
                skipped[rel] = "hidden"
                continue
            role = file_role(entry.name, path.name) if path.is_file() else None
            if role is None:
                raise MatchFormatError(
                    path,
                    None,
                    f"unknown file name {rel!r}; expected a released name such as "
                    f"{entry.name}/{expected_names()[3 if entry.name != 'pb' else -2].split('/')[1]}",
                )
            if role.skip:
                skipped[rel] = role.skip
            else:
                files[(role.split, role.level, role.part)] = path
    if not files:
        raise MatchFormatError(root, None, "no released split file (empty folder?)")
    return files, skipped


def pair_ids(pairs: Iterable[Pair], seen: set[str]) -> list[str]:
    """Each pair's id, ``{article}/{statement}``; a header without a statement id gets
    ``{article}/#k`` (its k-th in the file), and an id seen before (in ``seen``, which grows)
    ``#2``, ``#3``, ... after it: headers are not unique (``None``)."""
    out = []
    anonymous: Counter[str] = Counter()
    for p in pairs:
        if p.statement_id is None:
            anonymous[p.article_id] += 1
            base = f"{p.article_id}/#{anonymous[p.article_id]}"
        else:
            base = f"{p.article_id}/{p.statement_id}"
        pid, k = base, 1
        while pid in seen:
            k += 1
            pid = f"{base}#{k}"
        seen.add(pid)
        out.append(pid)
    return out


CHUNK = 4096  # pairs per chunk of a table (and per row group of pairs.parquet)
READ_AHEAD = 3  # files read in threads while one is turned into tables (bench/bench_match.py)


@dataclass
class _Conservation:
    """What a level file of the same split and part is checked against: the Conservation file's
    path, headers, their articles and the pair ids."""

    path: Path
    headers: list[str] = field(default_factory=list)
    articles: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)


def import_folder(
    folder: str | os.PathLike,
    out_root: str | os.PathLike = "results",
    splits: Sequence[str] = X.SPLITS,
    report_json: str | os.PathLike | None = None,
    require: Sequence[str] = ("conservation",),
) -> dict[str, Any]:
    """Read a released folder and write the tables of the module docstring under ``out_root``;
    returns the report (also written to ``report_json``). ``splits``: the configured ones; a split
    whose files are absent is an error, files of a split not configured are skipped (counted).
    ``require``: the levels every split must have (the workflow: every level it plans); the other
    levels are read where all three parts are present."""
    files, skipped = scan(folder)
    final = Path(out_root)
    final.mkdir(parents=True, exist_ok=True)
    # every table is written into a staging folder first and moved into place only once the
    # whole folder has been read: an error leaves none of them, old or new mixed
    out = Path(tempfile.mkdtemp(prefix=".match-read.", dir=final))
    try:
        report = _import(folder, out, files, skipped, splits, require)
        for path in sorted(p for p in out.rglob("*") if p.is_file()):
            target = final / path.relative_to(out)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    report["tables"] = {
        k: str(final / Path(v).relative_to(out)) for k, v in report["tables"].items()
    }
    if report_json is not None:
        write_json(report, report_json)
    return report


@dataclass
class _Read:
    """What :func:`_import` gathers across the files: the articles (from article lines) and the
    file each article's pairs were first read from, the pairs by id (a hash of their tokens and
    where they were read), the report, the variants seen, the tables written and the pairs
    written to ``pairs.parquet``."""

    folder: str | os.PathLike
    pairs_writer: pq.ParquetWriter
    report: dict[str, Any]
    articles: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    article_file: dict[str, str] = field(default_factory=dict)
    known: dict[str, tuple[int, str, int]] = field(default_factory=dict)
    merged: list[dict] = field(default_factory=list)  # the article dicts merged into articles
    variants: set[str] = field(default_factory=set)
    tables: dict[str, str] = field(default_factory=dict)
    n_pairs: int = 0
    pool: ThreadPoolExecutor | None = None
    writes: list[Future] = field(default_factory=list)


def _import(
    folder: str | os.PathLike,
    out: Path,
    files: dict[tuple[str, str, str], Path],
    skipped: dict[str, str],
    splits: Sequence[str],
    require: Sequence[str],
) -> dict[str, Any]:
    """:func:`import_folder`'s reading and writing, into ``out`` (its staging folder)."""
    _check_present(folder, files, skipped, splits, require)
    report: dict[str, Any] = {"folder": str(folder), "files": {}, "skipped": skipped, "splits": {}}
    with (
        atomic_path(out / "data" / "pairs.parquet", ".parquet", digest=True) as pairs_file,
        pq.ParquetWriter(pairs_file, PAIRS_COLUMNS) as pairs_writer,
    ):
        with ThreadPoolExecutor(max_workers=1) as writer:
            read = _Read(folder, pairs_writer, report, pool=writer)
            try:
                for k, split in enumerate(splits):
                    _read_split(read, out, files, split, first_split=k == 0)
            finally:
                wait(read.writes)  # no table is still being written once the staging goes
            for job in read.writes:
                job.result()  # a failed write fails the read
    used = write_articles(read.articles, read.article_file, out)
    n_pairs = read.n_pairs
    report.update(
        pairs=n_pairs,
        articles=len(used),
        variant=" and ".join(sorted(read.variants)),
        duplicate_ids_renamed=sum(1 for pid in read.known if "#" in pid.rsplit("/", 1)[-1]),
        tables=read.tables,
    )
    report["differences"] = compare_counts(report)
    write_json(
        {"source": "match", "kept": n_pairs, "articles_kept": len(used), "folder": str(folder)},
        out / "data" / "filter_report.json",
    )
    return report


def _check_present(
    folder: str | os.PathLike,
    files: dict[tuple[str, str, str], Path],
    skipped: dict[str, str],
    splits: Sequence[str],
    require: Sequence[str],
) -> None:
    """Skip (and count) the files of splits not configured; every configured split must have
    every required level's parts."""
    for key in [k for k in files if k[0] not in splits]:
        skipped[str(files.pop(key).relative_to(folder))] = f"split {key[0]} not configured"
    for split in splits:
        for level in [lv for lv in require if lv in SPLIT_LEVELS[split]]:
            for part in FILE_PARTS:
                if (split, level, part) not in files:
                    raise MatchFormatError(
                        Path(folder) / file_name(split, level, part),
                        None,
                        f"missing: split {split!r} is configured and needs {level} (splits.pr_category: "
                        "null leaves out pr)",
                    )


def _read_split(
    read: _Read,
    out: Path,
    files: dict[tuple[str, str, str], Path],
    split: str,
    first_split: bool = False,
) -> None:
    """One split: each level whose three parts are present, written as
    ``replaced/{split}/{level}.parquet``; Conservation first, the others checked against it.
    ``first_split``: no pair was read before, so its Conservation files' XHTML fragments are all
    written (and made while the files are read)."""
    levels = [lv for lv in SPLIT_LEVELS[split] if all((split, lv, p) in files for p in FILE_PARTS)]
    conservation: dict[str, _Conservation] = {}
    seen: set[str] = set()
    counts: dict[str, int] = {}
    plan = [(level, part, files[(split, level, part)]) for level in levels for part in FILE_PARTS]
    cons = [level == "conservation" for level, _, _ in plan]
    base = {part: k for k, (level, part, _) in enumerate(plan) if level == "conservation"}
    columns = _prefetch(
        [
            (path, c, c and first_split, None if c else base.get(part))
            for (_, part, path), c in zip(plan, cons)
        ],
        READ_AHEAD,
    )
    for level in levels:
        parts = []
        for part in FILE_PARTS:
            path = files[(split, level, part)]
            ref = conservation.setdefault(part, _Conservation(path))
            cols = next(columns)
            table = _read_file(read, cols, path, part, level == "conservation", ref, seen)
            del cols
            if level == "conservation":
                counts[part] = table.num_rows
            parts.append(table)
            del table
        target = out / "replaced" / split / f"{level}.parquet"
        read.writes.append(
            read.pool.submit(write_parquet, pa.concat_tables(parts), target, OUTPUT_SCHEMA)
        )
        read.tables[f"{split}/{level}"] = str(target)
        del parts
    read.report["splits"][split] = {"levels": levels, "parts": counts}


def _prefetch(
    files: list[tuple[Path, bool, bool, int | None]], ahead: int
) -> Iterator[FileColumns]:
    """:func:`~proofmatch.data.match_columns.read_columns` of each ``(path, digests, fragments,
    base)`` in order (``base``: the index of an earlier file whose statements the file's may
    repeat), the next ``ahead`` files read in threads meanwhile (Arrow's kernels and numpy's run
    outside the GIL)."""
    bases = {base: Future() for *_, base in files if base is not None}

    def read(k: int, path: Path, digests: bool, fragments: bool, base: int | None) -> FileColumns:
        try:
            # an earlier file's: read or being read (the pool takes the files in order)
            known = bases[base].result() if base is not None else None
            cols = read_columns(path, digests, fragments, known)
        except BaseException as exc:
            if k in bases:
                bases[k].set_exception(exc)
            raise
        if k in bases:
            bases[k].set_result(cols.base())
        return cols

    with ThreadPoolExecutor(max_workers=ahead) as pool:
        pending = deque()
        try:
            for k, job in enumerate(files):
                pending.append(pool.submit(read, k, *job))
                if len(pending) > ahead:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for job in pending:
                job.cancel()


def _read_file(
    read: _Read,
    cols: FileColumns,
    path: Path,
    part: str,
    first: bool,
    ref: _Conservation,
    seen: set[str],
) -> pa.Table:
    """One level file of a split's part, as a table of :data:`OUTPUT_SCHEMA`. ``first``: it is the
    Conservation file (its pairs are named, recorded in ``ref`` and written to ``pairs.parquet``);
    else its pairs must be ``ref``'s."""
    rel = str(path.relative_to(read.folder))
    chunks = []
    n = len(cols.headers)
    if first:
        ref.headers, ref.articles = cols.headers, cols.article_ids()
        plain = _unique(cols.plain_ids(), seen)
        pairs = cols.pairs if plain is None else []
    else:
        _check_aligned(path, cols, ref)
    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        if first:
            chunk = pairs[start : start + size]
            ids = pair_ids(chunk, seen) if plain is None else plain[start : start + size]
            ref.ids += ids
        else:
            ids = ref.ids[start : start + size]
        chunks.append(_chunk_table(ref.articles[start : start + size], ids, part, cols, start))
        if first:
            articles = ref.articles[start : start + size]
            rows = new_pairs(cols, start, ids, articles, rel, read.known, read.n_pairs)
            read.n_pairs += rows.num_rows
            # written in the writer's thread, in order: the next chunk is made meanwhile
            read.writes.append(read.pool.submit(read.pairs_writer.write_table, rows))
            for aid in dict.fromkeys(ref.articles[start : start + size]):
                read.article_file.setdefault(aid, rel)
    if not first and n < len(ref.headers):
        raise MatchFormatError(
            path,
            None,
            f"{n} pairs, {ref.path} has {len(ref.headers)}; first missing header "
            f"{ref.headers[n]!r}",
        )
    read.variants.add("with metadata" if cols.articles else "without metadata")
    read.report["files"][rel] = {"pairs": n, "count": cols.count, "articles": len(cols.articles)}
    if not any(cols.articles is done for done in read.merged):  # the files of a split share one
        read.merged.append(cols.articles)
        for aid, meta in cols.articles.items():
            read.articles.setdefault(aid, meta)
    return pa.concat_tables(chunks) if chunks else OUTPUT_SCHEMA.empty_table()


def _unique(ids: list[str] | None, seen: set[str]) -> list[str] | None:
    """``ids`` (added to ``seen``) when they are unique and none is in ``seen``: what
    :func:`pair_ids` names their pairs then; else None."""
    if ids is None or len(set(ids)) != len(ids) or not seen.isdisjoint(ids):
        return None
    seen.update(ids)
    return ids


def _chunk_table(
    articles: list[str], ids: list[str], part: str, cols: FileColumns, start: int
) -> pa.Table:
    """A chunk of a level file's pairs (its pairs ``start``...) as rows of :data:`OUTPUT_SCHEMA`
    (no mapping)."""
    return pa.table(
        {
            "pair_id": ids,
            "article_id": articles,
            "part": [part] * len(ids),
            "statement_tokens": cols.statements.slice(start, len(ids)),
            "proof_tokens": cols.proofs.slice(start, len(ids)),
            "mapping": pa.nulls(len(ids), pa.string()),
        },
        schema=OUTPUT_SCHEMA,
    )


def _check_aligned(path: Path, cols: FileColumns, ref: _Conservation) -> None:
    """The level file ``path``'s pairs (``cols``) hold Conservation's pairs in its order, or as
    many of them as it has."""
    n = len(cols.headers)
    if cols.headers == ref.headers[:n]:
        return
    for k, p in enumerate(cols.pairs):
        if k >= len(ref.headers):
            raise MatchFormatError(
                path,
                p.line,
                f"more pairs than {ref.path} ({len(ref.headers)}); first extra header {p.header!r}",
            )
        if p.header != ref.headers[k]:
            raise MatchFormatError(
                path,
                p.line,
                f"pair {k + 1} is {p.header!r} but pair {k + 1} of {ref.path} is {ref.headers[k]!r}: "
                "the level files of a split must hold the same pairs in the same order",
            )


# ----------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    read = sub.add_parser(
        "read", help="read a released folder into a results tree; print its counts"
    )
    read.add_argument("folder", help="the folder holding mixed/, unmixed/ and pb/")
    read.add_argument("--out", default="results", help="results tree to write")
    read.add_argument("--splits", nargs="+", default=list(X.SPLITS), choices=X.SPLITS)
    read.add_argument("--report", help="write the read's report (JSON) here")
    check = sub.add_parser("check", help="compare a read's report with the paper's counts")
    check.add_argument("report", help="the report a read wrote (results/match/main/report.json)")


def main(args: argparse.Namespace) -> int:
    setup_logging()
    try:
        if args.action == "read":
            report = import_folder(args.folder, args.out, args.splits, args.report)
        else:
            report = read_json(args.report)
    except MatchFormatError as exc:
        print(f"proofmatch match: {exc}", file=sys.stderr)
        return 2
    print(counts_text(report))
    return 0 if args.action == "read" or not report["differences"] else 1
