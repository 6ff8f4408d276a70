"""The filter stage: every linearized shard judged by :mod:`proofmatch.data.filter_rules` (the
paper's Appendix A), the kept pairs merged in order, an audit row for every dropped pair and a
report that adds up.

Shards are judged one at a time so memory holds one shard, not the corpus: duplicate pair ids are
marked first from the id columns of the whole input, an article found in several shards is judged
after them with all its pairs together (its language is decided once), and each shard's sorted kept
pairs are merged a row group at a time.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from proofmatch import config
from proofmatch.artifacts import (
    atomic_path,
    parquet_file,
    read_json,
    read_table,
    write_json,
    write_parquet,
)
from proofmatch.data.filter_rules import (
    AUDIT_COLUMNS,
    EXAMPLES,
    MIN_LANGUAGE_WORDS,
    REASONS,
    REQUIRED_COLUMNS,
    classify,
)
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

SORT_KEYS = ("article_id", "position", "pair_id")  # the order of the kept pairs
MERGE_READ_ROWS = (
    4096  # kept pairs of all shards buffered at once while merging them (one row group each)
)
MERGE_WRITE_ROWS = 1024  # pairs per row group of the merged output


# ---------------------------------------------------------------- extraction reports

_REPORT_KEYS = (
    "files_seen",
    "files_ok",
    "files_skipped",
    "theorem_like",
    "pairs",
    "max_file_mb",
    "max_depth",
)


def read_extraction_reports(report_jsons: Sequence[str | os.PathLike]) -> dict[str, Any] | None:
    """The per-shard extraction reports merged by :func:`proofmatch.data.extract.merge_reports`.

    None when no report is given; a report without the expected keys raises naming its file.
    """
    if not report_jsons:
        return None
    from proofmatch.data.extract import merge_reports  # lxml is only needed when reports are merged

    reports = []
    for path in report_jsons:
        rep = read_json(path)
        missing = [k for k in _REPORT_KEYS if k not in rep]
        if missing:
            raise ValueError(f"extraction report {path} lacks keys {missing}")
        reports.append(rep)
    return merge_reports(reports)


# ---------------------------------------------------------------- the stage


def _add_language_stats(total: dict[str, Any], part: dict[str, Any]) -> None:
    """Add one shard's language counts (:func:`classify`) to the running totals."""
    for key, value in part.items():
        total[key] = total.get(key, Counter() if isinstance(value, Counter) else 0) + value


def _sorted_table(table: pa.Table) -> pa.Table:
    """``table`` in :data:`SORT_KEYS` order (a stable sort, as ``sort_values(kind="stable")``)."""
    return table.take(pc.sort_indices(table, sort_keys=[(k, "ascending") for k in SORT_KEYS]))


class _PartReader:
    """Rows of one sorted Parquet part, handed out in order, ``n`` at a time, one row group buffered."""

    def __init__(self, path: Path, batch_rows: int) -> None:
        file = parquet_file(path)  # checked against its digest; one row group at a time
        self._batches = file.iter_batches(batch_size=batch_rows)
        self._buffer = pa.Table.from_batches([], schema=file.schema_arrow)

    def take(self, n: int) -> pa.Table:
        while self._buffer.num_rows < n:
            self._buffer = pa.concat_tables(
                [self._buffer, pa.Table.from_batches([next(self._batches)])]
            )
        head, self._buffer = self._buffer.slice(0, n), self._buffer.slice(n)
        return head


def _merge_parts(parts: list[Path], out: str | os.PathLike, read_rows: int) -> None:
    """Write the rows of ``parts`` (each sorted by :data:`SORT_KEYS`) to ``out`` in that order.

    The order is the stable sort of all parts' keys concatenated (ties keep the parts' order), as
    sorting the whole input at once gives; memory holds the keys, one row group (``read_rows``) per
    part and one output row group.
    """
    keys = []
    for i, path in enumerate(parts):
        k = read_table(path, columns=list(SORT_KEYS))
        keys.append(k.append_column("part", pa.array(np.full(k.num_rows, i, dtype=np.int32))))
    all_keys = pa.concat_tables(keys)
    order = pc.sort_indices(all_keys, sort_keys=[(k, "ascending") for k in SORT_KEYS])
    part_of_row = all_keys["part"].take(order).to_numpy()
    readers = [_PartReader(path, read_rows) for path in parts]
    schema = pq.read_schema(parts[0])
    with atomic_path(out, ".parquet", digest=True) as tmp, pq.ParquetWriter(tmp, schema) as writer:
        if len(part_of_row) == 0:
            writer.write_table(schema.empty_table())
        for start in range(0, len(part_of_row), MERGE_WRITE_ROWS):
            chunk = part_of_row[start : start + MERGE_WRITE_ROWS]
            pieces, where = [], np.empty(len(chunk), dtype=np.int64)
            offset = 0
            for i in np.unique(chunk):
                rows = np.flatnonzero(chunk == i)
                pieces.append(readers[i].take(len(rows)).cast(schema))
                where[rows] = offset + np.arange(len(rows))
                offset += len(rows)
            writer.write_table(pa.concat_tables(pieces).take(pa.array(where)))


