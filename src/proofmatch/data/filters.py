"""Pair filters of the paper's Appendix A, with an audit row for every dropped pair.

The paper has two filters. "Articles that do not contain such pairs of tags are discarded, as well
as articles that are not written in English (representing 143 articles in French, 11 in Russian,
5 in German, 2 in Portuguese and 1 in Ukrainian), as identified by the polyglot Python package."
Then "we filter out pairs for which either the statement or the proof is too short", with examples
of what that removes: title-only texts ("5.26 Lemma."), omitted or easy proofs ("omitted",
"This is obvious and will be left to the readers") and proofs that only refer elsewhere ("See
Appendix A", "See [BK3, Theorem 4.8]."). Its reference code drops statements or proofs of fewer
than 20 or more than 500 tokens.

Each pair gets the first matching reason of :data:`REASONS`, checked in this order:

``linearize_error``
    the linearizer recorded an error for the pair (its tokens are unusable).
``duplicate_pair_id``
    a ``pair_id`` seen before in the input (shards in the given order, rows in file order);
    the first occurrence is judged normally, later ones are dropped.
``language``
    the pair's *article* is not in ``language``: polyglot (CLD2) detects, reliably, another
    language on the text of all the article's pairs together (statements and proofs, titles
    included, math removed), and every pair of the article is dropped. Articles with fewer than
    :data:`MIN_LANGUAGE_WORDS` words, unreliable or unknown detections and detector exceptions are
    *kept* and counted (``language_short``, ``language_unreliable``, ``language_undetected``): an
    article is dropped only on positive evidence. The report counts detected and dropped articles
    per language, as the paper lists them. Control characters are removed first (CLD2 rejects them
    as invalid UTF-8).
``too_short`` / ``too_long``
    the statement or the proof has fewer than ``min_tokens`` or more than ``max_tokens`` tokens,
    counted as the reference code counts them (:func:`proofmatch.data.stats.paper_counts`):
    whitespace-separated words of the text plus one token per math symbol, titles included.

The paper's examples label the ``too_short`` pairs in the audit's ``example`` column (the report
counts them under ``too_short_examples``); they never drop a pair of their own, so no statement or
proof of ``min_tokens`` or more tokens is dropped by a pattern:

``title_only``
    the statement or the proof has no word or math token after its title ("5.26 Lemma.", a bare
    "Proof."); ``detail`` names the side.
``omitted`` / ``reference_only``
    the (too short) proof matches :data:`OMITTED` ("Omitted.", "Trivial.", "left to the readers") or
    :data:`REFERENCE` ("See Appendix A", "This follows immediately from Proposition 4.4 (ii).",
    "Similar to proof of Lemma 6.1", "The proof will appear elsewhere.", "Will be given in section 5.").
``other``
    anything else, such as the self-contained short proof "Take Q' = ph_i - p_i." or a short statement.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm.auto import tqdm

from proofmatch.logs import setup_logging
from proofmatch.data.stats import body_counts, paper_counts, token_counts
from proofmatch.artifacts import atomic_path, read_json, write_json, write_parquet
from proofmatch.data.views import view

log = logging.getLogger(__name__)

REASONS = ("linearize_error", "duplicate_pair_id", "language", "too_short", "too_long")
EXAMPLES = ("title_only", "omitted", "reference_only", "other")
REQUIRED_COLUMNS = (
    "article_id", "statement_id", "kind", "position", "statement_xml", "proof_xml", "pair_id",
    "statement_tokens", "proof_tokens", "statement_title_tokens", "proof_title_tokens",
)
AUDIT_COLUMNS = ("pair_id", "article_id", "reason", "example", "detail", "statement_length", "proof_length",
                 "statement_tokens", "proof_tokens", "statement_title_tokens", "proof_title_tokens")
MIN_LANGUAGE_WORDS = 5

OMITTED = re.compile(
    r"\bomit(s|ted)?\b|\bleft (to|for) the readers?\b|\bleave (it|this|them|that|the (proof|details?))( as an? \w+ exercise)?"
    r" (to|for) the readers?\b|\bas an? (easy |simple )?exercise\b|^\W*(an? )?(easy |simple )?exercise\W*$"
    r"|\btrivial(ly|ity)?\b|\bstraightforward(ly)?\b|\bwell ?- ?known\b|\bevident(ly)?\b|\bobvious(ly)?\b"
    r"|^\W*(this is |it is |the proof is )?(clear|easy|standard|routine|elementary)\W*$"
)
REFERENCE = re.compile(
    r"^\W*see\b|\bcf\b|\bfollows? (immediately |directly |easily |readily |at once )?(from|by)\b"
    r"|\b(immediate|direct|easy|simple) (consequence|corollary) of\b|\bsimilar(ly)?\b|\banalogous(ly)?\b"
    r"|\bsame (as|way as)\b|^\W*as (in|for)\b|\bappendix\b|\belsewhere\b"
    r"|\bwill be (given|proved|proven|shown|presented|discussed|established)\b"
    r"|\b(proved|proven|shown|given|found|contained|done) in\b|\bsee (section|above|below|the)\b|\["
    r"|\b(lemma|theorem|proposition|corollary|section|remark|claim|chapter|equation|eq|step|part) ?\(?\d"
)
_CONTROL = {c: " " for c in range(0x20) if chr(c) not in "\t\n\r"} | {0x7F: " "}
_SURROGATE = re.compile("[\ud800-\udfff]")  # Unicode category Cs, which UTF-8 cannot encode
SORT_KEYS = ("article_id", "position", "pair_id")  # the order of the kept pairs
MERGE_READ_ROWS = 4096  # kept pairs of all shards buffered at once while merging them (one row group each)
MERGE_WRITE_ROWS = 1024  # pairs per row group of the merged output


def _silence_polyglot() -> None:
    """polyglot warns on every unreliable detection; those are counted in the report instead."""
    logging.getLogger("polyglot").setLevel(logging.ERROR)


def _tokens(value: Any) -> list[str]:
    return [] if value is None else [str(t) for t in value]


def _clean_for_detection(text: str) -> str:
    return _SURROGATE.sub(" ", text.translate(_CONTROL))


def detect_language(text: str) -> tuple[str, str | None, float]:
    """``(status, code, confidence)``; status is ``reliable``, ``unreliable`` or ``undetected``.

    ``undetected`` means the detector raised (code None). A reliable "un" (unknown) counts as
    unreliable. Never raises itself, because one odd article must not stop a corpus-wide run;
    the caller counts the case.
    """
    from polyglot.detect import Detector  # imported lazily: pulls in ICU

    _silence_polyglot()
    try:
        d = Detector(_clean_for_detection(text), quiet=True)
    except Exception as exc:  # noqa: BLE001 - CLD2/ICU raise assorted types; counted by the caller
        log.debug("language detection failed: %s", exc)
        return "undetected", None, 0.0
    code = d.language.code
    reliable = d.reliable and code != "un"
    return ("reliable" if reliable else "unreliable"), code, float(d.language.confidence)


def _text(tokens: Sequence[str]) -> str:
    """Lower-cased text view joined by single spaces (the form the pattern rules match)."""
    return " ".join(view(tokens, "text")).lower()


def match_omitted(body_tokens: Sequence[str]) -> str | None:
    """The matched phrase when a (short) proof body says the proof is omitted or easy."""
    m = OMITTED.search(_text(body_tokens))
    return m.group(0).strip() if m else None


def match_reference(body_tokens: Sequence[str]) -> str | None:
    """The matched phrase when a (short) proof body only refers elsewhere."""
    m = REFERENCE.search(_text(body_tokens))
    return m.group(0).strip() if m else None


def article_languages(df: pd.DataFrame, rows: np.ndarray,
                      language: str) -> tuple[dict[str, tuple[str, float]], dict[str, Any]]:
    """Detect each article's language on the text of its ``rows`` together.

    Returns ``{article_id: (code, confidence)}`` for the articles reliably detected in another language, and
    the counts (per article): ``articles``, ``languages`` (reliable detections per code),
    ``short``, ``unreliable``, ``undetected``, ``dropped_articles`` (per code); :func:`classify`
    adds ``dropped_pairs`` (per code).
    """
    stats: dict[str, Any] = {"articles": 0, "languages": Counter(), "short": 0, "unreliable": 0,
                             "undetected": 0, "dropped_articles": Counter()}
    if len(rows) == 0:
        return {}, stats
    sub = df.iloc[rows]
    words = (token_counts(sub["statement_tokens"])["words"] + token_counts(sub["proof_tokens"])["words"]).to_numpy()
    texts = [" ".join(view(_tokens(s), "text") + view(_tokens(p), "text"))
             for s, p in zip(sub["statement_tokens"].to_numpy(), sub["proof_tokens"].to_numpy())]
    grouped = pd.DataFrame({"article": sub["article_id"].astype(str).to_numpy(), "words": words, "text": texts})
    foreign: dict[str, tuple[str, float]] = {}
    for article, g in tqdm(grouped.groupby("article", sort=True), desc="language", unit="article", disable=None,
                           leave=False):
        stats["articles"] += 1
        if int(g["words"].sum()) < MIN_LANGUAGE_WORDS:
            stats["short"] += 1
            continue
        status, code, conf = detect_language(" ".join(g["text"]))
        if status != "reliable":
            stats[status] += 1
            continue
        stats["languages"][code] += 1
        if code != language:
            foreign[article] = (str(code), conf)
            stats["dropped_articles"][code] += 1
    return foreign, stats


def _example(proof_tokens: Sequence[str], proof_title: int, proof_short: bool, st_empty: bool,
             pr_empty: bool) -> tuple[str, str | None]:
    """The paper's example that a too-short pair is, with the side or the matched phrase."""
    if st_empty or pr_empty:
        return "title_only", "statement+proof" if st_empty and pr_empty else ("statement" if st_empty else "proof")
    if proof_short:
        body = list(proof_tokens)[proof_title:]
        for name, match in (("omitted", match_omitted), ("reference_only", match_reference)):
            hit = match(body)
            if hit is not None:
                return name, repr(hit)
    return "other", None


