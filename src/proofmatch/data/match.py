"""A released MATcH dataset folder as the project's data, and the project's data in that layout.

``corpus.source: match`` enters the workflow after extraction, filtering, splitting and symbol
replacement (:mod:`proofmatch.spec.sources`): the release holds them done. :func:`import_folder`
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
  report (:func:`compare_counts` says how its counts differ from the paper's).

A family's level files must hold the same pairs in the same order: the first header that differs
is an error naming both files and the line. So is a level file with fewer or more pairs than
Conservation, an unknown file name, an empty folder and every format error of a file. A file no
stage reads (an unsplit file, a protected copy of a level the project keeps once) is a counted,
reported skip. Every output is written atomically (:mod:`proofmatch.artifacts`).

:func:`export` writes a results tree's splits and levels in the released layout, byte for byte as
the reference writer (``proofmatch export-match``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from proofmatch import experiments as X
from proofmatch.artifacts import (
    atomic_path,
    read_json,
    read_table,
    write_json,
    write_parquet,
    write_text,
)
from proofmatch.data.corpus import ARTICLES_SCHEMA, MANIFEST_SCHEMA
from proofmatch.data.matchfmt import (
    FAMILIES,
    FILE_PARTS,
    MatchFormatError,
    OutPair,
    Pair,
    csv_text,
    expected_names,
    file_name,
    file_role,
    fragment_xml,
    iter_pairs,
    segment_tokens,
    token_segments,
    write_file,
)
from proofmatch.data.replace import OUTPUT_SCHEMA
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

#: The release's counts (paper Table 1 and §6): what a correct read of the full dataset prints.
PAPER_COUNTS = {
    "pairs": 184_094,
    "articles": 27_841,
    "mixed": {"train": 147_278, "dev": 18_408, "test": 18_408},
}
PAIRS_COLUMNS = pa.schema(
    [
        ("article_id", pa.string()),
        ("statement_id", pa.string()),
        ("kind", pa.string()),
        ("position", pa.int64()),
        ("statement_xml", pa.string()),
        ("proof_xml", pa.string()),
        ("pair_id", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("statement_title_tokens", pa.int64()),
        ("proof_title_tokens", pa.int64()),
    ]
)
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


CHUNK = 4096  # pairs tokenised at once: the Python token lists of a chunk, then Arrow


def _chunks(pairs: Iterator[Pair], size: int = CHUNK) -> Iterator[list[Pair]]:
    batch: list[Pair] = []
    for p in pairs:
        batch.append(p)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _tokens(lists: list[list[str]]) -> pa.Array:
    return pa.array(lists, type=pa.list_(pa.string()))


@dataclass
class _Conservation:
    """What a level file of the same split and part is checked against and reuses: the
    Conservation file's path, headers, pair ids, a hash of each statement's lines and the
    statements' tokens."""

    path: Path
    headers: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    hashes: list[int] = field(default_factory=list)
    statements: pa.ChunkedArray | None = None


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