class _Judged:
    """What :func:`filter_pairs` keeps of the parts it has judged: the sorted kept pairs of each
    part (temporary Parquet files), the audit rows with their input row numbers (as Arrow tables,
    a few times smaller than frames of Python token lists), the counts."""

    def __init__(
        self, folder: Path, read_rows: int, language: str | None, min_tokens: int, max_tokens: int
    ) -> None:
        self.folder, self.read_rows = folder, read_rows
        self.language, self.min_tokens, self.max_tokens = language, min_tokens, max_tokens
        self.parts: list[Path] = []
        self.audits: list[pa.Table] = []
        self.lang: dict[str, Any] = {}
        self.articles_kept: set[str] = set()
        self.kept = 0

    def judge(self, table: pa.Table, rows: np.ndarray, duplicate: np.ndarray) -> None:
        """Classify one part (every pair of its articles); ``rows`` are its rows' input row numbers."""
        df = table.to_pandas()
        verdict, lang = classify(df, self.language, self.min_tokens, self.max_tokens, duplicate)
        _add_language_stats(self.lang, lang)
        drop = verdict["reason"].notna().to_numpy()
        audit = pd.concat(
            [
                df.loc[drop, ["pair_id", "article_id"]],
                verdict.loc[drop],
                df.loc[drop, list(AUDIT_COLUMNS[7:])],
            ],
            axis=1,
        )[list(AUDIT_COLUMNS)]
        self.audits.append(
            pa.Table.from_pandas(audit.assign(_row=rows[drop]), preserve_index=False)
        )
        kept = table.filter(pa.array(~drop))
        if "linearize_error" in kept.column_names:
            kept = kept.drop_columns(["linearize_error"])
        self.parts.append(self.folder / f"part-{len(self.parts):05d}.parquet")
        pq.write_table(_sorted_table(kept), self.parts[-1], row_group_size=self.read_rows)
        self.kept += kept.num_rows
        self.articles_kept.update(kept["article_id"].to_pylist())

    def audit(self) -> pd.DataFrame:
        """The audit of the dropped pairs in input order."""
        if not self.audits:
            return pd.DataFrame(columns=list(AUDIT_COLUMNS))
        table = pa.concat_tables(self.audits, promote_options="permissive").replace_schema_metadata(
            None
        )
        table = table.take(pc.sort_indices(table, sort_keys=[("_row", "ascending")])).drop_columns(
            ["_row"]
        )
        return table.to_pandas().astype({"statement_length": "Int64", "proof_length": "Int64"})


def _input_keys(shard_parquets: Sequence[str]) -> tuple[list[int], np.ndarray, set[str], int]:
    """Rows per shard, whether each input row repeats an earlier ``pair_id`` (shards in order, rows
    in file order), the articles found in more than one shard and the number of articles; reads
    only the two id columns."""
    sizes, ids, shards_of = [], [], Counter()
    for path in shard_parquets:
        missing = [c for c in REQUIRED_COLUMNS if c not in pq.read_schema(path).names]
        if missing:
            raise ValueError(f"linearized shard {path} lacks columns {missing}")
        keys = read_table(path, columns=["pair_id", "article_id"])
        sizes.append(keys.num_rows)
        ids.append(keys["pair_id"].to_pandas().astype(str))
        shards_of.update(set(keys["article_id"].to_pandas().astype(str)))
    duplicate = (
        pd.concat(ids, ignore_index=True).duplicated(keep="first").to_numpy()
        if ids
        else np.zeros(0, dtype=bool)
    )
    return sizes, duplicate, {a for a, n in shards_of.items() if n > 1}, len(shards_of)


