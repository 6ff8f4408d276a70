"""Symbol replacement in proofs (paper §5 and Appendix C), on parsed MathML trees.

Why: with the original symbols a model can match a proof to its statement by spotting shared
variable names; renaming the proof's variables tests whether it understands more than that.

Which symbols are renamed, and to what, is decided over symbol sets in
:mod:`proofmatch.data.symbols` (the rules, the levels and the per-pair randomness are described
there). This module does the rest: it finds the replaceable ``mi`` elements of the proof and where
their tokens stand (the *slots*), renames the tokens in those slots, and writes the files.

Cost: the XML work (parsing, presentation MathML, finding the replaceable ``mi`` elements and
where their tokens stand) does not depend on the level, so it is done once per pair
(:func:`analyze_file`, ``results/replaced/symbols.parquet``); each level is then a pure mapping
over symbol sets and token slots (:func:`replace_level_file`, ``results/replaced/{level}.parquet``
for every pair), and each split selects its rows from it (:func:`select_split`), so a level is
computed once, not once per split.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from lxml import etree
from tqdm import tqdm

from proofmatch.data.linearize import FragmentError, iter_maths, linearize_element, linearize_fragment, parse_fragment
from proofmatch import config
from proofmatch.logs import setup_logging
from proofmatch.data.mathml import presentation
from proofmatch.experiments import ALL_LEVELS
from proofmatch.data.symbols import (
    DEFAULT_ALPHA,
    DEFAULT_PROTECTED,
    DEFAULT_ROUNDING,
    ROUNDINGS,
    UNCHANGED_REASONS,
    Symbols,
    check_level,
    check_protected,
    classify,
    pair_rng,
    plan_mapping,
    renamed_count,
    shared_groups,
    unchanged_reason,
)
from proofmatch.artifacts import atomic_path, write_json, write_parquet
from proofmatch.data.views import MATH_PREFIX, math_token, split_math

log = logging.getLogger(__name__)


# --- the XML work, once per pair ------------------------------------------------------------------

# Linearization runs with every replaceable mi renamed to a private-use character (one per
# letter), so the tokens it yields say which of them come from a replaceable mi: the slots.
SLOT_BASE = 0xF0000  # Supplementary Private Use Area-A


@dataclass
class PairSymbols:
    """What every level needs of one pair: symbol sets, the proof's tokens and its slots."""

    statement: Symbols
    proof: Symbols
    tokens: list[str]  # the proof's tokens (linearization of its presentation trees)
    slots: list[int]  # indices of the tokens that stand for a replaceable mi


def _presentation_in_place(root: etree._Element) -> tuple[etree._Element, list[etree._Element]]:
    """Swap each math that linearization reads for its presentation copy.

    Returns the (possibly new) root and the copies, whose ``mi`` elements can then be renamed.
    """
    copies = []
    for math in list(iter_maths(root)):
        pres = presentation(math)
        parent = math.getparent()
        if parent is None:  # the fragment is a bare <math>
            return pres, [pres]
        pres.tail = math.tail
        parent.replace(math, pres)
        copies.append(pres)
    return root, copies


def analyze_pair(statement_xml: str, proof_xml: str) -> PairSymbols:
    """Parse both fragments once and find the proof's slots; may raise
    :class:`proofmatch.data.linearize.FragmentError`."""
    statement, _ = classify(presentation(m) for m in iter_maths(parse_fragment(statement_xml)))
    proof_root, trees = _presentation_in_place(parse_fragment(proof_xml))
    proof, occurrences = classify(trees)
    alphabet = sorted(proof.candidates)
    marks = {c: chr(SLOT_BASE + k) for k, c in enumerate(alphabet)}
    for mi, char in occurrences:
        mi.text = marks[char]
    tokens, slots = linearize_element(proof_root, presented=True)[0], []
    first, last = chr(SLOT_BASE), chr(SLOT_BASE + len(alphabet) - 1)
    for i, token in enumerate(tokens):
        if token[:1] == MATH_PREFIX and first <= token[1:2] <= last:
            symbol, font = split_math(token)
            if len(symbol) == 1:
                tokens[i] = math_token(alphabet[ord(symbol) - SLOT_BASE], font)
                slots.append(i)
    return PairSymbols(statement, proof, tokens, slots)