def _import(
    folder: str | os.PathLike,
    out: Path,
    files: dict[tuple[str, str, str], Path],
    skipped: dict[str, str],
    splits: Sequence[str],
    require: Sequence[str],
) -> dict[str, Any]:
    """:func:`import_folder`'s reading and writing, into ``out`` (its staging folder)."""
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
    articles: dict[str, tuple[list[str], str]] = {}
    article_file: dict[str, str] = {}
    known: dict[str, tuple[int, str]] = {}  # pair id -> (hash of its tokens, where it was read)
    report: dict[str, Any] = {"folder": str(folder), "files": {}, "skipped": skipped, "splits": {}}
    variants = set()
    tables: dict[str, str] = {}
    n_pairs = 0
    with (
        atomic_path(out / "data" / "pairs.parquet", ".parquet", digest=True) as pairs_file,
        pq.ParquetWriter(pairs_file, PAIRS_COLUMNS) as pairs_writer,
    ):
        for split in splits:
            levels = [
                lv for lv in SPLIT_LEVELS[split] if all((split, lv, p) in files for p in FILE_PARTS)
            ]
            conservation: dict[str, _Conservation] = {}
            seen: set[str] = set()
            counts: dict[str, int] = {}
            for level in levels:
                parts = []
                for part in FILE_PARTS:
                    path = files[(split, level, part)]
                    rel = str(path.relative_to(folder))
                    head: dict = {}
                    first = level == "conservation"
                    ref = conservation.setdefault(part, _Conservation(path))
                    chunks, n = [], 0
                    for batch in _chunks(iter_pairs(path, head)):
                        hashes = [hash(tuple(p.statement)) for p in batch]
                        if first:
                            ids = pair_ids(batch, seen)
                            ref.headers += [p.header for p in batch]
                            ref.ids += ids
                            ref.hashes += hashes
                        else:
                            _check_aligned(path, batch, n, ref)
                            ids = ref.ids[n : n + len(batch)]
                        if not first and hashes == ref.hashes[n : n + len(batch)]:
                            statements = ref.statements.slice(n, len(batch))
                            statement_lists = None
                        else:
                            statement_lists = [segment_tokens(p.statement) for p in batch]
                            statements = _tokens(statement_lists)
                        proof_lists = [segment_tokens(p.proof) for p in batch]
                        chunks.append(
                            pa.table(
                                {
                                    "pair_id": ids,
                                    "article_id": [p.article_id for p in batch],
                                    "part": [part] * len(batch),
                                    "statement_tokens": statements,
                                    "proof_tokens": _tokens(proof_lists),
                                    "mapping": pa.nulls(len(batch), pa.string()),
                                },
                                schema=OUTPUT_SCHEMA,
                            )
                        )
                        if first:
                            rows = _new_pairs(
                                batch, ids, statement_lists, proof_lists, rel, known, n_pairs
                            )
                            n_pairs += len(rows["pair_id"])
                            pairs_writer.write_table(pa.table(rows, schema=PAIRS_COLUMNS))
                            for p in batch:
                                article_file.setdefault(p.article_id, rel)
                        n += len(batch)
                    if not first and n < len(ref.headers):
                        raise MatchFormatError(
                            path,
                            None,
                            f"{n} pairs, {ref.path} has {len(ref.headers)}; first missing header "
                            f"{ref.headers[n]!r}",
                        )
                    table = pa.concat_tables(chunks) if chunks else OUTPUT_SCHEMA.empty_table()
                    if first:
                        ref.statements = table.column("statement_tokens")
                        counts[part] = n
                    variants.add("with metadata" if head["articles"] else "without metadata")
                    report["files"][rel] = {
                        "pairs": n,
                        "count": head["count"],
                        "articles": len(head["articles"]),
                    }
                    for aid, meta in head["articles"].items():
                        articles.setdefault(aid, meta)
                    parts.append(table)
                    del chunks, table
                target = out / "replaced" / split / f"{level}.parquet"
                write_parquet(pa.concat_tables(parts), target, OUTPUT_SCHEMA)
                tables[f"{split}/{level}"] = str(target)
                del parts
            report["splits"][split] = {"levels": levels, "parts": counts}
    if not articles:  # files without article lines: the headers' ids are the articles
        articles = {aid: ([], "") for aid in article_file}
    missing = sorted(set(article_file) - set(articles))
    if missing:
        raise MatchFormatError(
            article_file[missing[0]], None, f"article {missing[0]!r} has pairs but no article line"
        )
    used = sorted(article_file)
    write_parquet(
        pa.table(
            {
                "article_id": used,
                "title": [articles[a][1] for a in used],
                "categories": [articles[a][0] for a in used],
                "primary_category": [(articles[a][0] or [None])[0] for a in used],
                "chapter": pa.nulls(len(used), pa.string()),
            },
            schema=ARTICLES_SCHEMA,
        ),
        out / "corpus" / "articles.parquet",
        ARTICLES_SCHEMA,
    )
    manifest_schema = MANIFEST_SCHEMA.with_metadata({"n_shards": "1", "skipped": "[]"})
    write_parquet(
        pa.table(
            {
                "article_id": used,
                "path": [article_file[a] for a in used],
                "bytes": [0] * len(used),
                "shard": [0] * len(used),
            },
            schema=MANIFEST_SCHEMA,
        ),
        out / "corpus" / "manifest.parquet",
        manifest_schema,
    )
    report.update(
        pairs=n_pairs,
        articles=len(used),
        variant=" and ".join(sorted(variants)),
        duplicate_ids_renamed=sum(1 for pid in known if "#" in pid.rsplit("/", 1)[-1]),
        tables=tables,
    )
    report["differences"] = compare_counts(report)
    write_json(
        {"source": "match", "kept": n_pairs, "articles_kept": len(used), "folder": str(folder)},
        out / "data" / "filter_report.json",
    )
    return report