def _judge_shards(
    judged: _Judged,
    shard_parquets: Sequence[str],
    sizes: list[int],
    duplicate: np.ndarray,
    split_articles: set[str],
) -> None:
    """Judge the shards one at a time, then the pairs of the articles found in several shards together."""
    starts = np.cumsum([0, *sizes])
    deferred: list[tuple[pa.Table, np.ndarray]] = []
    for i, path in enumerate(tqdm(shard_parquets, desc="filter", unit="shard", disable=None)):
        table = read_table(path)
        if table.num_rows != sizes[i]:
            raise ValueError(
                f"{path} changed while it was read ({sizes[i]} then {table.num_rows} rows)"
            )
        rows = np.arange(starts[i], starts[i + 1])
        if split_articles:
            split = table["article_id"].to_pandas().astype(str).isin(split_articles).to_numpy()
            deferred.append((table.filter(pa.array(split)), rows[split]))
            table, rows = table.filter(pa.array(~split)), rows[~split]
        judged.judge(table, rows, duplicate[rows])
        log.info("%s: %d pairs", path, sizes[i])
        del table
    if deferred:
        rows = np.concatenate([r for _, r in deferred])
        judged.judge(pa.concat_tables([t for t, _ in deferred]), rows, duplicate[rows])
        log.info(
            "%d pairs of %d articles found in several shards judged together",
            len(rows),
            len(split_articles),
        )


def _no_language_stats() -> dict[str, Any]:
    """The language counts of a run that judged no pair."""
    return {
        "articles": 0,
        "languages": Counter(),
        "short": 0,
        "unreliable": 0,
        "undetected": 0,
        "dropped_articles": Counter(),
        "dropped_pairs": Counter(),
    }


def _accounting(
    n_input: int,
    n_kept: int,
    dropped: dict[str, int],
    examples: dict[str, int],
    lang: dict[str, Any],
    extraction: dict[str, Any] | None,
) -> dict[str, bool | None]:
    """The report's ``check``; raises when the counts do not add up (:func:`filter_pairs`)."""
    check = {
        "kept_plus_dropped_equals_input": n_kept + sum(dropped.values()) == n_input,
        "too_short_examples_add_up": sum(examples.values()) == dropped["too_short"],
        "language_articles_add_up": lang["articles"]
        == sum(lang["languages"].values())
        + lang["short"]
        + lang["unreliable"]
        + lang["undetected"],
        "extraction_pairs_equal_input": None
        if extraction is None
        else extraction["pairs"] == n_input,
    }
    failed = [k for k, v in check.items() if v is False and k != "extraction_pairs_equal_input"]
    if failed:
        raise AssertionError(
            f"filter accounting is off ({failed}): {n_kept} kept, dropped {dropped}, "
            f"examples {examples}, {n_input} input"
        )
    if check["extraction_pairs_equal_input"] is False:
        raise ValueError(
            f"the extraction reports count {extraction['pairs']} pairs but the linearized shards hold "
            f"{n_input}: a shard is stale or missing (rerun linearize)"
        )
    return check


def _report(
    judged: _Judged,
    n_input: int,
    n_articles: int,
    dropped: dict[str, int],
    examples: dict[str, int],
    lang: dict[str, Any],
    extraction: dict[str, Any] | None,
    check: dict[str, bool | None],
) -> dict[str, Any]:
    """``filter_report.json``: the counts, the language decisions, the settings and the checks."""
    return {
        "input_pairs": n_input,
        "kept": judged.kept,
        "dropped": dropped,
        "dropped_total": sum(dropped.values()),
        "too_short_examples": examples,
        "articles_in": n_articles,
        "articles_kept": len(judged.articles_kept),
        "language_articles": lang["articles"],
        "languages": dict(sorted(lang["languages"].items())),
        "language_dropped_articles": dict(sorted(lang["dropped_articles"].items())),
        "language_dropped_pairs": dict(sorted(lang["dropped_pairs"].items())),
        "language_short": lang["short"],
        "language_unreliable": lang["unreliable"],
        "language_undetected": lang["undetected"],
        "params": {
            "language": judged.language,
            "language_unit": "article",
            "min_tokens": judged.min_tokens,
            "max_tokens": judged.max_tokens,
            "min_language_words": MIN_LANGUAGE_WORDS,
            "length_unit": "whitespace tokens of text + math symbols, titles included (reference code)",
            "order": list(REASONS),
            "too_short_examples": list(EXAMPLES),
        },
        "extraction": extraction,
        "check": check,
    }


