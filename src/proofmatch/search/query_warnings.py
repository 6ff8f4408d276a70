"""The warnings a search adds beside its results when the query can hardly match the index.

Apart from :class:`proofmatch.search.index.SearchIndex` because they read only the query and what
the index knows of its proofs (their vocabulary, their language), which they are handed as
callables so that nothing is computed for a query that needs no check.
"""

from __future__ import annotations

from collections.abc import Callable

from proofmatch.search.query import Query

LANGUAGE_MIN_WORDS = 4  # a query's language is judged on at least this many words of text
LANGUAGE_SAMPLE = 300  # proofs whose text tells the index's language


def _language_name(code: str) -> str:
    """The English name of a language code (polyglot's), else the code."""
    try:
        from polyglot.detect.base import Language

        return str(Language.from_code(code).name)
    except Exception:  # noqa: BLE001 - an unknown code: the code itself reads well enough
        return code


def warn_unmatched(q: Query, proof_vocabulary: Callable[[], set[str] | dict], method: str) -> None:
    """A query none of whose tokens occurs in any proof gets a warning beside its results: every
    lexical score is 0, so the order says nothing lexical (a model index still ranks it)."""
    if q.kind == "id" or not q.tokens:
        return
    vocab = proof_vocabulary()
    if not vocab or any(t in vocab for t in q.tokens):
        return
    why = (
        "every TF-IDF/BM25 score is 0 and the order is arbitrary"
        if method in ("tfidf", "bm25")
        else "BM25 scores are all 0; the order is the model's alone"
        if method == "fusion"
        else "the order is the model's guess from its embeddings alone"
    )
    q.warnings.append(f"no word or symbol of the query occurs in any proof of this index: {why}")


def warn_language(q: Query, corpus_language: Callable[[], str | None]) -> None:
    """A query whose words read reliably as another language than the index's proofs gets a
    warning: its words can hardly match (BM25), and a model never saw that language."""
    if q.kind == "id":
        return
    words = [t for t in q.tokens if not t.startswith("$") and any(c.isalpha() for c in t)]
    if len(words) < LANGUAGE_MIN_WORDS:
        return
    corpus = corpus_language()
    if corpus is None:
        return
    from proofmatch.data.filter_rules import detect_language

    status, code, confidence = detect_language(" ".join(words))
    if status == "reliable" and code and code != corpus:
        q.warnings.append(
            f"the query's words read as {_language_name(code)} ({code}, {confidence:.0f} % "
            f"confident) but the proofs of this index are in {_language_name(corpus)} "
            f"({corpus}): few of its words can match them; formulas still do"
        )