def _new_pairs(
    batch: list[Pair],
    ids: list[str],
    statements: list[list[str]] | None,
    proofs: list[list[str]],
    rel: str,
    known: dict[str, tuple[int, str]],
    position: int,
) -> dict[str, list[Any]]:
    """The rows of ``pairs.parquet`` of a Conservation chunk's pairs not read before (a pair is in
    the files of several splits: it must be the same pair each time)."""
    rows: dict[str, list[Any]] = {name: [] for name in PAIRS_COLUMNS.names}
    for p, pid, st, pr in zip(batch, ids, statements, proofs):
        digest = hash((tuple(st), tuple(pr)))
        if pid in known:
            if known[pid][0] != digest:
                raise MatchFormatError(
                    rel, p.line, f"pair {pid!r} differs from the pair of that id in {known[pid][1]}"
                )
            continue
        known[pid] = (digest, f"{rel}, line {p.line}")
        values = {
            "article_id": p.article_id,
            "statement_id": pid.removeprefix(f"{p.article_id}/"),
            "kind": "",
            "position": position + len(rows["pair_id"]),
            "statement_xml": fragment_xml(p.statement),
            "proof_xml": fragment_xml(p.proof),
            "pair_id": pid,
            "statement_tokens": st,
            "proof_tokens": pr,
            "statement_title_tokens": 0,
            "proof_title_tokens": 0,
        }
        for name, value in values.items():
            rows[name].append(value)
    return rows


def _check_aligned(path: Path, batch: list[Pair], start: int, ref: _Conservation) -> None:
    """The level file ``path``'s pairs ``start``... hold Conservation's pairs in its order."""
    for k, p in enumerate(batch, start):
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


def compare_counts(report: Mapping[str, Any]) -> list[str]:
    """How a read's counts differ from the release's (:data:`PAPER_COUNTS`); empty: they agree."""
    diffs = []
    for key in ("pairs", "articles"):
        if report.get(key) != PAPER_COUNTS[key]:
            diffs.append(f"{key}: {report.get(key):,} read, the paper has {PAPER_COUNTS[key]:,}")
    mixed = (report.get("splits") or {}).get("mixed", {}).get("parts")
    if mixed is None:
        diffs.append("mixed: not read")
    else:
        for part, n in PAPER_COUNTS["mixed"].items():
            if mixed.get(part) != n:
                diffs.append(f"mixed {part}: {mixed.get(part, 0):,} read, the paper has {n:,}")
    return diffs


def counts_text(report: Mapping[str, Any]) -> str:
    """What a read prints: its counts and how they differ from the paper's."""
    lines = [
        f"{report['pairs']:,} pairs from {report['articles']:,} articles ({report['variant']})"
    ]
    for split, info in report["splits"].items():
        parts = " / ".join(f"{info['parts'][p]:,}" for p in FILE_PARTS)
        lines.append(
            f"{X.SPLIT_NAMES[split]}: {parts} (train / dev / test), levels {', '.join(info['levels'])}"
        )
    for name, reason in sorted(report["skipped"].items()):
        lines.append(f"skipped {name}: {reason}")
    diffs = report["differences"]
    lines.append(
        "the counts are the paper's (184,094 pairs, 27,841 articles, Mixed 147,278 / 18,408 / 18,408)"
        if not diffs
        else "differs from the paper: " + "; ".join(diffs)
    )
    return "\n".join(lines)


# ----------------------------------------------------------------------------- writing