def filter_pairs(
    shard_parquets: list[str],
    report_jsons: list[str],
    out_pairs: str | os.PathLike,
    out_audit: str | os.PathLike,
    out_report: str | os.PathLike,
    language: str | None = config.default("filter.language"),
    min_tokens: int = config.default("filter.min_tokens"),
    max_tokens: int = config.default("filter.max_tokens"),
) -> dict[str, Any]:
    """Filter the linearized shards; write kept pairs, the audit of dropped pairs and a report.

    Memory holds one shard, not the corpus: the shards are judged one at a time, with the
    duplicate ``pair_id`` marks of the whole input (shards in order, rows in file order) computed
    first from the id columns. The language decision needs every pair of an article; the manifest
    puts each article in one shard, and the pairs of an article found in several shards are judged
    together after the shards. Each part's kept pairs, sorted by :data:`SORT_KEYS`, go to a
    temporary Parquet beside ``out_pairs``; the output is their merge, in the order of sorting all
    kept pairs at once. The audit lists the dropped pairs in input order.

    The report's ``check`` must hold: kept + dropped == input pairs, the ``too_short`` examples
    add up to ``too_short``, the language counts add up to the articles checked, and (when
    extraction reports are given) input pairs == the extraction's pair count; a mismatch raises
    rather than hiding a stale or truncated shard.
    """
    if min_tokens < 0 or max_tokens < max(min_tokens, 1):
        raise ValueError(f"need 0 <= min_tokens <= max_tokens, got {min_tokens}..{max_tokens}")
    sizes, duplicate, split_articles, n_articles = _input_keys(shard_parquets)
    n_input = int(sum(sizes))
    read_rows = max(1, MERGE_READ_ROWS // max(1, len(shard_parquets)))
    Path(out_pairs).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(
        prefix=f".{Path(out_pairs).name}.", dir=Path(out_pairs).parent
    ) as tmp_dir:
        judged = _Judged(Path(tmp_dir), read_rows, language, min_tokens, max_tokens)
        _judge_shards(judged, shard_parquets, sizes, duplicate, split_articles)
        if judged.parts:
            _merge_parts(judged.parts, out_pairs, read_rows)
        else:
            write_parquet(pd.DataFrame(columns=list(REQUIRED_COLUMNS)), out_pairs)
    lang = judged.lang or _no_language_stats()
    audit = judged.audit()
    dropped = {r: int((audit["reason"] == r).sum()) for r in REASONS}
    examples = {e: int((audit["example"] == e).sum()) for e in EXAMPLES}
    extraction = read_extraction_reports(report_jsons)
    check = _accounting(n_input, judged.kept, dropped, examples, lang, extraction)
    report = _report(judged, n_input, n_articles, dropped, examples, lang, extraction, check)
    write_parquet(audit, out_audit)
    write_json(report, out_report)
    log.info(
        "kept %d of %d pairs; dropped %s; too short: %s; non-English articles: %s",
        judged.kept,
        n_input,
        json.dumps(dropped),
        json.dumps(examples),
        json.dumps(report["language_dropped_articles"]),
    )
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shards", nargs="+", required=True, help="linearized shard Parquets")
    parser.add_argument(
        "--reports", nargs="*", default=[], help="extraction report JSONs (shard-*.report.json)"
    )
    parser.add_argument("--out-pairs", required=True, help="pairs kept (parquet)")
    parser.add_argument(
        "--out-audit", required=True, help="every pair with its filter reason (parquet)"
    )
    parser.add_argument("--out-report", required=True, help="counts per filter (markdown)")
    config.add_option(
        parser,
        "--language",
        key="filter.language",
        help="language code to keep; 'none' disables the filter",
    )
    config.add_option(
        parser,
        "--min-tokens",
        key="filter.min_tokens",
        type=int,
        help="fewest tokens of a statement or proof",
    )
    config.add_option(
        parser,
        "--max-tokens",
        key="filter.max_tokens",
        type=int,
        help="most tokens of a statement or proof",
    )
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    language = None if str(args.language).lower() in ("none", "null", "") else args.language
    report = filter_pairs(
        args.shards,
        args.reports,
        args.out_pairs,
        args.out_audit,
        args.out_report,
        language=language,
        min_tokens=args.min_tokens,
        max_tokens=args.max_tokens,
    )
    print(
        json.dumps(
            {
                k: report[k]
                for k in (
                    "input_pairs",
                    "kept",
                    "dropped",
                    "too_short_examples",
                    "language_dropped_articles",
                )
            },
            indent=2,
        )
    )
    return 0
