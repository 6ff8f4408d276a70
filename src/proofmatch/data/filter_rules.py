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
    per language, as the paper lists them (Appendix A: 143 in French, 11 in Russian, ...). Control characters are removed first (CLD2 rejects them
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

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from proofmatch import config
from proofmatch.data.stats import body_counts, paper_counts, token_counts
from proofmatch.data.views import view

log = logging.getLogger(__name__)

REASONS = ("linearize_error", "duplicate_pair_id", "language", "too_short", "too_long")
EXAMPLES = ("title_only", "omitted", "reference_only", "other")
REQUIRED_COLUMNS = (
    "article_id",
    "statement_id",
    "kind",
    "position",
    "statement_xml",
    "proof_xml",
    "pair_id",
    "statement_tokens",
    "proof_tokens",
    "statement_title_tokens",
    "proof_title_tokens",
)
AUDIT_COLUMNS = (
    "pair_id",
    "article_id",
    "reason",
    "example",
    "detail",
    "statement_length",
    "proof_length",
    "statement_tokens",
    "proof_tokens",
    "statement_title_tokens",
    "proof_title_tokens",
)
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


def article_languages(
    df: pd.DataFrame, rows: np.ndarray, language: str
) -> tuple[dict[str, tuple[str, float]], dict[str, Any]]:
    """Detect each article's language on the text of its ``rows`` together.

    Returns ``{article_id: (code, confidence)}`` for the articles reliably detected in another language, and
    the counts (per article): ``articles``, ``languages`` (reliable detections per code),
    ``short``, ``unreliable``, ``undetected``, ``dropped_articles`` (per code); :func:`classify`
    adds ``dropped_pairs`` (per code).
    """
    stats: dict[str, Any] = {
        "articles": 0,
        "languages": Counter(),
        "short": 0,
        "unreliable": 0,
        "undetected": 0,
        "dropped_articles": Counter(),
    }
    if len(rows) == 0:
        return {}, stats
    sub = df.iloc[rows]
    words = (
        token_counts(sub["statement_tokens"])["words"] + token_counts(sub["proof_tokens"])["words"]
    ).to_numpy()
    texts = [
        " ".join(view(_tokens(s), "text") + view(_tokens(p), "text"))
        for s, p in zip(sub["statement_tokens"].to_numpy(), sub["proof_tokens"].to_numpy())
    ]
    grouped = pd.DataFrame(
        {"article": sub["article_id"].astype(str).to_numpy(), "words": words, "text": texts}
    )
    foreign: dict[str, tuple[str, float]] = {}
    for article, g in tqdm(
        grouped.groupby("article", sort=True),
        desc="language",
        unit="article",
        disable=None,
        leave=False,
    ):
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


def _example(
    proof_tokens: Sequence[str], proof_title: int, proof_short: bool, st_empty: bool, pr_empty: bool
) -> tuple[str, str | None]:
    """The paper's example that a too-short pair is, with the side or the matched phrase."""
    if st_empty or pr_empty:
        return "title_only", "statement+proof" if st_empty and pr_empty else (
            "statement" if st_empty else "proof"
        )
    if proof_short:
        body = list(proof_tokens)[proof_title:]
        for name, match in (("omitted", match_omitted), ("reference_only", match_reference)):
            hit = match(body)
            if hit is not None:
                return name, repr(hit)
    return "other", None


@dataclass
class _Lengths:
    """Each row's statement and proof length (:func:`proofmatch.data.stats.paper_counts`; -1
    where not ``checked``) and whether its statement or proof has nothing after its title.
    Only the rows whose tokens exist (``checked``) are measured."""

    checked: np.ndarray
    statement: np.ndarray
    proof: np.ndarray
    statement_empty: np.ndarray
    proof_empty: np.ndarray

    @classmethod
    def measure(cls, df: pd.DataFrame, usable: np.ndarray) -> _Lengths:
        n = len(df)
        m = cls(
            np.zeros(n, dtype=bool),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            np.zeros(n, dtype=bool),
            np.zeros(n, dtype=bool),
        )
        m.checked[usable] = True
        if len(usable):
            sub = df.iloc[usable]
            st, pr = paper_counts(sub, "statement"), paper_counts(sub, "proof")
            m.statement[usable] = (st["text"] + st["math"]).to_numpy()
            m.proof[usable] = (pr["text"] + pr["math"]).to_numpy()
            st_body, pr_body = body_counts(sub, "statement"), body_counts(sub, "proof")
            m.statement_empty[usable] = (st_body["words"] + st_body["math"]).to_numpy() == 0
            m.proof_empty[usable] = (pr_body["words"] + pr_body["math"]).to_numpy() == 0
        return m

    def detail(self, st_bad: np.ndarray, pr_bad: np.ndarray, op: str, bound: int) -> np.ndarray:
        """ "statement 12 < 20; proof 3 < 20": the sides out of ``bound``, per row."""
        return np.array(
            [
                "; ".join(
                    ([f"statement {a} {op} {bound}"] if sb else [])
                    + ([f"proof {b} {op} {bound}"] if pb else [])
                )
                for a, b, sb, pb in zip(self.statement, self.proof, st_bad, pr_bad)
            ],
            dtype=object,
        )

    def frame_columns(self) -> dict[str, Any]:
        """The ``statement_length`` and ``proof_length`` columns (missing where not measured)."""
        return {
            k: pd.array(np.where(v >= 0, v, None), dtype="Int64")
            for k, v in (("statement_length", self.statement), ("proof_length", self.proof))
        }


@dataclass
class _Verdict:
    """The reason, example and detail of every row, filled rule by rule: a row keeps the first
    reason that matches it (None while it passes every rule so far)."""

    reason: np.ndarray
    example: np.ndarray
    detail: np.ndarray

    @classmethod
    def pending(cls, n: int) -> _Verdict:
        return cls(*(np.full(n, None, dtype=object) for _ in range(3)))

    def assign(self, name: str, mask: np.ndarray, details: np.ndarray | str | None = None) -> None:
        """Give ``name`` to the still-pending rows of ``mask`` (first match wins)."""
        take = mask & pd.isna(self.reason)
        self.reason[take] = name
        self.detail[take] = details[take] if isinstance(details, np.ndarray) else details

    def pending_rows(self) -> np.ndarray:
        return np.flatnonzero(pd.isna(self.reason))

    def frame(self, lengths: _Lengths) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "reason": pd.Series(self.reason, dtype=object),
                "example": pd.Series(self.example, dtype=object),
                "detail": pd.Series(self.detail, dtype=object),
                **lengths.frame_columns(),
            }
        )


