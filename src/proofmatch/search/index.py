"""A loaded search index: a query is one product against proof vectors encoded once.

:mod:`proofmatch.search.build` writes an index folder (``proofmatch index``; its files and what
building and searching share: :mod:`proofmatch.search.folder`); this module reads it
(:class:`SearchIndex`, used by ``proofmatch search`` and ``proofmatch serve``) and answers queries.

* A model index: a query's scores are computed as :func:`proofmatch.decoding.local.factor_scorer`
  computes a row (float32 ``a @ Bᵀ``, then ``+= row_bias``, then ``+= col_bias``) and ordered as
  :mod:`proofmatch.decoding.local` orders a top-k list (score descending; the statement's own proof
  after proofs tied with it; then index). So searching a statement by id among the proofs of its
  part returns evaluation's top-k list of that statement. An index never mixes models: the query
  encoder is the copy in ``model/``, and loading checks its digest against ``index.json``;
* a ``tfidf`` index scores by cosine similarity as :mod:`proofmatch.scoring.lexical`; a
  ``bm25`` index by the BM25Okapi weights of the proofs;
* a ``fusion`` index: a query's learned scores (one product) and BM25 scores (one sparse product)
  over the proofs it searches (all, or one ``part``) are fused by
  :func:`proofmatch.scoring.fusion.fuse`, so each half is standardised over exactly those
  candidates, as evaluation standardises over its pool. Fusion search is always exact;
* above ``faiss_above`` proofs (default 100,000) a model index searches FAISS's candidates
  (:mod:`proofmatch.search.ann`) and rescores them exactly.

Displayed fragments are the corpus's original XHTML (``pairs.parquet``); an index built from a
symbol-replaced level other than ``conservation`` scores the replaced tokens.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from proofmatch.artifacts import read_json, verify
from proofmatch.scoring.fusion import fuse
from proofmatch.scoring.lexical import BM25Fit, count_vectors, tfidf_vectors
from proofmatch.search import ann
from proofmatch.search.display import fragment_text, safe_html
from proofmatch.search.folder import (
    ARRAYS,
    FORMAT,
    FUSION_NORMALIZE,
    META_FILE,
    MODEL_DIR,
    PROOFS_FILE,
    files_digest,
)
from proofmatch.search.members import (  # noqa: F401 (this module's API)
    QUANTIZE,
    SettingError,
    attach_members,
    describe_members,
    load_members,
    member_halves,
    query_matcher,
)
from proofmatch.search.query import MAX_QUERY_CHARS, Query, QueryError, parse_query
from proofmatch.search.query_warnings import LANGUAGE_SAMPLE, warn_language, warn_unmatched

MAX_RESULTS = 1000  # deepest rank a search may page to
SCORERS = ("model", "tfidf", "bm25", "fusion")  # what answers a query: the index's method


# ----------------------------------------------------------------------------- searching


def top_order(scores: np.ndarray, k: int, gold: int | None = None) -> np.ndarray:
    """Indices of the first k proofs in :mod:`proofmatch.decoding.local`'s total order: score descending,
    ``gold`` after the proofs tied with it, then index ascending (so at a tie on the k-th score the
    lowest indices are kept and the gold is the first left out)."""
    n = scores.shape[0]
    k = min(int(k), n)
    cand = np.flatnonzero(scores >= np.partition(scores, n - k)[n - k]) if k < n else np.arange(n)
    is_gold = cand == (-1 if gold is None else gold)
    return cand[np.lexsort((cand, is_gold, -scores[cand]))[:k]]


@dataclass
class Hit:
    """One ranked proof. ``score`` is the score that ranked it (the fused score for a fusion
    index); a fusion hit also carries its halves and their own ranks among the same candidates
    (1 + the number of candidates scored strictly higher by that half alone)."""

    rank: int
    row: int
    pair_id: str
    score: float
    is_own_proof: bool
    learned: float | None = None
    bm25: float | None = None
    learned_rank: int | None = None
    bm25_rank: int | None = None
    members: list[dict] | None = None  # a fusion of several runs: each one's share (search.members)


@dataclass
class Candidates:
    """The proofs one search ranks (all, or one part) and their matrices, cached per part."""

    rows: np.ndarray | None  # index rows of the part; None: every proof
    dense: np.ndarray | None  # learned: proof vectors transposed (d x n); None with FAISS
    col_bias: np.ndarray | None  # learned: the proofs' column bias
    sparse: sp.csr_matrix | None  # tfidf/bm25: vocabulary x n

    @property
    def n(self) -> int:
        if self.col_bias is not None:
            return len(self.col_bias)
        return self.sparse.shape[1]


@dataclass
class Halves:
    """A fusion query's scores over its candidates: each half and the fused score."""

    learned: np.ndarray
    bm25: np.ndarray
    fused: np.ndarray
    members: list[np.ndarray] | None = None  # a fusion of several runs: each run's raw row


