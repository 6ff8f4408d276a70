"""``proofmatch stats``: Tables 1 and 2 from the filtered pairs, the manifest and the articles.

The command lives on the evaluation floor, beside the table module that lays the tables out
(:func:`proofmatch.evaluation.dataset_tables.write_table1`, :func:`~proofmatch.evaluation.dataset_tables.write_table2`),
and not in :mod:`proofmatch.data.stats`: the statistics are data, their tables are evaluation's,
and the data floor imports nothing above it. The workflow's ``table1`` and ``table2`` rules call
the same two functions.
"""

from __future__ import annotations

import argparse
import logging

from proofmatch.evaluation.dataset_tables import write_table1, write_table2
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--manifest", help="results/corpus/manifest.parquet (Table 1)")
    parser.add_argument("--articles", help="results/corpus/articles.parquet (Table 1)")
    parser.add_argument(
        "--pairs", required=True, help="filtered pairs (results/data/pairs.parquet)"
    )
    parser.add_argument("--table1", metavar="PREFIX", help="write PREFIX.md/.tex/.csv for Table 1")
    parser.add_argument("--table2", metavar="PREFIX", help="write PREFIX.md/.tex/.csv for Table 2")
    parser.add_argument("--top", type=int, default=13, help="primary categories listed in Table 1")
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    if not args.table1 and not args.table2:
        log.error("nothing to do: pass --table1 and/or --table2")
        return 2
    if args.table1:
        if not args.manifest or not args.articles:
            log.error("--table1 needs --manifest and --articles")
            return 2
        print(
            write_table1(
                args.manifest, args.articles, args.pairs, args.table1, top=args.top
            ).to_string(index=False)
        )
    if args.table2:
        print(write_table2(args.pairs, args.table2).to_string(index=False))
    return 0