def apply_mapping(tokens: Sequence[str], slots: Iterable[int], mapping: dict[str, str]) -> list[str]:
    """The proof's tokens with each slot's letter renamed by ``mapping`` (font suffix kept)."""
    out = list(tokens)
    for i in slots:
        symbol, font = split_math(out[i])
        target = mapping.get(symbol, symbol)
        if target != symbol:
            out[i] = math_token(target, font)
    return out


def replace_pair(
    statement_xml: str,
    proof_xml: str,
    level: str,
    rng: random.Random,
    alpha: float | None = DEFAULT_ALPHA,
    protected: Sequence[str] = DEFAULT_PROTECTED,
    rounding: str | None = DEFAULT_ROUNDING,
) -> tuple[list[str], dict[str, str]]:
    """(proof tokens after replacement, mapping) for one pair; ``protected`` counts for ``*_p``
    only, ``alpha`` (the fraction of shared groups kept) and ``rounding`` for ``partial*`` only."""
    check_level(level, alpha, rounding)
    if level == "conservation":
        return linearize_fragment(proof_xml), {}
    pair = analyze_pair(statement_xml, proof_xml)
    mapping = plan_mapping(pair.statement, pair.proof, level, rng, alpha, protected, rounding)
    return apply_mapping(pair.tokens, pair.slots, mapping), mapping


# --- files -------------------------------------------------------------------------------------

