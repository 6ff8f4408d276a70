"""Pair filters of the paper's Appendix A, with an audit row for every dropped pair.

Each pair gets the first matching reason of :data:`REASONS`, checked in this order:

``linearize_error``
    the linearizer recorded an error for the pair (its tokens are unusable).
``duplicate_pair_id``
    a ``pair_id`` seen before in the input (shards in the given order, rows in file order);
    the first occurrence is judged normally, later ones are dropped.
``title_only``
    the statement or the proof has no word or math token after its title ("5.26 Lemma.",
    a bare "Proof."); the paper attributes these to XML conversion noise. ``detail`` names the side.
``language``
    polyglot (CLD2) detects, reliably, a language other than ``language`` on the text tokens of
    statement + proof (titles included, math removed). Pairs with fewer than
    :data:`MIN_LANGUAGE_WORDS` words, unreliable detections and detector exceptions are *kept*:
    a pair is dropped only on positive evidence, since a wrong drop loses an English pair while a
    wrong keep only adds a little noise (and the reference code ran no language filter at all).
    They are counted as ``language_short``, ``language_unreliable`` and ``language_undetected``
    in the report. Control characters are removed first (CLD2 rejects them as invalid UTF-8).
``omitted``
    an omitted or "easy" proof ("Omitted.", "Trivial.", "This is obvious and will be left to the
    readers").
``reference_only``
    a proof that only points elsewhere ("See Appendix A", "This follows immediately from
    Proposition 4.4 (ii).", "Similar to proof of Lemma 6.1", "See [BK3, Theorem 4.8].",
    "The proof will appear elsewhere.", "See above.", "Will be given in section 5.").
``too_short`` / ``too_long``
    the statement or proof body has fewer than ``min_tokens`` or more than ``max_tokens``
    text+math tokens.

The two pattern rules look at the proof body's text tokens (title removed, lower-cased) and fire
only on short proofs: at most :data:`PATTERN_MAX_TOKENS` body tokens and at most
:data:`PATTERN_MAX_MATH` math tokens. A proof that carries formulas or is longer is content even
when it cites a lemma or says "clearly", so real proofs are never dropped by a pattern.

Lengths count the body (title tokens excluded). The reference counted whitespace tokens with the
title ("Lemma 3.2." = 2 tokens); our tokenizer splits a title into ~5 tokens ("Lemma 3 . 2 ."),
so excluding it keeps the 20..500 bounds close to their original meaning, and Table 2 (which
counts bodies too) shows exactly the filter's bounds.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import unicodedata
from collections import Counter
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .logs import setup_logging
from .stats import body_counts, token_counts
from .store import read_json, read_parquet, write_json, write_parquet
from .tokens import view

log = logging.getLogger(__name__)

REASONS = (
    "linearize_error", "duplicate_pair_id", "title_only", "language",
    "omitted", "reference_only", "too_short", "too_long",
)
REQUIRED_COLUMNS = (
    "article_id", "statement_id", "kind", "position", "statement_xml", "proof_xml", "pair_id",
    "statement_tokens", "proof_tokens", "statement_title_tokens", "proof_title_tokens",
)
AUDIT_COLUMNS = ("pair_id", "article_id", "reason", "detail", "statement_tokens", "proof_tokens",
                 "statement_title_tokens", "proof_title_tokens")
MIN_LANGUAGE_WORDS = 5
PATTERN_MAX_TOKENS = 30
PATTERN_MAX_MATH = 2

_OMITTED = re.compile(
    r"\bomit(s|ted)?\b|\bleft (to|for) the readers?\b|\bleave (it|this|them|that|the (proof|details?))( as an? \w+ exercise)?"
    r" (to|for) the readers?\b|\bas an? (easy |simple )?exercise\b|^\W*(an? )?(easy |simple )?exercise\W*$"
    r"|\btrivial(ly|ity)?\b|\bstraightforward(ly)?\b|\bwell ?- ?known\b|\bevident(ly)?\b|\bobvious(ly)?\b"
    r"|^\W*(this is |it is |the proof is )?(clear|easy|standard|routine|elementary)\W*$"
)
_REFERENCE = re.compile(
    r"^\W*see\b|\bcf\b|\bfollows? (immediately |directly |easily |readily |at once )?(from|by)\b"
    r"|\b(immediate|direct|easy|simple) (consequence|corollary) of\b|\bsimilar(ly)?\b|\banalogous(ly)?\b"
    r"|\bsame (as|way as)\b|^\W*as (in|for)\b|\bappendix\b|\belsewhere\b"
    r"|\bwill be (given|proved|proven|shown|presented|discussed|established)\b"
    r"|\b(proved|proven|shown|given|found|contained|done) in\b|\bsee (section|above|below|the)\b|\["
    r"|\b(lemma|theorem|proposition|corollary|section|remark|claim|chapter|equation|eq|step|part) ?\(?\d"
)
_CONTROL = {c: " " for c in range(0x20) if chr(c) not in "\t\n\r"} | {0x7F: " "}


def _silence_polyglot() -> None:
    """polyglot warns on every unreliable detection; those are counted in the report instead."""
    logging.getLogger("polyglot").setLevel(logging.ERROR)


def _tokens(value: Any) -> list[str]:
    return [] if value is None else [str(t) for t in value]


def _clean_for_detection(text: str) -> str:
    text = text.translate(_CONTROL)
    return "".join(" " if unicodedata.category(ch) == "Cs" else ch for ch in text)


def detect_language(text: str) -> tuple[str, str | None, float]:
    """``(status, code, confidence)``; status is ``reliable``, ``unreliable`` or ``undetected``.

    ``undetected`` means the detector raised (code None). Never raises itself, because one odd
    pair must not stop a corpus-wide run; the caller counts the case.
    """
    from polyglot.detect import Detector  # imported lazily: pulls in ICU

    _silence_polyglot()
    try:
        d = Detector(_clean_for_detection(text), quiet=True)
    except Exception as exc:  # noqa: BLE001 - CLD2/ICU raise assorted types; counted by the caller
        log.debug("language detection failed: %s", exc)
        return "undetected", None, 0.0
    return ("reliable" if d.reliable else "unreliable"), d.language.code, float(d.language.confidence)


def _text(tokens: Sequence[str]) -> str:
    """Lower-cased text view joined by single spaces (the form the pattern rules match)."""
    return " ".join(view(tokens, "text")).lower()


def match_omitted(body_tokens: Sequence[str]) -> str | None:
    """The matched phrase when a (short) proof body says the proof is omitted or easy."""
    m = _OMITTED.search(_text(body_tokens))
    return m.group(0).strip() if m else None


def match_reference(body_tokens: Sequence[str]) -> str | None:
    """The matched phrase when a (short) proof body only refers elsewhere."""
    m = _REFERENCE.search(_text(body_tokens))
    return m.group(0).strip() if m else None


def classify(df: pd.DataFrame, language: str | None = "en", min_tokens: int = 20, max_tokens: int = 500,
             seen: set[str] | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Give every row its drop reason (None = kept) and detail; pure except for updating ``seen``.

    Returns the frame ``reason, detail`` aligned with ``df`` and the language statistics.
    ``seen`` carries the pair ids of earlier shards so duplicates are found across shards.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"linearized shard lacks columns {missing}")
    if df["pair_id"].isna().any():
        raise ValueError(f"{int(df['pair_id'].isna().sum())} rows have no pair_id")
    seen = set() if seen is None else seen
    n = len(df)
    reason = np.full(n, None, dtype=object)
    detail = np.full(n, None, dtype=object)
    lang: dict[str, Any] = {"languages": Counter(), "short": 0, "unreliable": 0, "undetected": 0,
                            "dropped_articles": Counter()}

    def assign(mask: np.ndarray, name: str, details: Iterable[Any] | Any = None) -> None:
        """Give ``name`` to the still-pending rows of ``mask`` (first match wins)."""
        take = mask & pd.isna(reason)
        reason[take] = name
        if isinstance(details, np.ndarray):
            detail[take] = details[take]
        else:
            detail[take] = details

    if "linearize_error" in df.columns:
        err = df["linearize_error"].astype(object)
        has_err = (err.notna() & (err.astype(str).str.strip() != "")).to_numpy()
        assign(has_err, "linearize_error", err.astype(str).str.slice(0, 300).to_numpy())

    ids = df["pair_id"].astype(str).to_numpy()
    dup = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(pd.isna(reason)):
        if ids[i] in seen:
            dup[i] = True
        seen.add(ids[i])
    assign(dup, "duplicate_pair_id", "pair_id already seen earlier in the input")

    # Counting is only valid on rows whose tokens exist; errored rows get empty lists.
    ok = pd.isna(reason)
    masked = df.assign(
        statement_tokens=df["statement_tokens"].where(ok, None),
        proof_tokens=df["proof_tokens"].where(ok, None),
        statement_title_tokens=df["statement_title_tokens"].where(ok, 0),
        proof_title_tokens=df["proof_title_tokens"].where(ok, 0),
    )
    st, pr = body_counts(masked, "statement"), body_counts(masked, "proof")
    st_total = (st["text"] + st["math"]).to_numpy()
    pr_total = (pr["text"] + pr["math"]).to_numpy()
    st_empty = (st["words"] + st["math"]).to_numpy() == 0
    pr_empty = (pr["words"] + pr["math"]).to_numpy() == 0
    sides = np.where(st_empty & pr_empty, "statement+proof", np.where(st_empty, "statement", "proof"))
    assign(st_empty | pr_empty, "title_only", sides)

    if language is not None:
        words = (token_counts(masked["statement_tokens"])["words"] + token_counts(masked["proof_tokens"])["words"]).to_numpy()
        pending = np.flatnonzero(pd.isna(reason))
        drop = np.zeros(n, dtype=bool)
        found = np.full(n, None, dtype=object)
        s_tok, p_tok, arts = df["statement_tokens"].to_numpy(), df["proof_tokens"].to_numpy(), df["article_id"].to_numpy()
        for i in tqdm(pending, desc="language", unit="pair", disable=None, leave=False):
            if words[i] < MIN_LANGUAGE_WORDS:
                lang["short"] += 1
                continue
            text = " ".join(view(_tokens(s_tok[i]), "text") + view(_tokens(p_tok[i]), "text"))
            status, code, conf = detect_language(text)
            if status != "reliable":
                lang[status] += 1
                continue
            lang["languages"][code] += 1
            if code != language:
                drop[i] = True
                found[i] = f"{code} ({conf:.0f}%)"
                lang["dropped_articles"][(str(arts[i]), code)] += 1
        assign(drop, "language", found)

    pattern_rows = np.flatnonzero(pd.isna(reason) & (pr_total <= PATTERN_MAX_TOKENS) & (pr["math"].to_numpy() <= PATTERN_MAX_MATH))
    omitted = np.zeros(n, dtype=bool)
    reference = np.zeros(n, dtype=bool)
    phrase = np.full(n, None, dtype=object)
    p_tok, p_title = df["proof_tokens"].to_numpy(), df["proof_title_tokens"].fillna(0).astype(int).to_numpy()
    for i in pattern_rows:
        body = _tokens(p_tok[i])[p_title[i]:]
        hit = match_omitted(body)
        if hit is not None:
            omitted[i], phrase[i] = True, hit
            continue
        hit = match_reference(body)
        if hit is not None:
            reference[i], phrase[i] = True, hit
    assign(omitted, "omitted", phrase)
    assign(reference, "reference_only", phrase)

    def length_detail(st_bad: np.ndarray, pr_bad: np.ndarray, op: str, bound: int) -> np.ndarray:
        return np.array([
            "; ".join(([f"statement {a} {op} {bound}"] if sb else []) + ([f"proof {b} {op} {bound}"] if pb else []))
            for a, b, sb, pb in zip(st_total, pr_total, st_bad, pr_bad)
        ], dtype=object)

    short_st, short_pr = st_total < min_tokens, pr_total < min_tokens
    assign(short_st | short_pr, "too_short", length_detail(short_st, short_pr, "<", min_tokens))
    long_st, long_pr = st_total > max_tokens, pr_total > max_tokens
    assign(long_st | long_pr, "too_long", length_detail(long_st, long_pr, ">", max_tokens))
    verdict = pd.DataFrame({"reason": pd.Series(reason, index=df.index, dtype=object),
                            "detail": pd.Series(detail, index=df.index, dtype=object)})
    return verdict, lang


# ---------------------------------------------------------------- extraction reports

_REPORT_KEYS = ("files_seen", "files_ok", "files_skipped", "theorem_like", "pairs", "max_file_mb", "max_depth")


def read_extraction_reports(report_jsons: Sequence[str | os.PathLike]) -> dict[str, Any] | None:
    """The per-shard extraction reports merged by :func:`proofmatch.extract.merge_reports`.

    None when no report is given; a report without the expected keys raises naming its file.
    """
    if not report_jsons:
        return None
    from .extract import merge_reports  # lxml is only needed when reports are merged

    reports = []
    for path in report_jsons:
        rep = read_json(path)
        missing = [k for k in _REPORT_KEYS if k not in rep]
        if missing:
            raise ValueError(f"extraction report {path} lacks keys {missing}")
        reports.append(rep)
    return merge_reports(reports)


# ---------------------------------------------------------------- the stage


def filter_pairs(shard_parquets: list[str], report_jsons: list[str], out_pairs: str | os.PathLike,
                 out_audit: str | os.PathLike, out_report: str | os.PathLike, language: str | None = "en",
                 min_tokens: int = 20, max_tokens: int = 500) -> dict[str, Any]:
    """Filter the linearized shards; write kept pairs, the audit of dropped pairs and a report.

    The report's ``check`` must hold: kept + dropped == input pairs, and (when extraction reports
    are given) input pairs == the extraction's pair count; a mismatch raises rather than hiding a
    stale or truncated shard.
    """
    if min_tokens < 0 or max_tokens < max(min_tokens, 1):
        raise ValueError(f"need 0 <= min_tokens <= max_tokens, got {min_tokens}..{max_tokens}")
    seen: set[str] = set()
    kept_frames, audit_frames = [], []
    languages: Counter = Counter()
    lang_counts = Counter()
    dropped_articles: Counter = Counter()
    n_input = 0
    for path in tqdm(shard_parquets, desc="filter", unit="shard", disable=None):
        df = read_parquet(path).reset_index(drop=True)
        n_input += len(df)
        verdict, lang = classify(df, language, min_tokens, max_tokens, seen)
        languages.update(lang["languages"])
        lang_counts.update({k: lang[k] for k in ("short", "unreliable", "undetected")})
        dropped_articles.update(lang["dropped_articles"])
        drop = verdict["reason"].notna()
        kept_frames.append(df.loc[~drop].drop(columns=["linearize_error"], errors="ignore"))
        audit_frames.append(pd.concat([df.loc[drop, ["pair_id", "article_id"]], verdict.loc[drop],
                                       df.loc[drop, list(AUDIT_COLUMNS[4:])]], axis=1))
        log.info("%s: %d pairs, %d kept", path, len(df), int((~drop).sum()))

    kept = pd.concat(kept_frames, ignore_index=True) if kept_frames else pd.DataFrame(columns=list(REQUIRED_COLUMNS))
    kept = kept.sort_values(["article_id", "position", "pair_id"], kind="stable").reset_index(drop=True)
    audit = pd.concat(audit_frames, ignore_index=True) if audit_frames else pd.DataFrame(columns=list(AUDIT_COLUMNS))
    audit = audit[list(AUDIT_COLUMNS)]
    dropped = {r: int((audit["reason"] == r).sum()) for r in REASONS}

    extraction = read_extraction_reports(report_jsons)
    check = {
        "kept_plus_dropped_equals_input": len(kept) + sum(dropped.values()) == n_input,
        "extraction_pairs_equal_input": None if extraction is None else extraction["pairs"] == n_input,
    }
    if not check["kept_plus_dropped_equals_input"]:
        raise AssertionError(f"filter accounting is off: {len(kept)} kept + {sum(dropped.values())} dropped != {n_input}")
    if check["extraction_pairs_equal_input"] is False:
        raise ValueError(f"the extraction reports count {extraction['pairs']} pairs but the linearized shards hold "
                         f"{n_input}: a shard is stale or missing (rerun linearize)")
    per_lang_articles = Counter(code for (_, code) in dropped_articles)
    report = {
        "input_pairs": n_input,
        "kept": len(kept),
        "dropped": dropped,
        "dropped_total": sum(dropped.values()),
        "articles_in": int(pd.concat([kept["article_id"], audit["article_id"]]).nunique()),
        "articles_kept": int(kept["article_id"].nunique()),
        "languages": dict(sorted(languages.items())),
        "language_dropped_articles": dict(sorted(per_lang_articles.items())),
        "language_short": lang_counts["short"],
        "language_unreliable": lang_counts["unreliable"],
        "language_undetected": lang_counts["undetected"],
        "params": {"language": language, "min_tokens": min_tokens, "max_tokens": max_tokens,
                   "min_language_words": MIN_LANGUAGE_WORDS, "pattern_max_tokens": PATTERN_MAX_TOKENS,
                   "pattern_max_math": PATTERN_MAX_MATH, "order": list(REASONS)},
        "extraction": extraction,
        "check": check,
    }
    write_parquet(kept, out_pairs)
    write_parquet(audit, out_audit)
    write_json(report, out_report)
    log.info("kept %d of %d pairs; dropped %s", len(kept), n_input, json.dumps(dropped))
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
    print(json.dumps({k: report[k] for k in ("input_pairs", "kept", "dropped", "languages")}, indent=2))
    return 0
