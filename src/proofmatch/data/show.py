"""Pretty-print any cached Parquet artifact: pairs, filter reasons, replacement mappings, splits,
symbol slots, evaluations.

The artifact kind is recognised from its columns (see :func:`detect_kind`), so one command serves
every stage: ``proofmatch show results/data/filter_audit.parquet --reason omitted`` lists the
dropped omitted proofs, ``proofmatch show results/replaced/mixed/full.parquet --pair P`` shows
a proof after symbol replacement with its mapping. Math tokens are printed between ``$ … $``
(with the ``$`` prefix of each token removed), and in colour on a terminal, so text and math
read apart; a title is printed between « ». Exits 1 when no row matches (like grep).

Any path gets an answer, never a traceback: a JSON file (the reports and summaries beside the
Parquets) is printed indented; a missing path, a folder, another format, a Parquet that cannot
be read or whose digest no longer matches is refused with a message naming it (exit 2, as
:class:`ShowError`); a Parquet of columns no stage writes is printed as a table, cells cut to
:data:`MAX_CELL` characters, and says so. A filter value that matches nothing lists the values
the file holds (``--reason``: every reason, with its count).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from proofmatch.artifacts import CorruptArtifact, read_parquet
from proofmatch.data.views import counts, is_math

KINDS = ("audit", "replaced", "symbols", "evaluation", "pairs", "extract", "split", "table")
MAX_CELL = 60  # characters of a cell of a plain table
TOP_SHOWN = 5  # proofs of an evaluation's top-k list printed per statement
_NO_SPACE_BEFORE = set(".,;:!?)]}")
_NO_SPACE_AFTER = set("([{")
_MATH_ON, _MATH_OFF = "\x1b[36m", "\x1b[0m"


def detect_kind(columns: Iterable[str]) -> str:
    """The artifact kind from its column names (first rule that applies)."""
    cols = set(columns)
    if {"pair_id", "reason"} <= cols:
        return "audit"
    if "mapping" in cols:
        return "replaced"
    if {"slots", "statement_candidates"} <= cols:
        return "symbols"
    if {"pair_id", "gold_rank", "topk_ids"} <= cols:
        return "evaluation"
    if {"statement_tokens", "proof_tokens"} <= cols:
        return "pairs"
    if {"statement_xml", "proof_xml"} <= cols:
        return "extract"
    if cols == {"pair_id", "article_id", "part"}:
        return "split"
    return "table"


def _join_text(words: list[str]) -> str:
    out = ""
    for w in words:
        glued = (
            len(out) > 1 and out[-1] == "." and out[-2].isdigit() and w[:1].isdigit()
        )  # "3 . 2" -> "3.2"
        if out and not (w in _NO_SPACE_BEFORE or out[-1] in _NO_SPACE_AFTER or glued):
            out += " "
        out += w
    return out


def _format_run(tokens: Sequence[str], color: bool) -> str:
    """Alternate text runs (tidied punctuation) and math runs (``$…$``, tokens space-separated)."""
    out = ""
    start = 0
    for i in range(1, len(tokens) + 1):
        if i < len(tokens) and is_math(tokens[i]) == is_math(tokens[start]):
            continue
        run = tokens[start:i]
        if is_math(run[0]):
            span = "$" + " ".join(t[1:] for t in run) + "$"
            piece = f"{_MATH_ON}{span}{_MATH_OFF}" if color else span
        else:
            piece = _join_text(run)
        if out and not (piece[0] in _NO_SPACE_BEFORE or out[-1] in _NO_SPACE_AFTER):
            out += " "
        out += piece
        start = i
    return out


def format_tokens(tokens: Sequence[str] | None, title: int = 0, color: bool = False) -> str:
    """Readable text of a token list: math runs as ``$x + y$``, the first ``title`` tokens in « »."""
    toks = [] if tokens is None else [str(t) for t in tokens]
    head, body = toks[:title], toks[title:]
    parts = ([f"«{_format_run(head, color)}»"] if head else []) + (
        [_format_run(body, color)] if body else []
    )
    return " ".join(parts)


def _count_label(tokens: Sequence[str] | None) -> str:
    n_text, n_math = counts([] if tokens is None else tokens)
    return f"{n_text} text + {n_math} math"


def format_mapping(mapping: Any) -> str:
    """A replacement mapping (JSON object or list of pairs) as ``a→q, b→r``."""
    if mapping is None or (isinstance(mapping, float) and pd.isna(mapping)):
        return "(none)"
    obj = json.loads(mapping) if isinstance(mapping, str) else mapping
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, list) and all(isinstance(x, (list, tuple)) and len(x) == 2 for x in obj):
        items = [tuple(x) for x in obj]
    else:
        return json.dumps(obj, ensure_ascii=False)
    return ", ".join(f"{a}→{b}" for a, b in items) if items else "(identity)"


def _side(row: pd.Series, side: str, show_tokens: bool, color: bool) -> list[str]:
    toks = row.get(f"{side}_tokens")
    toks = None if toks is None else list(toks)
    title = row.get(f"{side}_title_tokens", 0)
    title = 0 if title is None or pd.isna(title) else int(title)
    lines = [f"  {side} [{_count_label(toks)}]: {format_tokens(toks, title, color)}"]
    if show_tokens:
        lines.append(f"  {side} tokens: {toks}")
    return lines


def _header(row: pd.Series, extra: Sequence[str]) -> str:
    bits = [f"{c}={row[c]}" for c in extra if c in row.index and row[c] is not None]
    name = row.get("pair_id")
    if name is None and "statement_id" in row.index:  # extraction shards have no pair_id yet
        name = f"{row.get('article_id')}/{row['statement_id']}"
    return f"== {name}" + (f"  ({', '.join(bits)})" if bits else "")


def format_rows(df: pd.DataFrame, kind: str, show_tokens: bool = False, color: bool = False) -> str:
    """The text of the (already selected) rows of one artifact kind."""
    out: list[str] = []
    if kind == "audit":
        out.append(
            "reasons: "
            + ", ".join(f"{r}={n}" for r, n in df["reason"].value_counts().sort_index().items())
        )
    if kind == "split":
        sizes = df.groupby("part").agg(
            pairs=("pair_id", "size"), articles=("article_id", "nunique")
        )
        out.append(sizes.to_string())
        return "\n".join(out)
    if kind == "table":
        return plain_table(df)
    if kind == "evaluation":
        return "\n".join(_evaluation_row(row) for _, row in df.iterrows())
    for _, row in df.iterrows():
        if kind == "audit":
            out.append(
                _header(row, ["article_id"]) + f"  [{row['reason']}] {row.get('detail') or ''}"
            )
        elif kind == "replaced":
            out.append(_header(row, ["article_id", "part"]))
            out.append(f"  mapping: {format_mapping(row['mapping'])}")
        elif kind == "symbols":
            out.append(_header(row, ["article_id"]))
            slots = row.get("slots")
            out.append(f"  slots: {0 if slots is None else len(slots)} replaceable symbol places")
            for side in ("statement", "proof"):
                out.append(
                    f"  {side}: candidates {row.get(f'{side}_candidates') or '(none)'}; "
                    f"letters {row.get(f'{side}_letters') or '(none)'}; "
                    f"constants {row.get(f'{side}_constants') or '(none)'}"
                )
        else:
            out.append(_header(row, ["article_id", "kind", "position"]))
        if kind == "extract":
            out.append(f"  statement_xml: {str(row['statement_xml'])[:600]}")
            out.append(f"  proof_xml: {str(row['proof_xml'])[:600]}")
            continue
        for side in ("statement", "proof"):
            if f"{side}_tokens" in row.index:
                out.extend(_side(row, side, show_tokens, color))
    return "\n".join(out)


def _cell(value: Any, width: int = MAX_CELL) -> str:
    """One cell as at most ``width`` characters: a list as its length and first items."""
    if hasattr(value, "__len__") and not isinstance(value, (str, bytes, dict)):
        items = list(value)
        head = ", ".join(str(x) for x in items[:3])
        text = f"[{len(items)}: {head}{', …' if len(items) > 3 else ''}]"
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def plain_table(df: pd.DataFrame) -> str:
    """A table of any columns, each cell cut to :data:`MAX_CELL` characters (lists summarised)."""
    return df.map(_cell).to_string(index=False)


def _evaluation_row(row: pd.Series) -> str:
    """One statement of an evaluation: its gold proof's rank, its top-1 and global prediction,
    and the first :data:`TOP_SHOWN` proofs of its top-k list with their scores."""
    rank = int(row["gold_rank"])
    lines = [
        f"== {row['pair_id']}  gold rank {rank}"
        + (" (top 1)" if rank == 1 else "")
        + f"; top 1 {row.get('top1')}"
        + (f"; global {row['global_pred']}" if row.get("global_pred") else "")
    ]
    ids = list(row["topk_ids"]) if row.get("topk_ids") is not None else []
    scores = list(row["topk_scores"]) if row.get("topk_scores") is not None else []
    for i, pid in enumerate(ids[:TOP_SHOWN]):
        score = f"{float(scores[i]):.3f}" if i < len(scores) else ""
        gold = "  (its proof)" if pid == row["pair_id"] else ""
        lines.append(f"  {i + 1:>2}. {score:>8}  {pid}{gold}")
    if len(ids) > TOP_SHOWN:
        lines.append(f"  … {len(ids) - TOP_SHOWN} more in its top {len(ids)}")
    return "\n".join(lines)


def _evaluation_summary(df: pd.DataFrame) -> str:
    ranks = df["gold_rank"].astype(float)
    return (
        f"statements {len(df)}: MRR {100 * (1.0 / ranks).mean():.2f} %, "
        f"top-1 accuracy {100 * (ranks == 1).mean():.2f} %, median gold rank {ranks.median():g}"
    )


class ShowError(ValueError):
    """A path or filter ``show`` cannot answer: the message says why and what to give instead."""


def select(
    df: pd.DataFrame,
    article: str | None = None,
    reason: str | None = None,
    pair: str | None = None,
    limit: int | None = 10,
) -> pd.DataFrame:
    """Rows matching every given filter, at most ``limit`` (None: all)."""
    mask = pd.Series(True, index=df.index)
    for col, value in (("article_id", article), ("reason", reason), ("pair_id", pair)):
        if value is None:
            continue
        if col not in df.columns:
            raise ShowError(
                f"this artifact has no {col!r} column to filter on (columns: {list(df.columns)})"
            )
        hit = df[col].astype(str) == str(value)
        if col == "reason" and not hit.any():
            held = df["reason"].astype(str).value_counts().sort_index()
            raise ShowError(
                f"no row has reason {value!r}; the reasons in this file: "
                + ", ".join(f"{r} ({n})" for r, n in held.items())
            )
        mask &= hit
    out = df[mask]
    return out if limit is None else out.head(limit)


def show(
    path: str,
    article: str | None = None,
    reason: str | None = None,
    pair: str | None = None,
    limit: int | None = 10,
    show_tokens: bool = False,
    color: bool = False,
) -> tuple[str, int]:
    """``(text, number of matching rows shown)`` for one Parquet artifact (a JSON file: indented);
    :class:`ShowError` for a path it cannot read."""
    if path.endswith(".json") and os.path.isfile(path):
        return _show_json(path), 1
    df = _read(path)
    kind = detect_kind(df.columns)
    rows = select(df, article, reason, pair, None if kind == "split" else limit)
    head = f"{path}: {kind}, {len(df)} rows" + (f", {len(rows)} shown" if kind != "split" else "")
    if kind == "table":
        head += " (a kind with no view of its own: printed as a table, long cells cut)"
    if kind == "evaluation":
        head += "\n" + _evaluation_summary(df)
    if rows.empty:
        return head + "\nno row matches", 0
    return head + "\n" + format_rows(rows, kind, show_tokens, color), len(rows)


def _read(path: str) -> pd.DataFrame:
    """The Parquet at ``path``, or :class:`ShowError` saying why not."""
    import pyarrow as pa

    if not os.path.exists(path):
        raise ShowError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ShowError(f"{path} is a folder; give one of its .parquet or .json files")
    if not path.endswith(".parquet"):
        raise ShowError(
            f"{path}: show reads Parquet artifacts (.parquet) and prints JSON files (.json)"
        )
    try:
        return read_parquet(path)
    except CorruptArtifact as err:
        raise ShowError(str(err)) from None
    except (pa.ArrowException, OSError) as err:
        raise ShowError(f"{path} is not a readable Parquet file ({err})") from None


def _show_json(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ShowError(f"{path} is not valid JSON ({err})") from None
    return f"{path}: JSON\n" + json.dumps(data, indent=2, ensure_ascii=False)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "artifact",
        help="a cached Parquet (pairs, audit, replaced, symbols, split, evaluation, ...) or a "
        "JSON report",
    )
    parser.add_argument("--article", help="only this article_id")
    parser.add_argument(
        "--reason",
        help="only this filter reason (audit Parquet; one that matches nothing lists those held)",
    )
    parser.add_argument("--pair", help="only this pair_id")
    parser.add_argument("--limit", type=int, default=10, help="rows to print (0: all)")
    parser.add_argument("--tokens", action="store_true", help="also print the raw token lists")


def main(args: argparse.Namespace) -> int:
    try:
        text, n = show(
            args.artifact,
            args.article,
            args.reason,
            args.pair,
            args.limit or None,
            args.tokens,
            color=sys.stdout.isatty(),
        )
    except ShowError as err:
        print(f"proofmatch show: {err}", file=sys.stderr)
        return 2
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # piped into `head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0 if n else 1
