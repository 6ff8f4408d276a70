""" "Why this proof": each token's contribution to the score that ranked one proof for a query.

Method: **occlusion**. Each token of the statement (the query) and of the proof is masked in
turn, as Figure 2's LIME masks a token (:func:`proofmatch.scoring.tokens.mask_token` in its
place, so positions do not shift), and the pair is rescored; a token's contribution is
``score(pair) - score(pair with that token masked)``: positive where the token supports the match.
The budget is one perturbation per token: the m masked statements and the p masked proofs are
encoded in one batch per side (two encoder passes of m + 1 and p + 1 texts), and each masked pair
is scored against the other side unmasked, so a pair of m + p tokens costs m + p rescorings and
no sampling. LIME (Figure 2's method) fits a linear model to thousands of random maskings and was
measured too slow for a page on two cores (:file:`docs/benchmarks.md`); occlusion is
deterministic and exact about what it measures: the score drop from losing one token, the others
kept.

The score explained is the one that answered the search (:attr:`SearchIndex.method`):

* ``model``: the matcher's ``sᵀWp + b`` (or the distance score) of the pair;
* ``bm25`` / ``tfidf``: the pair's BM25 score (the masked proof reweighted with the index's idf,
  ``k1``, ``b`` and mean proof length: :func:`proofmatch.scoring.lexical.bm25_doc_weights`)
  or TF-IDF cosine;
* ``fusion``: the fused score ``(l - μ_l)/σ_l + λ (b - μ_b)/σ_b`` of the pair, where ``μ`` and
  ``σ`` are the mean and standard deviation of each half over the query's candidates (all proofs,
  or the part searched) **held fixed**: masking one token changes this pair's scores, not the
  pool's statistics. Each token's contribution is also split into its learned and its BM25 part
  (they add up to the fused contribution). A fusion of several runs
  (:mod:`proofmatch.search.members`) explains ``Σ wᵢ (sᵢ - μᵢ)/σᵢ + λ (b - μ_b)/σ_b`` the same
  way, each run masking with its own unknown token; its learned part is split further into each
  run's share (a token's ``members``).

A query and proof of more than ``max_tokens`` tokens together is refused (the cost grows with
the square of the length), as are an unknown id, a proof outside the part searched and an index
built before proof tokens were stored.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from proofmatch.data.views import is_math
from proofmatch.scoring.lexical import bm25_doc_weights, count_vectors, tfidf_vectors
from proofmatch.scoring.tokens import display_token, mask_token
from proofmatch.search.folder import MAX_EXPLAIN_TOKENS
from proofmatch.search.index import SearchIndex
from proofmatch.search.query import MAX_QUERY_CHARS, Query, QueryError

METHOD = "occlusion"
BATCH_SIZE = 128  # texts per encoder pass (the masked texts of one side, in batches of this)


def masked_variants(tokens: list[str], mask: str) -> list[list[str]]:
    """``tokens`` itself, then one copy per position with that token replaced by ``mask``."""
    return [tokens] + [tokens[:i] + [mask] + tokens[i + 1 :] for i in range(len(tokens))]


def _cross(
    S: np.ndarray, P: np.ndarray, row: np.ndarray, col: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Scores of (masked statement i, proof) and of (statement, masked proof j) from factors:
    each variant against the other side's unmasked text (row 0), in float64."""
    S, P = S.astype(np.float64), P.astype(np.float64)
    row, col = row.astype(np.float64), col.astype(np.float64)
    return S @ P[0] + row + col[0], P @ S[0] + row[0] + col


def learned_cross(
    index: SearchIndex,
    statements: list[list[str]],
    proofs: list[list[str]],
    batch_size: int = BATCH_SIZE,
) -> tuple[np.ndarray, np.ndarray]:
    """The model's scores of every masked statement with the proof and of the statement with every
    masked proof: one ``Matcher.factors`` call (each side encoded in batches)."""
    A, B, row, col = index.matcher.factors(statements, proofs, batch_size=batch_size)
    return _cross(A, B, row, col)


