"""``proofmatch export-match``: a results tree's splits and levels in the released MATcH layout,
byte for byte as the reference writer. Apart from :mod:`proofmatch.data.match`, which reads a
released folder in: writing one out shares only the format (:mod:`proofmatch.data.matchfmt`)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from proofmatch import experiments as X
from proofmatch.artifacts import read_table, write_text
from proofmatch.data.match import SPLIT_LEVELS
from proofmatch.data.matchfmt import FILE_PARTS, file_name, token_segments
from proofmatch.data.matchfmt_write import OutPair, csv_text, write_file
from proofmatch.logs import setup_logging


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
    reference's BERT scripts read (``convert_to_csv.py``; :func:`matchfmt_write.csv_text`), as
    ``csv/{family}/{level}_{part}.csv`` (the reference's ``convert_to_csv.sh`` names it
    ``{level}_{part}.csv`` and drops the family). Returns the files written."""
    results = Path(results)
    articles = _articles(results) if metadata else None
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
                out_pairs = _out_pairs(rows, part, src)
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


def _articles(results: Path) -> dict[str, tuple[list[str], str]]:
    """The article lines of a results tree's ``corpus/articles.parquet``: ``id -> (categories,
    title)``, the primary category first."""
    table = read_table(results / "corpus" / "articles.parquet").to_pydict()
    articles = {}
    for aid, title, cats, primary in zip(
        table["article_id"], table["title"], table["categories"], table["primary_category"]
    ):
        cats = [c for c in (cats or []) if c]
        if primary and primary not in cats:
            cats = [primary, *cats]
        articles[aid] = (cats, title or "")
    return articles


def _out_pairs(rows: dict[str, list[Any]], part: str, src: Path) -> list[OutPair]:
    """The pairs of a replaced split's rows (``to_pydict``) in ``part``, in file order."""
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
            raise ValueError(f"{src}: pair id {pid!r} does not start with its article id {aid!r}/")
        out_pairs.append(
            OutPair(
                aid,
                pid[len(aid) + 1 :],
                token_segments(st, f"{src}: pair {pid!r} statement"),
                token_segments(pr, f"{src}: pair {pid!r} proof"),
            )
        )
    return out_pairs


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
    written = export(
        args.results, args.out, args.splits, args.levels, not args.no_metadata, args.csv
    )
    print(f"{len(written)} files written under {args.out}")
    return 0
