"""Token-matching scorers: TF-IDF cosine (two vectorizers; paper §8) and BM25 (this project's).

Each gives a sparse statement x proof score matrix as a row-chunk score function
(:data:`proofmatch.decoding.local.ScoreRows`), the form every decoder takes: the baselines
(:mod:`proofmatch.evaluation.baselines`) decode and write it like a model's scores, fusion
(:mod:`proofmatch.scoring.fusion`) adds it to a model's, and the search index
(:mod:`proofmatch.search`) stores the fitted weights and statistics to score a query with.

* **TF-IDF**: scikit-learn's ``TfidfVectorizer`` fitted on the *train* part's statements and
  proofs (a search index: on its own statements and proofs, :func:`tfidf_fit`); cosine similarity (rows are L2-normalised, so it is a sparse dot product). Tokens are
  used exactly as linearized (``analyzer`` = the token list itself, ``lowercase=False``): this is
  ``token_pattern=r"\\S+"`` on space-joined tokens, but also safe for a token that contains a
  space. Unlike the reference's default vectorizer it keeps single-character tokens, i.e. every
  one-letter variable ``$x``, and it keeps math ``$a`` apart from the English word ``a``.
* **TF-IDF (reference code)**, ``tfidf_paper``: the reference code's TF-IDF baseline (the paper
  reports TF-IDF at MRR 11.4-29.8 without naming its vectorizer): ``TfidfVectorizer()`` with scikit-learn's defaults on the reference's plain text of a
  side (math symbols without the ``$`` type, a font as ``x____bold``; :func:`reference_text`).
  The defaults lowercase and keep only tokens of two or more word characters, so one-letter
  variables, operators and punctuation vanish and ``$A`` merges with ``a``. On a small candidate
  pool the token-level TF-IDF above is far stronger; both are reported.
* **BM25**: ``rank_bm25.BM25Okapi`` (k1=1.5, b=0.75, epsilon=0.25) with the evaluated part's
  proofs as the corpus (its idf is therefore computed on those proofs, as a search index would)
  and the statements as queries. ``BM25Okapi.get_scores`` loops in Python over every corpus
  document for every query token (about 5e10 dict look-ups at n = 18,408), so the scores are
  computed here as one sparse product ``Q @ W.T`` with ``Q`` the query term counts and
  ``W[d, t] = idf[t] * tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))``, using the package's own
  ``idf``, ``doc_len``, ``avgdl``, ``k1`` and ``b``. This equals ``get_scores`` term for term
  (a repeated query token counts once per occurrence, an unknown token scores 0); the tests
  check the equality on a toy corpus.

scikit-learn is imported by the functions that fit or transform, so that the search page and a
command's ``--help`` start without it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from proofmatch.data.views import is_math, split_math

if TYPE_CHECKING:  # decoding.local imports torch; the search page loads scoring without it
    from proofmatch.decoding.local import ScoreRows

log = logging.getLogger(__name__)

REFERENCE_FONT_SEP = "____"  # the reference's symbol/mathvariant separator, e.g. F____script


def as_is(tokens: list[str]) -> list[str]:
    """Analyzer that takes the already linearized tokens as they are (module docstring)."""
    return tokens


def count_vectors(docs: Sequence[list[str]], vocab: dict[str, int]) -> sp.csr_matrix:
    """Raw token counts over a fixed vocabulary (BM25's documents and queries; the base of
    :func:`tfidf_vectors`): what scikit-learn's ``CountVectorizer(vocabulary=vocab).transform``
    gives (a token outside ``vocab`` is not counted), built directly, so that a search query does
    not pay scikit-learn's import (a second or more on two cores)."""
    docs = list(docs)
    rows: list[int] = []
    cols: list[int] = []
    for i, doc in enumerate(docs):
        for token in doc:
            j = vocab.get(token)
            if j is not None:
                rows.append(i)
                cols.append(j)
    counts = sp.csr_matrix(
        (np.ones(len(rows), np.float64), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
        shape=(len(docs), len(vocab)),
    )  # duplicates summed
    counts.sort_indices()
    return counts


def tfidf_fit(docs: Sequence[list[str]]) -> tuple[dict[str, int], np.ndarray]:
    """Vocabulary and idf of scikit-learn's TfidfVectorizer fitted on ``docs`` (the search index's
    statements and proofs; :func:`tfidf_scorer` fits the same vectorizer)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer=as_is, lowercase=False).fit(list(docs))
    vocab = {str(t): int(i) for t, i in vec.vocabulary_.items()}
    return vocab, np.asarray(vec.idf_, np.float64)


def tfidf_vectors(
    docs: Sequence[list[str]], vocab: dict[str, int], idf: np.ndarray
) -> sp.csr_matrix:
    """scikit-learn's TfidfVectorizer transform (raw counts x idf, rows L2-normalised): a search
    index's proofs and queries, from its stored vocabulary and idf."""
    from sklearn.preprocessing import normalize

    return normalize(count_vectors(docs, vocab) @ sp.diags(idf), norm="l2", copy=False).tocsr()


def sparse_scorer(Q: sp.spmatrix, D: sp.spmatrix) -> ScoreRows:
    """Row-chunk scores ``Q[rows] @ D.T`` as dense float32 (Q: statements, D: proofs)."""
    Q = sp.csr_matrix(Q, dtype=np.float64)
    DT = sp.csc_matrix(D, dtype=np.float64).T.tocsr()
    if Q.shape[1] != DT.shape[0]:
        raise ValueError(f"vocabulary mismatch: {Q.shape[1]} vs {DT.shape[0]} features")

    def score_rows(start: int, stop: int) -> np.ndarray:
        return (Q[start:stop] @ DT).toarray().astype(np.float32)

    return score_rows


def tfidf_scorer(
    train_docs: Sequence[list[str]], statements: Sequence[list[str]], proofs: Sequence[list[str]]
) -> ScoreRows:
    """Cosine similarity of TF-IDF vectors fitted on ``train_docs``."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer=as_is, lowercase=False)
    vec.fit(list(train_docs))
    log.info(
        "TF-IDF vocabulary: %d tokens from %d training documents",
        len(vec.vocabulary_),
        len(train_docs),
    )
    return sparse_scorer(vec.transform(list(statements)), vec.transform(list(proofs)))


def reference_text(tokens: Sequence[str]) -> str:
    """A side as the reference's baseline saw it: space-joined, math without its ``$`` type and
    with a non-normal font as ``<symbol>____<mathvariant>``."""
    out = []
    for t in tokens:
        if is_math(t):
            symbol, variant = split_math(t)
            out.append(f"{symbol}{REFERENCE_FONT_SEP}{variant}" if variant else symbol)
        else:
            out.append(t)
    return " ".join(out)


def tfidf_paper_scorer(
    train_docs: Sequence[list[str]], statements: Sequence[list[str]], proofs: Sequence[list[str]]
) -> ScoreRows:
    """Cosine similarity of the reference's default ``TfidfVectorizer()`` fitted on ``train_docs``."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer()
    vec.fit([reference_text(d) for d in train_docs])
    log.info(
        "TF-IDF (reference code) vocabulary: %d tokens from %d training documents",
        len(vec.vocabulary_),
        len(train_docs),
    )
    transform = lambda docs: vec.transform([reference_text(d) for d in docs])  # noqa: E731
    return sparse_scorer(transform(statements), transform(proofs))


@dataclass(frozen=True)
class BM25Fit:
    """What BM25Okapi learns from its corpus (the proofs): the vocabulary, each term's idf, ``k1``,
    ``b`` and the mean document length. Kept beside the weights so that a changed document (a proof
    with one token masked, :mod:`proofmatch.search.explain`) is weighted with the corpus's statistics."""

    vocab: dict[str, int]
    idf: np.ndarray
    k1: float
    b: float
    avgdl: float


def bm25_doc_weights(counts: sp.spmatrix, doc_len: np.ndarray, fit: BM25Fit) -> sp.csr_matrix:
    """BM25Okapi weights ``W[d, t] = idf[t] * tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))`` of
    documents given as term counts over ``fit.vocab`` and their lengths (tokens outside the
    vocabulary count in ``|d|``)."""
    counts = sp.csr_matrix(counts, dtype=np.float64)
    norm = fit.k1 * (
        1.0 - fit.b + fit.b * np.asarray(doc_len, np.float64) / fit.avgdl
    )  # per document
    tf = counts.data
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    W = counts.copy()
    W.data = fit.idf[counts.indices] * tf * (fit.k1 + 1.0) / (tf + norm[rows])
    return W


def bm25_fit(proofs: Sequence[list[str]]) -> tuple[sp.csr_matrix, BM25Fit]:
    """BM25Okapi document weights ``W`` (proofs x vocabulary) and the fitted statistics."""
    from rank_bm25 import BM25Okapi

    if not any(len(p) for p in proofs):
        raise ValueError("BM25 needs at least one non-empty proof")
    bm = BM25Okapi(list(proofs))
    vocab = {t: i for i, t in enumerate(bm.idf)}
    fit = BM25Fit(
        vocab,
        np.array([bm.idf[t] for t in vocab], dtype=np.float64),
        float(bm.k1),
        float(bm.b),
        float(bm.avgdl),
    )
    counts = count_vectors(proofs, vocab)
    return bm25_doc_weights(counts, np.asarray(bm.doc_len, dtype=np.float64), fit), fit


def bm25_weights(proofs: Sequence[list[str]]) -> tuple[sp.csr_matrix, dict[str, int]]:
    """BM25Okapi document weights ``W`` (proofs x vocabulary) and the vocabulary index."""
    W, fit = bm25_fit(proofs)
    return W, fit.vocab


def bm25_scorer(statements: Sequence[list[str]], proofs: Sequence[list[str]]) -> ScoreRows:
    """BM25Okapi scores of every proof (document) for every statement (query)."""
    W, vocab = bm25_weights(proofs)
    return sparse_scorer(count_vectors(statements, vocab), W)