def _check_columns(df: pd.DataFrame) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"linearized shard lacks columns {missing}")
    if df["pair_id"].isna().any():
        raise ValueError(f"{int(df['pair_id'].isna().sum())} rows have no pair_id")


def _linearize_error(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
    """Rule 1: the rows whose linearizer recorded an error, and the error (cut to 300 characters)."""
    if "linearize_error" not in df.columns:
        return np.zeros(len(df), dtype=bool), None
    err = df["linearize_error"].astype(object)
    has_err = (err.notna() & (err.astype(str).str.strip() != "")).to_numpy()
    return has_err, err.astype(str).str.slice(0, 300).to_numpy()


def _duplicate_pair_id(df: pd.DataFrame, duplicate: np.ndarray | None) -> np.ndarray:
    """Rule 2: the rows whose ``pair_id`` came earlier (``duplicate``, or earlier in ``df``)."""
    if duplicate is None:
        return df["pair_id"].astype(str).duplicated(keep="first").to_numpy()
    if len(duplicate) != len(df):
        raise ValueError(f"duplicate marks {len(duplicate)} rows, the frame has {len(df)}")
    return np.asarray(duplicate, dtype=bool)


def _foreign_article(
    df: pd.DataFrame, foreign: dict[str, tuple[str, float]]
) -> tuple[np.ndarray, np.ndarray]:
    """Rule 3: the rows of an article detected in another language, and that language."""
    articles = df["article_id"].astype(str)
    return (
        articles.isin(list(foreign)).to_numpy(),
        articles.map(
            lambda a: f"article in {foreign[a][0]} ({foreign[a][1]:.0f}%)" if a in foreign else None
        ).to_numpy(dtype=object),
    )


def _judge_language(
    df: pd.DataFrame, usable: np.ndarray, language: str | None, verdict: _Verdict
) -> dict[str, Any]:
    """Rule 3 applied (when ``language`` is set); the language statistics, ``dropped_pairs`` added."""
    if language is None:
        return {
            "articles": 0,
            "languages": Counter(),
            "short": 0,
            "unreliable": 0,
            "undetected": 0,
            "dropped_articles": Counter(),
            "dropped_pairs": Counter(),
        }
    foreign, lang = article_languages(df, usable, language)
    verdict.assign("language", *_foreign_article(df, foreign))
    articles = df["article_id"].astype(str)
    lang["dropped_pairs"] = Counter(foreign[a][0] for a in articles[verdict.reason == "language"])
    return lang


def _too_short(lengths: _Lengths, min_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Rule 4: a statement or proof of fewer than ``min_tokens`` tokens, and which."""
    short_st = lengths.checked & (lengths.statement < min_tokens)
    short_pr = lengths.checked & (lengths.proof < min_tokens)
    return short_st | short_pr, lengths.detail(short_st, short_pr, "<", min_tokens)


def _too_long(lengths: _Lengths, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Rule 5: a statement or proof of more than ``max_tokens`` tokens, and which."""
    long_st = lengths.checked & (lengths.statement > max_tokens)
    long_pr = lengths.checked & (lengths.proof > max_tokens)
    return long_st | long_pr, lengths.detail(long_st, long_pr, ">", max_tokens)


def _label_examples(
    df: pd.DataFrame, lengths: _Lengths, min_tokens: int, verdict: _Verdict
) -> None:
    """The paper's example that each ``too_short`` row is (:func:`_example`), its match added to the detail."""
    short_pr = lengths.checked & (lengths.proof < min_tokens)
    p_tok = df["proof_tokens"].to_numpy()
    p_title = df["proof_title_tokens"].fillna(0).astype(int).to_numpy()
    for i in np.flatnonzero(verdict.reason == "too_short"):
        name, what = _example(
            _tokens(p_tok[i]),
            p_title[i],
            bool(short_pr[i]),
            bool(lengths.statement_empty[i]),
            bool(lengths.proof_empty[i]),
        )
        verdict.example[i] = name
        if what is not None:
            verdict.detail[i] = f"{verdict.detail[i]}; {name}: {what}"


def classify(
    df: pd.DataFrame,
    language: str | None = config.default("filter.language"),
    min_tokens: int = config.default("filter.min_tokens"),
    max_tokens: int = config.default("filter.max_tokens"),
    duplicate: np.ndarray | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Give every row its drop reason (None = kept), example, detail and token lengths.

    Returns the frame ``reason, example, detail, statement_length, proof_length`` aligned with
    ``df`` (lengths as :func:`proofmatch.data.stats.paper_counts`, missing for rows whose tokens are
    unusable) and the language statistics of :func:`article_languages`. ``df`` must hold every
    pair of each of its articles: the language decision needs them all. ``duplicate`` (aligned
    with ``df``) marks the rows whose ``pair_id`` came earlier in the whole input, when ``df`` is
    a part of it; by default a row is a duplicate of an earlier row of ``df``.

    The rules run in the order of :data:`REASONS`, each on the rows that passed the ones before.
    """
    _check_columns(df)
    df = df.reset_index(drop=True)
    verdict = _Verdict.pending(len(df))
    verdict.assign("linearize_error", *_linearize_error(df))
    verdict.assign(
        "duplicate_pair_id",
        _duplicate_pair_id(df, duplicate),
        "pair_id already seen earlier in the input",
    )
    usable = (
        verdict.pending_rows()
    )  # lengths, titles and language are only valid on rows whose tokens exist
    lengths = _Lengths.measure(df, usable)
    lang = _judge_language(df, usable, language, verdict)
    verdict.assign("too_short", *_too_short(lengths, min_tokens))
    verdict.assign("too_long", *_too_long(lengths, max_tokens))
    _label_examples(df, lengths, min_tokens, verdict)
    return verdict.frame(lengths), lang