def classify(df: pd.DataFrame, language: str | None = "en", min_tokens: int = 20,
             max_tokens: int = 500, duplicate: np.ndarray | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Give every row its drop reason (None = kept), example, detail and token lengths.

    Returns the frame ``reason, example, detail, statement_length, proof_length`` aligned with
    ``df`` (lengths as :func:`proofmatch.data.stats.paper_counts`, missing for rows whose tokens are
    unusable) and the language statistics of :func:`article_languages`. ``df`` must hold every
    pair of each of its articles: the language decision needs them all. ``duplicate`` (aligned
    with ``df``) marks the rows whose ``pair_id`` came earlier in the whole input, when ``df`` is
    a part of it; by default a row is a duplicate of an earlier row of ``df``.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"linearized shard lacks columns {missing}")
    if df["pair_id"].isna().any():
        raise ValueError(f"{int(df['pair_id'].isna().sum())} rows have no pair_id")
    df = df.reset_index(drop=True)
    n = len(df)
    reason = np.full(n, None, dtype=object)
    example = np.full(n, None, dtype=object)
    detail = np.full(n, None, dtype=object)

    def assign(mask: np.ndarray, name: str, details: np.ndarray | str | None = None) -> None:
        """Give ``name`` to the still-pending rows of ``mask`` (first match wins)."""
        take = mask & pd.isna(reason)
        reason[take] = name
        detail[take] = details[take] if isinstance(details, np.ndarray) else details

    if "linearize_error" in df.columns:
        err = df["linearize_error"].astype(object)
        has_err = (err.notna() & (err.astype(str).str.strip() != "")).to_numpy()
        assign(has_err, "linearize_error", err.astype(str).str.slice(0, 300).to_numpy())
    if duplicate is None:
        dup = df["pair_id"].astype(str).duplicated(keep="first").to_numpy()
    elif len(duplicate) != n:
        raise ValueError(f"duplicate marks {len(duplicate)} rows, the frame has {n}")
    else:
        dup = np.asarray(duplicate, dtype=bool)
    assign(dup, "duplicate_pair_id", "pair_id already seen earlier in the input")

    # Lengths and title checks are only valid on rows whose tokens exist.
    usable = np.flatnonzero(pd.isna(reason))
    st_len = np.full(n, -1, dtype=np.int64)
    pr_len = np.full(n, -1, dtype=np.int64)
    st_empty = np.zeros(n, dtype=bool)
    pr_empty = np.zeros(n, dtype=bool)
    if len(usable):
        sub = df.iloc[usable]
        st, pr = paper_counts(sub, "statement"), paper_counts(sub, "proof")
        st_len[usable] = (st["text"] + st["math"]).to_numpy()
        pr_len[usable] = (pr["text"] + pr["math"]).to_numpy()
        st_body, pr_body = body_counts(sub, "statement"), body_counts(sub, "proof")
        st_empty[usable] = (st_body["words"] + st_body["math"]).to_numpy() == 0
        pr_empty[usable] = (pr_body["words"] + pr_body["math"]).to_numpy() == 0

    lang: dict[str, Any] = {"articles": 0, "languages": Counter(), "short": 0, "unreliable": 0, "undetected": 0,
                            "dropped_articles": Counter(), "dropped_pairs": Counter()}
    if language is not None:
        foreign, lang = article_languages(df, usable, language)
        articles = df["article_id"].astype(str)
        assign(articles.isin(list(foreign)).to_numpy(), "language",
               articles.map(lambda a: f"article in {foreign[a][0]} ({foreign[a][1]:.0f}%)" if a in foreign else None)
               .to_numpy(dtype=object))
        lang["dropped_pairs"] = Counter(foreign[a][0] for a in articles[reason == "language"])

    def length_detail(st_bad: np.ndarray, pr_bad: np.ndarray, op: str, bound: int) -> np.ndarray:
        return np.array([
            "; ".join(([f"statement {a} {op} {bound}"] if sb else []) + ([f"proof {b} {op} {bound}"] if pb else []))
            for a, b, sb, pb in zip(st_len, pr_len, st_bad, pr_bad)
        ], dtype=object)

    checked = np.zeros(n, dtype=bool)
    checked[usable] = True
    short_st, short_pr = checked & (st_len < min_tokens), checked & (pr_len < min_tokens)
    assign(short_st | short_pr, "too_short", length_detail(short_st, short_pr, "<", min_tokens))
    long_st, long_pr = checked & (st_len > max_tokens), checked & (pr_len > max_tokens)
    assign(long_st | long_pr, "too_long", length_detail(long_st, long_pr, ">", max_tokens))

    p_tok = df["proof_tokens"].to_numpy()
    p_title = df["proof_title_tokens"].fillna(0).astype(int).to_numpy()
    for i in np.flatnonzero(reason == "too_short"):
        name, what = _example(_tokens(p_tok[i]), p_title[i], bool(short_pr[i]), bool(st_empty[i]), bool(pr_empty[i]))
        example[i] = name
        if what is not None:
            detail[i] = f"{detail[i]}; {name}: {what}"

    lengths = {k: pd.array(np.where(v >= 0, v, None), dtype="Int64") for k, v in
               (("statement_length", st_len), ("proof_length", pr_len))}
    verdict = pd.DataFrame({"reason": pd.Series(reason, dtype=object), "example": pd.Series(example, dtype=object),
                            "detail": pd.Series(detail, dtype=object), **lengths})
    return verdict, lang