class SearchIndex:
    """A loaded index folder: ``search(query)`` -> ranked proofs (module docstring)."""

    def __init__(self, path: str | os.PathLike, device: str | None = "cpu", quantize: str = "none"):
        self.path = Path(path)
        if not (self.path / META_FILE).exists():
            raise FileNotFoundError(
                f"{self.path}: no {META_FILE}; build one with `proofmatch index`"
            )
        verify(self.path)  # every file of the folder against the digest written with it
        self.meta = read_json(self.path / META_FILE)
        if self.meta.get("format") != FORMAT:
            raise ValueError(
                f"{self.path}: index format {self.meta.get('format')}, this proofmatch reads {FORMAT}; "
                "rebuild it with `proofmatch index`"
            )
        self.method: str = self.meta["method"]
        self.table = pd.read_parquet(self.path / PROOFS_FILE)  # checked with the folder above
        self.ids = pd.Index(self.table["pair_id"])
        self.row_of = {pid: i for i, pid in enumerate(self.table["pair_id"])}
        self.n = len(self.table)
        self._parts: dict[str | None, Candidates] = {}
        self._html: dict[tuple[int, str], str] = {}
        self.matcher = None
        self.faiss = None
        if self.method not in SCORERS:
            raise ValueError(
                f"{self.path}: unknown index method {self.method!r}; this proofmatch reads {SCORERS}"
            )
        self.learned = self.method in ("model", "fusion")
        self.lexical = self.method in ("tfidf", "bm25", "fusion")
        if quantize != "none" and not self.learned:
            raise SettingError(f"a {self.method} index encodes no query: nothing to quantize")
        self.quantize = quantize
        self.members = []  # a fusion of several runs (search.members); none for one run
        if self.learned and "members" in self.meta:
            self.members = load_members(self.path, self.meta, device, quantize)
        elif self.learned:
            for key in ARRAYS:
                setattr(self, key, np.load(self.path / f"{key}.npy"))
            digest = files_digest(self.path / MODEL_DIR)
            if digest != self.meta["model"]["digest"]:
                raise ValueError(
                    f"{self.path}/{MODEL_DIR} is not the model this index was built with "
                    "(digest differs); rebuild the index"
                )
            from proofmatch.models.matcher import load_matcher

            self.matcher = load_matcher(self.path / MODEL_DIR, device)
            self.query_matcher = query_matcher(self.matcher, quantize)
            if self.meta["backend"] == "faiss":
                if self.method == "fusion":
                    raise ValueError(
                        f"{self.path}: a fusion index cannot use FAISS (its scores are standardised "
                        "over every candidate); rebuild it with --backend exact"
                    )
                self.faiss = ann.load(str(self.path / ann.INDEX_FILE))
        if self.lexical:
            self.vocab = json.loads((self.path / "vocabulary.json").read_text())
            self.weights_t = sp.load_npz(self.path / "proof_weights.npz").T.tocsr()
            self.idf = np.load(self.path / "idf.npy") if self.method == "tfidf" else None
        self.bm25_fit = (
            None  # BM25's statistics, to weight a changed proof (an explanation's masked one)
        )
        if self.method in ("bm25", "fusion") and "bm25" in self.meta:
            info = self.meta["bm25"]
            self.bm25_fit = BM25Fit(
                self.vocab,
                np.load(self.path / info["idf"]),
                float(info["k1"]),
                float(info["b"]),
                float(info["avgdl"]),
            )
        if self.method == "fusion":
            self.fusion_weight = float(self.meta["fusion"]["weight"])

    # -- queries -> vectors ------------------------------------------------------------------

    def parse(self, text: str, kind: str = "auto", max_chars: int = MAX_QUERY_CHARS) -> Query:
        return parse_query(text, self.row_of, kind, max_chars)

    def query_tokens(self, q: Query) -> list[str]:
        """The statement tokens a query scores with (a stored statement's for an id query)."""
        if q.kind == "id":
            return [str(t) for t in self.table["statement_tokens"].iat[self.row_of[q.pair_id]]]
        return list(q.tokens)

    def _learned_query(self, q: Query) -> tuple[np.ndarray, float]:
        """(statement vector, row bias) of a query: the stored ones for an id, else one encoding."""
        if q.kind == "id":
            i = self.row_of[q.pair_id]
            return self.statement_vectors[i], float(self.statement_bias[i])
        import torch

        with torch.inference_mode():
            A, _, row, _ = self.query_matcher.factors([q.tokens], [], batch_size=1)
        return A[0], float(row[0])

    def _lexical_query(self, q: Query) -> sp.csr_matrix:
        """The query's sparse row: TF-IDF vector, or term counts for BM25."""
        tokens = self.query_tokens(q)
        if self.method == "tfidf":
            return tfidf_vectors([tokens], self.vocab, self.idf)
        return count_vectors([tokens], self.vocab)

    def _query_vector(self, q: Query) -> tuple[Any, float]:
        """(vector, row bias) of a model query; (sparse row, 0) for tfidf/bm25."""
        if self.method == "model":
            return self._learned_query(q)
        return self._lexical_query(q), 0.0

    def _candidates(self, part: str | None) -> Candidates:
        """The proofs a search over ``part`` (None: all) ranks, with their matrices (cached)."""
        if part not in self._parts:
            rows = None
            if part is not None:
                if part not in self.meta["parts"]:
                    raise QueryError(
                        f"part {part!r} is not in this index (parts: {', '.join(self.meta['parts'])})"
                    )
                rows = np.flatnonzero(self.table["part"].to_numpy() == part)
            dense = col = sparse = None
            if self.learned and not self.members:
                B = self.proof_vectors if rows is None else self.proof_vectors[rows]
                dense = None if self.faiss is not None else np.ascontiguousarray(B.T)
                col = self.proof_bias if rows is None else self.proof_bias[rows]
            if self.lexical:
                sparse = self.weights_t if rows is None else self.weights_t[:, rows]
            self._parts[part] = Candidates(rows, dense, col, sparse)
        return self._parts[part]

    def learned_scores(self, q: Query, part: str | None = None) -> np.ndarray:
        """The model's scores of every candidate (float32 ``a @ Bᵀ``, ``+= row_bias``, ``+= col_bias``,
        as :func:`proofmatch.decoding.local.factor_scorer` computes a row)."""
        c = self._candidates(part)
        vec, rb = self._learned_query(q)
        mat = c.dense
        if mat is None:  # FAISS index: the exact scores on request
            mat = np.ascontiguousarray(
                (self.proof_vectors if c.rows is None else self.proof_vectors[c.rows]).T
            )
        S = np.asarray(vec, np.float32)[None, :] @ mat
        S += np.float32(rb)
        S += c.col_bias[None, :]
        return S[0]

    def lexical_scores(self, q: Query, part: str | None = None) -> np.ndarray:
        """TF-IDF cosine or BM25 scores of every candidate: one sparse product."""
        c = self._candidates(part)
        return np.asarray((self._lexical_query(q) @ c.sparse).toarray()[0], np.float32)

    def halves(self, q: Query, part: str | None = None) -> Halves:
        """A fusion index's learned, BM25 and fused scores of every candidate of ``part``: each half
        standardised over exactly these candidates (:func:`proofmatch.scoring.fusion.fuse`)."""
        if self.method != "fusion":
            raise ValueError(f"a {self.method} index has no fusion halves")
        if self.members:
            return Halves(*member_halves(self, q, part))
        learned, bm25 = self.learned_scores(q, part), self.lexical_scores(q, part)
        return Halves(
            learned,
            bm25,
            fuse(learned[None, :], bm25[None, :], self.fusion_weight, normalize=FUSION_NORMALIZE)[
                0
            ],
        )

    def scores(self, q: Query, part: str | None = None) -> np.ndarray:
        """All candidate scores of a query (exact), float32, in candidate order: the scores that rank
        (fused for a fusion index)."""
        if self.method == "fusion":
            return self.halves(q, part).fused
        if self.method == "model":
            return self.learned_scores(q, part)
        return self.lexical_scores(q, part)

    def search(
        self,
        text: str | Query,
        k: int = 10,
        offset: int = 0,
        part: str | None = None,
        kind: str = "auto",
        max_chars: int = MAX_QUERY_CHARS,
    ) -> tuple[Query, list[Hit]]:
        """The proofs ranked ``offset+1 .. offset+k`` for a query (``part``: only that part's proofs);
        ``text`` may be a query parsed already (:meth:`parse`: the server converts formulas first,
        outside its lock)."""
        if k < 1 or offset < 0 or offset + k > MAX_RESULTS:
            raise QueryError(
                f"results 1-{MAX_RESULTS} can be shown; asked for {offset + 1}-{offset + k}"
            )
        q = text if isinstance(text, Query) else self.parse(text, kind, max_chars)
        warn_unmatched(q, self.proof_vocabulary, self.method)
        warn_language(q, self.corpus_language)
        rows = self._candidates(part).rows
        gold_row = self.row_of[q.pair_id] if q.kind == "id" else None
        halves = None
        if self.faiss is not None:
            order_rows, S = self._faiss_top(q, offset + k, rows)
        else:
            if self.method == "fusion":
                halves = self.halves(q, part)
                S = halves.fused
            else:
                S = self.scores(q, part)
            gold = None
            if gold_row is not None:
                gold = gold_row if rows is None else int(np.searchsorted(rows, gold_row))
                if rows is not None and (gold >= len(rows) or rows[gold] != gold_row):
                    gold = None
            order = top_order(S, offset + k, gold)[offset:]
            order_rows = order if rows is None else rows[order]
            S = S[order]
        if self.faiss is not None:
            order_rows, S = order_rows[offset:], S[offset:]
        hits = [
            Hit(
                offset + r + 1,
                int(i),
                str(self.table["pair_id"].iat[int(i)]),
                float(s),
                int(i) == gold_row,
            )
            for r, (i, s) in enumerate(zip(order_rows, S))
        ]
        if halves is not None and hits:
            for name, scores in (("learned", halves.learned), ("bm25", halves.bm25)):
                mine = scores[order]
                # one comparison matrix, k x n
                ranks = 1 + (scores[None, :] > mine[:, None]).sum(axis=1)
                for h, value, rank in zip(hits, mine, ranks):
                    setattr(h, name, float(value))
                    setattr(h, f"{name}_rank", int(rank))
            if halves.members is not None:
                attach_members(hits, halves, order, self.members)
        return q, hits

    def proof_vocabulary(self) -> set[str] | dict:
        """The tokens that occur in the index's proofs (a lexical index's vocabulary; else read once
        from the stored proof tokens)."""
        if self.lexical:
            return self.vocab
        if getattr(self, "_proof_vocab", None) is None:
            self._proof_vocab = (
                {str(t) for toks in self.table["proof_tokens"] for t in toks}
                if "proof_tokens" in self.table.columns
                else set()
            )
        return self._proof_vocab

    def corpus_language(self) -> str | None:
        """The language of the index's proofs (polyglot on the text of up to
        :data:`LANGUAGE_SAMPLE` of them, spread over the index), or None when not reliably known."""
        if not hasattr(self, "_language"):
            self._language = None
            if "proof_text" in self.table.columns and self.n:
                from proofmatch.data.filter_rules import detect_language

                step = max(1, self.n // LANGUAGE_SAMPLE)
                sample = " ".join(str(t) for t in self.table["proof_text"].iloc[::step])
                status, code, _ = detect_language(sample)
                self._language = code if status == "reliable" else None
        return self._language

    def _faiss_top(
        self, q: Query, k: int, rows: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """FAISS candidates, rescored exactly in float32 and ordered like the exact path."""
        vec, rb = self._learned_query(q)
        info = self.meta["faiss"]
        qv = ann.augment(
            np.asarray(vec, np.float32)[None, :],
            np.ones(1, np.float32) if info["augmented"] else None,
        )
        _, ids = ann.search(self.faiss, qv, k, info["nprobe"], rows)
        ids = ids[0][ids[0] >= 0]
        S = np.asarray(vec, np.float32)[None, :] @ np.ascontiguousarray(self.proof_vectors[ids].T)
        S += np.float32(rb)
        S += self.proof_bias[ids][None, :]
        gold = None
        if q.kind == "id":
            own = np.flatnonzero(ids == self.row_of[q.pair_id])
            gold = int(own[0]) if len(own) else None
        order = top_order(S[0], len(ids), gold)
        return ids[order], S[0][order]

    # -- results for people ------------------------------------------------------------------

    def html(self, row: int, side: str) -> str:
        """Sanitized HTML + MathML of a stored statement or proof (cached)."""
        key = (row, side)
        cached = self._html.get(key)  # searches run in threads: one lookup, no check-then-read
        if cached is None:
            xml = self.table[f"{side}_xml"].iat[row]
            if xml is None:
                from html import escape

                text = (
                    self.table["statement_text"].iat[row]
                    if side == "statement"
                    else "(no XHTML in this index)"
                )
                cached = f"<p>{escape(str(text))}</p>"
            else:
                cached = safe_html(xml)
            if len(self._html) >= 20000:
                self._html.clear()
            self._html[key] = cached
        return cached

    def record(self, hit: Hit, proof_chars: int | None = 600) -> dict[str, Any]:
        """A hit as a JSON-ready dict (statement and proof as plain text); a fusion hit adds
        ``learned_score``, ``bm25_score``, ``learned_rank`` and ``bm25_rank``."""
        t, i = self.table, hit.row
        if "proof_text" in t.columns:
            proof = t["proof_text"].iat[i]
        else:  # an index built before the text was stored: read it from the XHTML
            proof = (
                fragment_text(t["proof_xml"].iat[i]) if t["proof_xml"].iat[i] is not None else ""
            )
        if proof_chars is not None and len(proof) > proof_chars:
            proof = proof[:proof_chars].rsplit(" ", 1)[0] + " …"
        out = {
            "rank": hit.rank,
            "pair_id": hit.pair_id,
            "score": hit.score,
            "article_id": t["article_id"].iat[i],
            "title": t["title"].iat[i],
            "kind": t["kind"].iat[i],
            "part": t["part"].iat[i],
            "statement": t["statement_text"].iat[i],
            "proof": proof,
            "is_own_proof": hit.is_own_proof,
        }
        if hit.learned is not None:
            out.update(
                learned_score=hit.learned,
                bm25_score=hit.bm25,
                learned_rank=hit.learned_rank,
                bm25_rank=hit.bm25_rank,
            )
        if hit.members is not None:
            out["members"] = hit.members
        return out

    def size(self, part: str | None = None) -> int:
        """How many proofs a search over ``part`` (None: all) ranks."""
        return self.n if part is None else int(self.meta["part_sizes"].get(part, 0))

    def describe(self) -> dict[str, Any]:
        """The index in a few fields (the page's header, the API's ``index``); ``scorer`` names what
        answers a query (the method)."""
        m = self.meta
        out = {
            "method": m["method"],
            "scorer": m["method"],
            "n": m["n"],
            "parts": m["parts"],
            "backend": m["backend"],
        }
        if m["method"] in ("model", "fusion"):
            out["query_encoder"] = "float32" if self.quantize == "none" else self.quantize
            if "members" in m:
                out.update(describe_members(m))
            else:
                out["run_dir"] = m["run"]["run_dir"]
                out["encoder"] = m["model"]["config"]["encoder"]
        if m["method"] == "fusion":
            out["fusion_weight"] = m["fusion"]["weight"]
            out["fusion_weight_source"] = m["fusion"]["source"]
        if m["backend"] == "faiss":
            out["faiss_recall_at_10"] = m["faiss"]["recall_at_10"]
        return out
