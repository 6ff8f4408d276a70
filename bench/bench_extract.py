"""Benchmark: pair extraction over the Stacks corpus versus a bare lxml parse of the same files.

    python bench/bench_extract.py [CORPUS_DIR] [--repeat 3]

CORPUS_DIR defaults to the first folder config/stacks.yaml reads (its parent). Three timings, each the best of
``--repeat`` rounds (rounds interleave the variants, so load from other processes hits all of them),
in wall-clock and in CPU time of this process (steadier on a shared machine):

* ``bare parse``: ``etree.parse`` of the already-decompressed bytes (in memory, gzip excluded);
* ``gunzip + parse``: the same including decompression, for context;
* ``extraction``: :func:`proofmatch.data.extract.extract_files` from the files on disk (bounded read,
  decompression, entity pass, safe parse, pair search, serialisation; no Parquet write).

The ratio extraction / bare parse is the figure of merit (target: within 2x). The extracted pairs
are also linearized once (``linearize.linearize_shard``) and filtered once
(``filter_rules.classify``); those times are printed separately.
"""

from __future__ import annotations

import argparse
import gzip
import io
import logging
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from lxml import etree

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from proofmatch.artifacts import write_parquet  # noqa: E402
from proofmatch.data import extract, filter_rules, linearize, listing  # noqa: E402

Timing = tuple[float, float]  # (wall seconds, CPU seconds of this process)


def _clock() -> Timing:
    return time.perf_counter(), time.process_time()


def _since(start: Timing) -> Timing:
    wall, cpu = _clock()
    return wall - start[0], cpu - start[1]


def bare_parse(blobs: list[bytes]) -> Timing:
    start = _clock()
    for blob in blobs:
        etree.parse(io.BytesIO(blob))
    return _since(start)


def gunzip_parse(paths: list[Path]) -> Timing:
    start = _clock()
    for path in paths:
        data = path.read_bytes()
        etree.parse(io.BytesIO(gzip.decompress(data) if path.name.endswith(".gz") else data))
    return _since(start)


def extraction(items: list[tuple[str, str]]) -> tuple[Timing, int, dict]:
    start = _clock()
    pairs, report = extract.extract_files(items, desc="bench")
    return _since(start), len(pairs), report


def downstream(items: list[tuple[str, str]]) -> list[str]:
    """Time linearization and filtering once on the extracted pairs."""
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        pairs, _ = extract.extract_files(items, desc="bench")
        src, out = Path(tmp) / "pairs.parquet", Path(tmp) / "linearized.parquet"
        write_parquet(pairs, src, extract.PAIRS_SCHEMA)
        start = time.perf_counter()
        linearize.linearize_shard(str(src), str(out))
        lines.append(
            f"linearization (linearize.linearize_shard, once): {time.perf_counter() - start:.2f} s wall for {len(pairs)} pairs"
        )
        frame = pd.read_parquet(out)
        start = time.perf_counter()
        verdict, _ = filter_rules.classify(frame)
        kept = int(verdict["reason"].isna().sum())
        lines.append(
            f"filtering (filter_rules.classify, defaults, once): {time.perf_counter() - start:.2f} s wall; {kept} of {len(frame)} pairs kept"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "corpus_dir", nargs="?", default=str(REPO.parent / "shared" / "corpora" / "stacks")
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    paths = listing.list_articles(args.corpus_dir)
    items = [(listing.strip_article_suffix(p.name), str(p)) for p in paths]
    blobs = [
        gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes() for p in paths
    ]
    size_mb = sum(map(len, blobs)) / 1e6
    print(f"corpus: {args.corpus_dir}: {len(paths)} files, {size_mb:.1f} MB decompressed")
    bare: list[Timing] = []
    gz: list[Timing] = []
    ext: list[Timing] = []
    for _ in range(args.repeat):
        bare.append(bare_parse(blobs))
        gz.append(gunzip_parse(paths))
        seconds, n_pairs, report = extraction(items)
        ext.append(seconds)
    for i, clock in ((0, "wall"), (1, "CPU")):
        b, g, e = (min(t[i] for t in runs) for runs in (bare, gz, ext))
        print(f"[{clock} time, best of {args.repeat}]")
        print(
            f"  bare lxml parse (decompressed bytes in memory): {b:6.2f} s  ({size_mb / b:.0f} MB/s)"
        )
        print(f"  gunzip + lxml parse:                            {g:6.2f} s")
        print(f"  extraction from the files:                      {e:6.2f} s")
        print(
            f"  ratio extraction / bare parse: {e / b:.2f}x   (extraction / gunzip+parse: {e / g:.2f}x)"
        )
    skipped = report["files_skipped"] or "none"
    print(
        f"extraction found {n_pairs} pairs, {report['theorem_like']} theorem-like elements; skipped: {skipped}"
    )
    print("\n".join(downstream(items)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