# ---------------------------------------------------------------- extraction reports

_REPORT_KEYS = ("files_seen", "files_ok", "files_skipped", "theorem_like", "pairs", "max_file_mb", "max_depth")


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
        # pre_buffer=False: by default the reader keeps every row group it has read until it is done
        self._batches = pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=batch_rows)
        self._buffer = pa.Table.from_batches([], schema=pq.read_schema(path))

    def take(self, n: int) -> pa.Table:
        while self._buffer.num_rows < n:
            self._buffer = pa.concat_tables([self._buffer, pa.Table.from_batches([next(self._batches)])])
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
        k = pq.read_table(path, columns=list(SORT_KEYS))
        keys.append(k.append_column("part", pa.array(np.full(k.num_rows, i, dtype=np.int32))))
    all_keys = pa.concat_tables(keys)
    order = pc.sort_indices(all_keys, sort_keys=[(k, "ascending") for k in SORT_KEYS])
    part_of_row = all_keys["part"].take(order).to_numpy()
    readers = [_PartReader(path, read_rows) for path in parts]
    schema = pq.read_schema(parts[0])
    with atomic_path(out, ".parquet") as tmp, pq.ParquetWriter(tmp, schema) as writer:
        if len(part_of_row) == 0:
            writer.write_table(schema.empty_table())
        for start in range(0, len(part_of_row), MERGE_WRITE_ROWS):
            chunk = part_of_row[start:start + MERGE_WRITE_ROWS]
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

    def __init__(self, folder: Path, read_rows: int) -> None:
        self.folder, self.read_rows = folder, read_rows
        self.parts: list[Path] = []
        self.audits: list[pa.Table] = []
        self.lang: dict[str, Any] = {}
        self.articles_kept: set[str] = set()
        self.kept = 0

    def judge(self, table: pa.Table, rows: np.ndarray, duplicate: np.ndarray, language: str | None,
              min_tokens: int, max_tokens: int) -> None:
        """Classify one part (every pair of its articles); ``rows`` are its rows' input row numbers."""
        df = table.to_pandas()
        verdict, lang = classify(df, language, min_tokens, max_tokens, duplicate)
        _add_language_stats(self.lang, lang)
        drop = verdict["reason"].notna().to_numpy()
        audit = pd.concat([df.loc[drop, ["pair_id", "article_id"]], verdict.loc[drop],
                           df.loc[drop, list(AUDIT_COLUMNS[7:])]], axis=1)[list(AUDIT_COLUMNS)]
        self.audits.append(pa.Table.from_pandas(audit.assign(_row=rows[drop]), preserve_index=False))
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
        table = pa.concat_tables(self.audits, promote_options="permissive").replace_schema_metadata(None)
        table = table.take(pc.sort_indices(table, sort_keys=[("_row", "ascending")])).drop_columns(["_row"])
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
        keys = pq.read_table(path, columns=["pair_id", "article_id"])
        sizes.append(keys.num_rows)
        ids.append(keys["pair_id"].to_pandas().astype(str))
        shards_of.update(set(keys["article_id"].to_pandas().astype(str)))
    duplicate = (pd.concat(ids, ignore_index=True).duplicated(keep="first").to_numpy() if ids
                 else np.zeros(0, dtype=bool))
    return sizes, duplicate, {a for a, n in shards_of.items() if n > 1}, len(shards_of)