def lexical_cross(
    index: SearchIndex, statements: list[list[str]], proofs: list[list[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """BM25 or TF-IDF scores of the same masked pairs: sparse rows, two products."""
    if index.method == "tfidf":
        Q, D = (
            tfidf_vectors(statements, index.vocab, index.idf),
            tfidf_vectors(proofs, index.vocab, index.idf),
        )
    else:
        if index.bm25_fit is None:
            raise QueryError(
                "this BM25 index was built without its BM25 statistics, so a masked proof cannot be "
                "reweighted; rebuild it with `proofmatch index` to explain its results"
            )
        Q = count_vectors(statements, index.vocab)
        lengths = np.array(
            [len(p) for p in proofs], np.float64
        )  # a masked token still counts in |d|
        D = bm25_doc_weights(count_vectors(proofs, index.vocab), lengths, index.bm25_fit)
    masked_s = np.asarray((Q @ D[0].T).toarray()).ravel()
    masked_p = np.asarray((D @ Q[0].T).toarray()).ravel()
    return masked_s.astype(np.float64), masked_p.astype(np.float64)


def _pool_stats(scores: np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation over the candidates, as :func:`proofmatch.scoring.fusion.standardize`."""
    s = np.asarray(scores, np.float64)
    return float(s.mean()), float(s.std())


def _z(x: np.ndarray, mean: float, std: float) -> np.ndarray:
    return (x - mean) / std if std > 0 else np.zeros_like(x)


def explain(
    index: SearchIndex,
    text: str | Query,
    pair_id: str,
    part: str | None = None,
    kind: str = "auto",
    max_chars: int = MAX_QUERY_CHARS,
    max_tokens: int = MAX_EXPLAIN_TOKENS,
    batch_size: int = BATCH_SIZE,
) -> dict[str, Any]:
    """The contribution of each query and proof token to the score of ``pair_id``'s proof for the
    query ``text`` (module docstring); a JSON-ready dict."""
    t0 = time.perf_counter()
    q = text if isinstance(text, Query) else index.parse(text, kind, max_chars)
    row = _proof_row(index, pair_id, part)
    statement = index.query_tokens(q)
    proof = [str(t) for t in index.table["proof_tokens"].iat[row]]
    n_tokens = len(statement) + len(proof)
    if n_tokens > max_tokens:
        raise QueryError(
            f"an explanation masks every token in turn; this query and proof have {n_tokens} tokens "
            f"together, the limit is {max_tokens} (shorten the query)"
        )
    if not statement or not proof:
        raise QueryError("nothing to explain: the query or the proof has no tokens")
    mask = mask_token(index.matcher)  # a lexical index has no matcher: the default mask
    statements, proofs = masked_variants(statement, mask), masked_variants(proof, mask)

    out: dict[str, Any] = {
        "pair_id": pair_id,
        "part": part,
        "scorer": index.method,
        "method": METHOD,
        "mask": mask,
        "query": {"kind": q.kind, "n_tokens": len(statement), "pair_id": q.pair_id},
    }
    s_scores, p_scores, parts, about = _variant_scores(
        index, q, part, statements, proofs, batch_size
    )
    out.update(about)
    out["score"] = float(s_scores[0])
    out["statement"] = _token_weights(statement, 0, s_scores, parts)
    out["proof"] = _token_weights(proof, 1, p_scores, parts)
    weights = [abs(t["weight"]) for t in out["statement"] + out["proof"]]
    out["max_abs_weight"] = max(weights)
    passes = (
        0
        if not index.learned
        else (-(-len(statements) // batch_size) + -(-len(proofs) // batch_size))
        * max(1, len(index.members))
    )
    out["budget"] = {
        "perturbations": n_tokens,
        "tokens": n_tokens,
        "max_tokens": max_tokens,
        "encoder_batches": passes,
    }
    out["seconds"] = round(time.perf_counter() - t0, 4)
    return out


def _proof_row(index: SearchIndex, pair_id: str, part: str | None) -> int:
    """The index row of the proof to explain; refused when it is not one the search could rank or
    the index kept no proof tokens to mask."""
    if not isinstance(pair_id, str) or not pair_id.strip():
        raise QueryError("say which proof to explain: its pair id (id=…)")
    row = index.row_of.get(pair_id)
    if row is None:
        raise QueryError(f"no proof with id {pair_id!r} in this index")
    cands = index._candidates(part)
    if cands.rows is not None and index.table["part"].iat[row] != part:
        raise QueryError(f"proof {pair_id!r} is not among the proofs of the {part} part searched")
    if "proof_tokens" not in index.table.columns:
        raise QueryError(
            "this index was built without its proofs' tokens, so it cannot explain a result; "
            "rebuild it with `proofmatch index`"
        )
    return row


#: Per side (statement, proof): each half's scores of the unmasked pair (index 0) and of every masked variant.
Parts = dict[str, tuple[np.ndarray, np.ndarray]]


def _variant_scores(
    index: SearchIndex,
    q: Query,
    part: str | None,
    statements: list[list[str]],
    proofs: list[list[str]],
    batch_size: int,
) -> tuple[np.ndarray, np.ndarray, Parts, dict[str, Any]]:
    """The explained score of the pair and of each masked variant, per side; for a fusion index also
    each half's share of it (empty otherwise); and the explanation's ``explains`` (and ``fusion``) fields."""
    halves: Parts = {}
    if index.members:
        bm25 = lexical_cross(index, statements, proofs)
        return _member_scores(index, q, part, statements, proofs, bm25, batch_size)
    if index.learned:
        halves["learned"] = learned_cross(index, statements, proofs, batch_size)
    if index.lexical:
        halves["bm25" if index.method in ("bm25", "fusion") else "tfidf"] = lexical_cross(
            index, statements, proofs
        )
    if index.method == "fusion":
        return _fused_scores(index, q, part, halves)
    ((_, (s_scores, p_scores)),) = halves.items()
    explains = {
        "model": "the model's matching score of this pair",
        "bm25": "the pair's BM25 score",
        "tfidf": "the pair's TF-IDF cosine",
    }[index.method]
    return s_scores, p_scores, {}, {"explains": explains}


def _fused_scores(
    index: SearchIndex, q: Query, part: str | None, halves: Parts
) -> tuple[np.ndarray, np.ndarray, Parts, dict[str, Any]]:
    """The fused score of each variant, each half standardised with the pool's mean and standard
    deviation held fixed (module docstring), and the two halves' shares of it."""
    learned_all, bm25_all = index.learned_scores(q, part), index.lexical_scores(q, part)
    (ml, sl), (mb, sb) = _pool_stats(learned_all), _pool_stats(bm25_all)
    w = index.fusion_weight
    parts = {
        "learned": (_z(halves["learned"][0], ml, sl), _z(halves["learned"][1], ml, sl)),
        "bm25": (w * _z(halves["bm25"][0], mb, sb), w * _z(halves["bm25"][1], mb, sb)),
    }
    s_scores = parts["learned"][0] + parts["bm25"][0]
    p_scores = parts["learned"][1] + parts["bm25"][1]
    about = {
        "explains": (
            "the fused score z(learned) + λ·z(BM25) of this pair, with the mean and standard "
            "deviation of each half over the query's candidates held fixed"
        ),
        "fusion": {
            "weight": w,
            "learned": float(halves["learned"][0][0]),
            "bm25": float(halves["bm25"][0][0]),
            "pool": {
                "n": int(len(learned_all)),
                "learned_mean": ml,
                "learned_std": sl,
                "bm25_mean": mb,
                "bm25_std": sb,
            },
        },
    }
    return s_scores, p_scores, parts, about


def _member_scores(
    index: SearchIndex, q: Query, part: str | None, statements, proofs, lexical, batch_size: int
) -> tuple[np.ndarray, np.ndarray, Parts, dict[str, Any]]:
    """A fusion of several runs: each run's and BM25's weighted z-scores of the pair and of each
    masked variant (each run masks with its own unknown token), every pool's mean and standard
    deviation held fixed; the learned part is the runs' sum, each run's share a ``member:`` part."""
    halves = index.halves(q, part)
    parts: Parts = {}
    about_members = []
    for m, raw in zip(index.members, halves.members):
        mask = mask_token(m.matcher)
        A, B, row, col = m.matcher.factors(
            masked_variants(statements[0], mask), masked_variants(proofs[0], mask), batch_size
        )
        cross = _cross(A, B, row, col)
        mean, std = _pool_stats(raw)
        parts["member:" + m.name] = tuple(m.weight * _z(c, mean, std) for c in cross)
        about_members.append(
            {
                "name": m.name,
                "weight": m.weight,
                "score": float(cross[0][0]),
                "share": float(parts["member:" + m.name][0][0]),  # its weighted z-score
                "mask": mask,
                "pool_mean": mean,
                "pool_std": std,
            }
        )
    learned = tuple(sum(v[side] for v in parts.values()) for side in (0, 1))
    mb, sb = _pool_stats(halves.bm25)
    w = index.fusion_weight
    parts = {"learned": learned, "bm25": tuple(w * _z(c, mb, sb) for c in lexical), **parts}
    about = {
        "explains": (
            "the fused score Σ wᵢ·z(learnedᵢ) + λ·z(BM25) of this pair, with the mean and standard "
            "deviation of each run's and BM25's scores over the query's candidates held fixed"
        ),
        "fusion": {
            "weight": w,
            "learned": float(learned[0][0]),
            "bm25": float(lexical[0][0]),
            "members": about_members,
            "pool": {"n": int(len(halves.bm25)), "bm25_mean": mb, "bm25_std": sb},
        },
    }
    return learned[0] + parts["bm25"][0], learned[1] + parts["bm25"][1], parts, about


def _token_weights(
    toks: list[str], side: int, scores: np.ndarray, parts: Parts
) -> list[dict[str, Any]]:
    """Each token of one side with its contribution (the unmasked score minus its masked variant's)
    and, for fusion, each half's share."""
    contrib = scores[0] - scores[1:]
    split = {k: v[side][0] - v[side][1:] for k, v in parts.items() if ":" not in k}
    runs = {k.split(":", 1)[1]: v[side][0] - v[side][1:] for k, v in parts.items() if ":" in k}
    return [
        {
            "token": t,
            "shown": display_token(t),
            "math": is_math(t),
            "weight": float(contrib[i]),
            **{k: float(v[i]) for k, v in split.items()},
            **({"members": {k: float(v[i]) for k, v in runs.items()}} if runs else {}),
        }
        for i, t in enumerate(toks)
    ]