def export(
    results: str | os.PathLike,
    out_dir: str | os.PathLike,
    splits: Sequence[str] | None = None,
    levels: Sequence[str] | None = None,
    metadata: bool = True,
    csv: bool = False,
) -> list[str]:
    """Write a results tree's replaced splits (``results/replaced/{split}/{level}.parquet``) in the
    released layout under ``out_dir`` (``mixed/mixed_{level}_{part}``, ``pb/...``), with article
    lines from ``results/corpus/articles.parquet`` (``metadata``; else the count 0 and no article
    lines, as the reference's split files without metadata). ``csv``: also each file as the CSV the
    reference's BERT scripts read (``convert_to_csv.py``; :func:`matchfmt.csv_text`), as
    ``csv/{family}/{level}_{part}.csv`` (the reference's ``convert_to_csv.sh`` names it
    ``{level}_{part}.csv`` and drops the family). Returns the files written."""
    results = Path(results)
    articles: dict[str, tuple[list[str], str]] | None = None
    if metadata:
        table = read_table(results / "corpus" / "articles.parquet").to_pydict()
        articles = {}
        for aid, title, cats, primary in zip(
            table["article_id"], table["title"], table["categories"], table["primary_category"]
        ):
            cats = [c for c in (cats or []) if c]
            if primary and primary not in cats:
                cats = [primary, *cats]
            articles[aid] = (cats, title or "")
    written = []
    for split in splits or X.SPLITS:
        for level in levels or SPLIT_LEVELS[split]:
            if split != "pr" and level in X.PROTECTED_LEVELS:
                continue
            src = Path(X.replaced_data(split, level).replace("results", str(results), 1))
            if not src.exists():
                if splits is None and levels is None:
                    continue
                raise FileNotFoundError(f"{src}: no replaced data for {split} at {level}")
            data = read_table(
                src,
                columns=["pair_id", "article_id", "part", *("statement_tokens", "proof_tokens")],
            )
            rows = data.to_pydict()
            for part in FILE_PARTS:
                out_pairs = []
                for pid, aid, p, st, pr in zip(
                    rows["pair_id"],
                    rows["article_id"],
                    rows["part"],
                    rows["statement_tokens"],
                    rows["proof_tokens"],
                ):
                    if p != part:
                        continue
                    if not pid.startswith(f"{aid}/"):
                        raise ValueError(
                            f"{src}: pair id {pid!r} does not start with its article id {aid!r}/"
                        )
                    out_pairs.append(
                        OutPair(
                            aid,
                            pid[len(aid) + 1 :],
                            token_segments(st, f"{src}: pair {pid!r} statement"),
                            token_segments(pr, f"{src}: pair {pid!r} proof"),
                        )
                    )
                target = Path(out_dir) / file_name(split, level, part)
                write_file(target, out_pairs, articles)
                written.append(str(target))
                if csv:
                    family = target.parent.name
                    table = Path(out_dir) / "csv" / family / f"{target.name}.csv"
                    write_text(csv_text(out_pairs), table)
                    written.append(str(table))
    if not written:
        raise FileNotFoundError(f"{results}/replaced: no replaced split to export")
    return written


def data_digest(parquet: str | os.PathLike) -> str:
    """SHA-256 of a replaced split's pairs and tokens: each part (train, dev, test) in file order
    (what :func:`proofmatch.data.splits.read_parts` gives every consumer), each row's pair id,
    article, part and both token lists. Equal for a split and its export read back."""
    import hashlib

    columns = ["pair_id", "article_id", "part", "statement_tokens", "proof_tokens"]
    table = read_table(parquet, columns=columns)
    rows = list(zip(*(table.column(c).to_pylist() for c in columns)))
    h = hashlib.sha256()
    for part in FILE_PARTS:
        for row in rows:
            if row[2] == part:
                h.update(json.dumps(row, ensure_ascii=False).encode())
                h.update(b"\n")
    return h.hexdigest()


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


def export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", help="results tree with replaced/")
    parser.add_argument("--out", required=True, help="folder to write mixed/, unmixed/, pb/ into")
    parser.add_argument(
        "--splits", nargs="+", choices=X.SPLITS, help="default: every split present"
    )
    parser.add_argument(
        "--levels", nargs="+", choices=X.ALL_LEVELS, help="default: every level present"
    )
    parser.add_argument(
        "--no-metadata",
        action="store_true",
        help="write no article lines (count 0), as the reference's split files without metadata",
    )
    parser.add_argument(
        "--csv",
        action="store_true",
        help="also write each file as the reference's CSV (csv/{family}/{file}.csv)",
    )


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


def export_main(args: argparse.Namespace) -> int:
    setup_logging()
    written = export(
        args.results, args.out, args.splits, args.levels, not args.no_metadata, args.csv
    )
    print(f"{len(written)} files written under {args.out}")
    return 0
