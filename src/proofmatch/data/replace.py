"""Symbol replacement in proofs (paper §5 and Appendix C), on parsed MathML trees.

Why: with the original symbols a model can match a proof to its statement by spotting shared
variable names; renaming the proof's variables tests whether it understands more than that.

Which symbols are renamed, and to what, is decided over symbol sets in
:mod:`proofmatch.data.symbols` (the rules, the levels and the per-pair randomness are described
there); where the replaceable ``mi`` elements of a proof stand in its tokens (the *slots*), and
one pair's replacement, in :mod:`proofmatch.data.slots`; one level over a batch of pairs and its
summary counts in :mod:`proofmatch.data.levels`. This module writes the files.

Cost: the XML work (parsing, presentation MathML, finding the replaceable ``mi`` elements and
where their tokens stand) does not depend on the level, so it is done once per pair
(:func:`analyze_file`, ``results/replaced/symbols.parquet``); each level is then a pure mapping
over symbol sets and token slots (:func:`replace_level_file`, ``results/replaced/{level}.parquet``
for every pair), and each split selects its rows from it (:func:`select_split`), so a level is
computed once, not once per split.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from proofmatch import config
from proofmatch.artifacts import (
    atomic_path,
    marked_schema,
    parquet_file,
    read_table,
    write_json,
    write_parquet,
)
from proofmatch.data.levels import (
    LEVEL_SCHEMA,
    SYMBOL_SETS,
    Level,
    Tally,
    level_summary,
    passed_through,
    replace_batch,
)
from proofmatch.data.linearize import FragmentError
from proofmatch.data.slots import analyze_pair
from proofmatch.data.symbols import (
    DEFAULT_ALPHA,
    DEFAULT_PROTECTED,
    DEFAULT_ROUNDING,
    ROUNDINGS,
    check_level,
    check_protected,
)
from proofmatch.experiments import ALL_LEVELS
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

SYMBOLS_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("article_id", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("slots", pa.list_(pa.int32())),
        *[(name, pa.string()) for name in SYMBOL_SETS],
    ]
)
OUTPUT_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("article_id", pa.string()),
        ("part", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("mapping", pa.string()),
    ]
)
PAIR_COLUMNS = [
    "pair_id",
    "article_id",
    "statement_xml",
    "proof_xml",
    "statement_tokens",
    "proof_tokens",
]


def _parquet(path: str | os.PathLike, columns: Iterable[str]) -> pq.ParquetFile:
    file = parquet_file(path)  # checked against its digest; one row group at a time
    missing = [c for c in columns if c not in file.schema_arrow.names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}")
    return file


def analyze_file(
    pairs_parquet: str | os.PathLike,
    out_parquet: str | os.PathLike,
    pair_ids: Collection[str] | None = None,
) -> int:
    """Write every pair's :class:`~proofmatch.data.slots.PairSymbols` (only ``pair_ids`` if given);
    returns the row count.

    The pairs file is read in record batches and the output written batch by batch, so memory
    holds one batch, not the corpus. The proof tokens of the presentation trees must equal the
    linearize stage's ``proof_tokens`` (checked per pair): the replaced tokens of a level are
    then exactly what linearizing the renamed trees would give.
    """
    pairs_file = _parquet(pairs_parquet, PAIR_COLUMNS)
    seen: set[str] = set()
    total = pairs_file.metadata.num_rows if pair_ids is None else len(pair_ids)
    with (
        atomic_path(out_parquet, ".parquet", digest=True) as tmp,
        pq.ParquetWriter(tmp, marked_schema(SYMBOLS_SCHEMA)) as writer,
    ):
        with tqdm(total=total, desc="symbols", unit="pair", mininterval=5) as bar:
            for batch in pairs_file.iter_batches(columns=PAIR_COLUMNS, batch_size=256):
                rows: dict[str, list[Any]] = {name: [] for name in SYMBOLS_SCHEMA.names}
                for rec in batch.to_pylist():
                    pid = rec["pair_id"]
                    if pair_ids is not None and pid not in pair_ids:
                        continue
                    if pid in seen:
                        raise ValueError(f"{pairs_parquet}: duplicated pair_id {pid!r}")
                    seen.add(pid)
                    try:
                        pair = analyze_pair(rec["statement_xml"], rec["proof_xml"])
                    except FragmentError as exc:
                        raise ValueError(
                            f"pair {pid!r} passed linearization but its fragment fails now: {exc}"
                        ) from exc
                    if pair.tokens != rec["proof_tokens"]:
                        at = next(
                            (
                                i
                                for i, (a, b) in enumerate(zip(pair.tokens, rec["proof_tokens"]))
                                if a != b
                            ),
                            min(len(pair.tokens), len(rec["proof_tokens"])),
                        )
                        raise ValueError(
                            f"pair {pid!r}: the proof's presentation tokens differ from {pairs_parquet}'s proof_tokens "
                            f"at token {at} ({pair.tokens[at : at + 3]} vs {rec['proof_tokens'][at : at + 3]}); "
                            "was the linearize stage run with other code? Rerun it (snakemake -R linearize)"
                        )
                    values = (
                        pid,
                        rec["article_id"],
                        rec["statement_tokens"],
                        rec["proof_tokens"],
                        pair.slots,
                        *pair.statement.encode(),
                        *pair.proof.encode(),
                    )
                    for name, value in zip(SYMBOLS_SCHEMA.names, values):
                        rows[name].append(value)
                    bar.update()
                writer.write_table(pa.table(rows, schema=SYMBOLS_SCHEMA))
    if pair_ids is not None and len(seen) != len(pair_ids):
        absent = sorted(set(pair_ids) - seen)
        raise ValueError(f"{len(absent)} pair id(s) are not in {pairs_parquet}, e.g. {absent[0]!r}")
    log.info("symbols of %d pairs", len(seen))
    return len(seen)


def replace_level_file(
    symbols_parquet: str | os.PathLike,
    level: str,
    out_parquet: str | os.PathLike,
    summary_json: str | os.PathLike,
    seed: int = config.default("seed"),
    alpha: float | None = DEFAULT_ALPHA,
    protected: Sequence[str] = DEFAULT_PROTECTED,
    rounding: str | None = DEFAULT_ROUNDING,
) -> dict[str, Any]:
    """Replace the symbols of every pair of the symbols file at one level; returns the summary.

    ``alpha`` (the fraction of shared groups that keep their names) and ``rounding`` are used by
    the partial levels, ``protected`` by the ``*_p`` levels (all recorded in the summary). The
    summary counts the pairs whose proof tokens changed and the pairs left unchanged
    (``unchanged_pairs``), for the latter why (:data:`UNCHANGED_REASONS`), plus the shared groups
    per pair; at the partial levels also the shared groups renamed and kept over all pairs.
    """
    check_level(level, alpha, rounding)
    check_protected(protected)
    symbols_file = _parquet(symbols_parquet, SYMBOLS_SCHEMA.names)
    spec, tally = Level(level, seed, alpha, protected, rounding), Tally()
    with (
        atomic_path(out_parquet, ".parquet", digest=True) as tmp,
        pq.ParquetWriter(tmp, marked_schema(LEVEL_SCHEMA)) as writer,
    ):
        for batch in symbols_file.iter_batches(batch_size=2048):
            if level == "conservation":  # nothing to compute: pass the tokens through as Arrow data
                writer.write_table(passed_through(batch))
                tally.passed_through(batch.num_rows)
            else:
                writer.write_table(replace_batch(batch, spec, tally))
    summary = level_summary(spec, tally)
    write_json(summary, summary_json)
    log.info(
        "%s: %d pairs, %d changed, %d unchanged (%s); %d symbols kept because no letter was left",
        level,
        tally.n,
        tally.n_changed,
        tally.n - tally.n_changed,
        ", ".join(f"{r} {c}" for r, c in tally.unchanged.items() if c) or "none",
        tally.n_kept,
    )
    return summary


def select_split(
    level_parquet: str | os.PathLike,
    split_parquet: str | os.PathLike,
    out_parquet: str | os.PathLike,
) -> None:
    """The rows of one split from a level's file, in the split's order, with its ``part`` column.

    A level does not depend on the split (each pair's randomness is seeded by its id), so the
    three splits share one replacement per level and this join is all that is left to do.
    """
    split = read_table(split_parquet, columns=["pair_id", "article_id", "part"])
    ids = split.column("pair_id").cast(pa.string())
    if pc.count_distinct(ids).as_py() != len(ids):
        counts = pc.value_counts(ids)
        dup = counts.filter(pc.greater(counts.field("counts"), 1))[0]["values"].as_py()
        raise ValueError(f"{split_parquet}: duplicated pair_id, e.g. {dup!r}")
    level = read_table(
        level_parquet, columns=["pair_id", "statement_tokens", "proof_tokens", "mapping"]
    )
    where = pc.index_in(ids, value_set=level.column("pair_id"))
    if where.null_count:
        absent = ids.filter(pc.is_null(where))
        raise ValueError(
            f"{len(absent)} pair id(s) of {split_parquet} are not in {level_parquet}, e.g. {absent[0].as_py()!r}"
        )
    rows = level.take(where)
    table = pa.table(
        {
            "pair_id": ids,
            "article_id": split.column("article_id").cast(pa.string()),
            "part": split.column("part").cast(pa.string()),
            **{name: rows.column(name) for name in ("statement_tokens", "proof_tokens", "mapping")},
        },
        schema=OUTPUT_SCHEMA,
    )
    write_parquet(table, out_parquet)


def replace_split_file(
    pairs_parquet: str | os.PathLike,
    split_parquet: str | os.PathLike,
    level: str,
    out_parquet: str | os.PathLike,
    seed: int = config.default("seed"),
    alpha: float | None = DEFAULT_ALPHA,
    protected: Sequence[str] = DEFAULT_PROTECTED,
    summary_json: str | os.PathLike | None = None,
    rounding: str | None = DEFAULT_ROUNDING,
) -> dict[str, Any]:
    """One split at one level in one call (the CLI): :func:`analyze_file` of the split's pairs,
    :func:`replace_level_file`, :func:`select_split`; returns the level's summary."""
    check_level(level, alpha, rounding)
    check_protected(protected)
    wanted = set(read_table(split_parquet, columns=["pair_id"]).column("pair_id").to_pylist())
    Path(out_parquet).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(out_parquet).parent, prefix=".replace.") as tmp:
        analyze_file(pairs_parquet, Path(tmp) / "symbols.parquet", pair_ids=wanted)
        summary = replace_level_file(
            Path(tmp) / "symbols.parquet",
            level,
            Path(tmp) / "level.parquet",
            summary_json or Path(tmp) / "summary.json",
            seed=seed,
            alpha=alpha,
            protected=protected,
            rounding=rounding,
        )
        select_split(Path(tmp) / "level.parquet", split_parquet, out_parquet)
    return summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pairs", help="filtered pairs (results/data/pairs.parquet)")
    parser.add_argument(
        "split",
        nargs="?",
        default=None,
        help="split assignment (results/splits/SPLIT.parquet); without it every pair is replaced "
        "and the output has no part column (results/replaced/LEVEL.parquet)",
    )
    parser.add_argument("--level", required=True, choices=ALL_LEVELS, help="replacement level")
    parser.add_argument(
        "--out", required=True, help="output Parquet (results/replaced/SPLIT/LEVEL.parquet)"
    )
    parser.add_argument("--summary", default=None, help="also write the level's summary JSON here")
    config.add_option(parser, "--seed", key="seed", type=int, help="global seed")
    config.add_option(
        parser,
        "--alpha",
        key="replace.partial_alpha",
        type=float,
        help="partial levels: fraction of the shared symbol groups that keep their names",
    )
    config.add_option(
        parser,
        "--rounding",
        key="replace.partial_rounding",
        choices=ROUNDINGS,
        help="partial levels: how (1 - alpha) x shared groups is rounded; "
        "half_even is the reference's round()",
    )
    config.add_option(
        parser,
        "--protected",
        key="replace.protected",
        nargs="*",
        help="symbols kept by the *_p levels",
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    if args.split is not None:
        replace_split_file(
            args.pairs,
            args.split,
            args.level,
            args.out,
            seed=args.seed,
            alpha=args.alpha,
            protected=args.protected,
            summary_json=args.summary,
            rounding=args.rounding,
        )
        return 0
    out = Path(args.out)
    with tempfile.TemporaryDirectory(
        dir=out.parent if out.parent.exists() else None, prefix=".replace."
    ) as tmp:
        analyze_file(args.pairs, Path(tmp) / "symbols.parquet")
        replace_level_file(
            Path(tmp) / "symbols.parquet",
            args.level,
            out,
            args.summary or Path(tmp) / "summary.json",
            seed=args.seed,
            alpha=args.alpha,
            protected=args.protected,
            rounding=args.rounding,
        )
    return 0