def filter_pairs(shard_parquets: list[str], report_jsons: list[str], out_pairs: str | os.PathLike,
                 out_audit: str | os.PathLike, out_report: str | os.PathLike, language: str | None = "en",
                 min_tokens: int = 20, max_tokens: int = 500) -> dict[str, Any]:
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
    starts = np.cumsum([0, *sizes])
    read_rows = max(1, MERGE_READ_ROWS // max(1, len(shard_parquets)))
    Path(out_pairs).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{Path(out_pairs).name}.", dir=Path(out_pairs).parent) as tmp_dir:
        judged = _Judged(Path(tmp_dir), read_rows)
        deferred: list[tuple[pa.Table, np.ndarray]] = []
        for i, path in enumerate(tqdm(shard_parquets, desc="filter", unit="shard", disable=None)):
            table = pq.read_table(path)
            if table.num_rows != sizes[i]:
                raise ValueError(f"{path} changed while it was read ({sizes[i]} then {table.num_rows} rows)")
            rows = np.arange(starts[i], starts[i + 1])
            if split_articles:
                split = table["article_id"].to_pandas().astype(str).isin(split_articles).to_numpy()
                deferred.append((table.filter(pa.array(split)), rows[split]))
                table, rows = table.filter(pa.array(~split)), rows[~split]
            judged.judge(table, rows, duplicate[rows], language, min_tokens, max_tokens)
            log.info("%s: %d pairs", path, sizes[i])
            del table
        if deferred:
            rows = np.concatenate([r for _, r in deferred])
            judged.judge(pa.concat_tables([t for t, _ in deferred]), rows, duplicate[rows], language, min_tokens,
                         max_tokens)
            log.info("%d pairs of %d articles found in several shards judged together", len(rows),
                     len(split_articles))
            del deferred
        if judged.parts:
            _merge_parts(judged.parts, out_pairs, read_rows)
        else:
            write_parquet(pd.DataFrame(columns=list(REQUIRED_COLUMNS)), out_pairs)
    lang = judged.lang or {"articles": 0, "languages": Counter(), "short": 0, "unreliable": 0, "undetected": 0,
                           "dropped_articles": Counter(), "dropped_pairs": Counter()}
    n_kept = judged.kept
    audit = judged.audit()
    dropped = {r: int((audit["reason"] == r).sum()) for r in REASONS}
    examples = {e: int((audit["example"] == e).sum()) for e in EXAMPLES}

    extraction = read_extraction_reports(report_jsons)
    check = {
        "kept_plus_dropped_equals_input": n_kept + sum(dropped.values()) == n_input,
        "too_short_examples_add_up": sum(examples.values()) == dropped["too_short"],
        "language_articles_add_up": lang["articles"] == sum(lang["languages"].values()) + lang["short"]
        + lang["unreliable"] + lang["undetected"],
        "extraction_pairs_equal_input": None if extraction is None else extraction["pairs"] == n_input,
    }
    failed = [k for k, v in check.items() if v is False and k != "extraction_pairs_equal_input"]
    if failed:
        raise AssertionError(f"filter accounting is off ({failed}): {n_kept} kept, dropped {dropped}, "
                             f"examples {examples}, {n_input} input")
    if check["extraction_pairs_equal_input"] is False:
        raise ValueError(f"the extraction reports count {extraction['pairs']} pairs but the linearized shards hold "
                         f"{n_input}: a shard is stale or missing (rerun linearize)")
    report = {
        "input_pairs": n_input,
        "kept": n_kept,
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
        "params": {"language": language, "language_unit": "article", "min_tokens": min_tokens,
                   "max_tokens": max_tokens, "min_language_words": MIN_LANGUAGE_WORDS,
                   "length_unit": "whitespace tokens of text + math symbols, titles included (reference code)",
                   "order": list(REASONS), "too_short_examples": list(EXAMPLES)},
        "extraction": extraction,
        "check": check,
    }
    write_parquet(audit, out_audit)
    write_json(report, out_report)
    log.info("kept %d of %d pairs; dropped %s; too short: %s; non-English articles: %s", n_kept, n_input,
             json.dumps(dropped), json.dumps(examples), json.dumps(report["language_dropped_articles"]))
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--shards", nargs="+", required=True, help="linearized shard Parquets")
    parser.add_argument("--reports", nargs="*", default=[], help="extraction report JSONs (shard-*.report.json)")
    parser.add_argument("--out-pairs", required=True)
    parser.add_argument("--out-audit", required=True)
    parser.add_argument("--out-report", required=True)
    parser.add_argument("--language", default="en", help="language code to keep; 'none' disables the filter")
    parser.add_argument("--min-tokens", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=500)
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    language = None if str(args.language).lower() in ("none", "null", "") else args.language
    report = filter_pairs(args.shards, args.reports, args.out_pairs, args.out_audit, args.out_report,
                          language=language, min_tokens=args.min_tokens, max_tokens=args.max_tokens)
    print(json.dumps({k: report[k] for k in ("input_pairs", "kept", "dropped", "too_short_examples",
                                             "language_dropped_articles")}, indent=2))
    return 0