SYMBOLS_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("article_id", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("slots", pa.list_(pa.int32())),
        *[(f"{side}_{kind}", pa.string()) for side in ("statement", "proof") for kind in ("candidates", "letters", "constants")],
    ]
)
LEVEL_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("article_id", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("mapping", pa.string()),
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
PAIR_COLUMNS = ["pair_id", "article_id", "statement_xml", "proof_xml", "statement_tokens", "proof_tokens"]


def _parquet(path: str | os.PathLike, columns: Iterable[str]) -> pq.ParquetFile:
    # pre_buffer=False: by default iter_batches keeps every row group it has read until it is done
    file = pq.ParquetFile(path, pre_buffer=False)
    missing = [c for c in columns if c not in file.schema_arrow.names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}")
    return file


def analyze_file(
    pairs_parquet: str | os.PathLike, out_parquet: str | os.PathLike, pair_ids: Collection[str] | None = None
) -> int:
    """Write every pair's :class:`PairSymbols` (only ``pair_ids`` if given); returns the row count.

    The pairs file is read in record batches and the output written batch by batch, so memory
    holds one batch, not the corpus. The proof tokens of the presentation trees must equal the
    linearize stage's ``proof_tokens`` (checked per pair): the replaced tokens of a level are
    then exactly what linearizing the renamed trees would give.
    """
    pairs_file = _parquet(pairs_parquet, PAIR_COLUMNS)
    seen: set[str] = set()
    total = pairs_file.metadata.num_rows if pair_ids is None else len(pair_ids)
    with atomic_path(out_parquet, ".parquet") as tmp, pq.ParquetWriter(tmp, SYMBOLS_SCHEMA) as writer:
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
                        raise ValueError(f"pair {pid!r} passed linearization but its fragment fails now: {exc}") from exc
                    if pair.tokens != rec["proof_tokens"]:
                        at = next((i for i, (a, b) in enumerate(zip(pair.tokens, rec["proof_tokens"])) if a != b),
                                  min(len(pair.tokens), len(rec["proof_tokens"])))
                        raise ValueError(
                            f"pair {pid!r}: the proof's presentation tokens differ from {pairs_parquet}'s proof_tokens "
                            f"at token {at} ({pair.tokens[at:at + 3]} vs {rec['proof_tokens'][at:at + 3]}); "
                            "was the linearize stage run with other code? Rerun it (snakemake -R linearize)"
                        )
                    values = (pid, rec["article_id"], rec["statement_tokens"], rec["proof_tokens"], pair.slots,
                              *pair.statement.encode(), *pair.proof.encode())
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
    sets = [f"{side}_{kind}" for side in ("statement", "proof") for kind in ("candidates", "letters", "constants")]
    unchanged: Counter[str] = Counter({r: 0 for r in UNCHANGED_REASONS})
    groups_hist: Counter[int] = Counter()
    n = n_changed = n_kept = n_shared = n_renamed = 0
    with atomic_path(out_parquet, ".parquet") as tmp, pq.ParquetWriter(tmp, LEVEL_SCHEMA) as writer:
        for batch in symbols_file.iter_batches(batch_size=2048):
            if level == "conservation":  # nothing to compute: pass the tokens through as Arrow data
                table = pa.Table.from_batches([batch]).select(LEVEL_SCHEMA.names[:-1])
                writer.write_table(table.append_column("mapping", pa.array(["{}"] * batch.num_rows, pa.string())))
                n += batch.num_rows
                unchanged["conservation"] += batch.num_rows
                continue
            columns = {name: batch.column(name).to_pylist() for name in ["pair_id", "slots", *sets]}
            proof_tokens = batch.column("proof_tokens")
            take, new_tokens, mappings = list(range(batch.num_rows)), [], []
            for k, pid in enumerate(columns["pair_id"]):
                statement = Symbols.decode(*(columns[s][k] for s in sets[:3]))
                proof = Symbols.decode(*(columns[s][k] for s in sets[3:]))
                n_groups = len(shared_groups(statement, proof, level, protected))
                mapping = plan_mapping(statement, proof, level, pair_rng(seed, level, pid), alpha, protected, rounding)
                renamed = {c: t for c, t in mapping.items() if c != t}
                changed = False
                if renamed and columns["slots"][k]:
                    original = proof_tokens[k].as_py()
                    tokens = apply_mapping(original, columns["slots"][k], renamed)
                    if tokens != original:
                        changed = True
                        take[k] = batch.num_rows + len(new_tokens)
                        new_tokens.append(tokens)
                mappings.append(json.dumps(mapping, ensure_ascii=False, sort_keys=True))
                n += 1
                n_changed += changed
                n_kept += len(mapping) - len(renamed)
                groups_hist[min(n_groups, 3)] += 1
                n_shared += n_groups
                if level.startswith("partial"):
                    n_renamed += renamed_count(n_groups, level, alpha, rounding)
                if not changed:
                    unchanged[unchanged_reason(n_groups, level, alpha, mapping, rounding)] += 1
            # Unchanged rows keep their Arrow token lists; only renamed proofs go through Python.
            both = pa.concat_arrays([proof_tokens, pa.array(new_tokens, proof_tokens.type)])
            table = pa.table(
                {
                    "pair_id": batch.column("pair_id"),
                    "article_id": batch.column("article_id"),
                    "statement_tokens": batch.column("statement_tokens"),
                    "proof_tokens": both.take(pa.array(take, pa.int64())),
                    "mapping": pa.array(mappings, pa.string()),
                },
                schema=LEVEL_SCHEMA,
            )
            writer.write_table(table)
    summary = {
        "level": level,
        "pairs": n,
        "changed": n_changed,
        "unchanged_pairs": n - n_changed,
        "unchanged": dict(unchanged),
        "symbols_kept_no_free_letter": n_kept,
        "pairs_by_shared_groups": None if level == "conservation" else {
            "0": groups_hist[0], "1": groups_hist[1], "2": groups_hist[2], "3+": groups_hist[3]
        },
        "seed": seed,
        "alpha": alpha if level.startswith("partial") else None,
        "rounding": rounding if level.startswith("partial") else None,
        # partial: of all shared groups, how many were chosen for renaming and how many keep their
        # names (the achieved share of kept groups is what alpha asks for, up to rounding)
        "partial_groups": {"shared": n_shared, "renamed": n_renamed, "kept": n_shared - n_renamed}
        if level.startswith("partial") else None,
        "protected": list(protected) if level.endswith("_p") else [],
    }
    write_json(summary, summary_json)
    log.info(
        "%s: %d pairs, %d changed, %d unchanged (%s); %d symbols kept because no letter was left",
        level, n, n_changed, n - n_changed, ", ".join(f"{r} {c}" for r, c in unchanged.items() if c) or "none", n_kept,
    )
    return summary


def select_split(level_parquet: str | os.PathLike, split_parquet: str | os.PathLike, out_parquet: str | os.PathLike) -> None:
    """The rows of one split from a level's file, in the split's order, with its ``part`` column.

    A level does not depend on the split (each pair's randomness is seeded by its id), so the
    three splits share one replacement per level and this join is all that is left to do.
    """
    split = pq.read_table(split_parquet, columns=["pair_id", "article_id", "part"])
    ids = split.column("pair_id").cast(pa.string())
    if pc.count_distinct(ids).as_py() != len(ids):
        counts = pc.value_counts(ids)
        dup = counts.filter(pc.greater(counts.field("counts"), 1))[0]["values"].as_py()
        raise ValueError(f"{split_parquet}: duplicated pair_id, e.g. {dup!r}")
    level = pq.read_table(level_parquet, columns=["pair_id", "statement_tokens", "proof_tokens", "mapping"])
    where = pc.index_in(ids, value_set=level.column("pair_id"))
    if where.null_count:
        absent = ids.filter(pc.is_null(where))
        raise ValueError(f"{len(absent)} pair id(s) of {split_parquet} are not in {level_parquet}, e.g. {absent[0].as_py()!r}")
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
    wanted = set(pq.read_table(split_parquet, columns=["pair_id"]).column("pair_id").to_pylist())
    Path(out_parquet).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(out_parquet).parent, prefix=".replace.") as tmp:
        analyze_file(pairs_parquet, Path(tmp) / "symbols.parquet", pair_ids=wanted)
        summary = replace_level_file(
            Path(tmp) / "symbols.parquet", level, Path(tmp) / "level.parquet",
            summary_json or Path(tmp) / "summary.json", seed=seed, alpha=alpha, protected=protected,
            rounding=rounding,
        )
        select_split(Path(tmp) / "level.parquet", split_parquet, out_parquet)
    return summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pairs", help="filtered pairs (results/data/pairs.parquet)")
    parser.add_argument("split", nargs="?", default=None,
                        help="split assignment (results/splits/SPLIT.parquet); without it every pair is replaced "
                             "and the output has no part column (results/replaced/LEVEL.parquet)")
    parser.add_argument("--level", required=True, choices=ALL_LEVELS, help="replacement level")
    parser.add_argument("--out", required=True, help="output Parquet (results/replaced/SPLIT/LEVEL.parquet)")
    parser.add_argument("--summary", default=None, help="also write the level's summary JSON here")
    config.add_option(parser, "--seed", key="seed", type=int, help="global seed")
    config.add_option(parser, "--alpha", key="replace.partial_alpha", type=float,
                      help="partial levels: fraction of the shared symbol groups that keep their names")
    config.add_option(parser, "--rounding", key="replace.partial_rounding", choices=ROUNDINGS,
                      help="partial levels: how (1 - alpha) x shared groups is rounded; "
                           "half_even is the reference's round()")
    config.add_option(parser, "--protected", key="replace.protected", nargs="*", help="symbols kept by the *_p levels")
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    if args.split is not None:
        replace_split_file(args.pairs, args.split, args.level, args.out, seed=args.seed, alpha=args.alpha,
                           protected=args.protected, summary_json=args.summary, rounding=args.rounding)
        return 0
    out = Path(args.out)
    with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None, prefix=".replace.") as tmp:
        analyze_file(args.pairs, Path(tmp) / "symbols.parquet")
        replace_level_file(Path(tmp) / "symbols.parquet", args.level, out, args.summary or Path(tmp) / "summary.json",
                           seed=args.seed, alpha=args.alpha, protected=args.protected, rounding=args.rounding)
    return 0
