"""A loaded search index: a query is one product against proof vectors encoded once.

An index folder holds

* ``index.json``: method (``model``, ``tfidf`` or ``bm25``), size, parts, backend (``exact`` or
  ``faiss``) and, for a model, the run it came from: the digest of the model files, the training
  run's fingerprint (:func:`proofmatch.models.checkpoint.fingerprint`) and ``metrics.json``
  (which records the fingerprint). An index never mixes models: the query encoder is the copy in
  ``model/``, and loading checks its digest against ``index.json``;
* ``proofs.parquet``: one row per pair, in the order of :func:`proofmatch.data.splits.read_parts`
  (parts in the order asked, file order within a part): pair_id, article_id, part, kind, title,
  statement_text, statement_xml, proof_xml, statement_tokens;
* a model index: ``proof_vectors.npy`` ``B``, ``proof_bias.npy``, ``statement_vectors.npy``
  ``A``, ``statement_bias.npy`` from :meth:`proofmatch.models.matcher.Matcher.factors`, so that
  ``score = A @ B.T + row_bias + col_bias`` (paper §6: ``sᵀWp + b`` with ``sᵀW`` folded into
  ``A``) and a query costs one vector-matrix product. Each part is encoded with one ``factors``
  call on that part's statements and proofs, exactly as :func:`proofmatch.evaluation.evaluate.evaluate_run`
  encodes the part it evaluates, and a query's scores are computed as
  :func:`proofmatch.evaluation.decode.factor_scorer` computes a row (float32 ``a @ Bᵀ``, then ``+= row_bias``,
  then ``+= col_bias``) and ordered as :mod:`proofmatch.evaluation.decode` orders a top-k list (score
  descending; the statement's own proof after proofs tied with it; then index). So searching a
  statement by id among the proofs of its part returns evaluation's top-k list of that statement;
* a ``tfidf`` index (no model): the TF-IDF vectors of the proofs, fitted on the indexed
  statements and proofs (a search engine fits on its corpus; the baseline fits on the train
  part), cosine similarity as :mod:`proofmatch.evaluation.baselines`; a ``bm25`` index: the BM25Okapi
  weights of the proofs (:func:`proofmatch.evaluation.baselines.bm25_weights`, idf over the indexed proofs,
  as the baseline computes it over the evaluated part);
* above ``faiss_above`` proofs (default 100,000) a model index adds ``faiss.index``
  (:mod:`proofmatch.search.ann`).

Displayed fragments are the corpus's original XHTML (``pairs.parquet``); an index built from a
symbol-replaced level other than ``conservation`` scores the replaced tokens.

:mod:`proofmatch.search.build` writes the folder (``proofmatch index``); this module is what
reads it (:class:`SearchIndex`, used by ``proofmatch search`` and ``proofmatch serve``) and what
both sides share: the folder's names and format, the model digest, and the sparse vectors of a
query or a proof.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from proofmatch.artifacts import read_json
from proofmatch.search import ann
from proofmatch.search.display import fragment_text, safe_html
from proofmatch.search.query import MAX_QUERY_CHARS, Query, QueryError, parse_query

FORMAT = 1
MAX_RESULTS = 1000  # deepest rank a search may page to
META_FILE = "index.json"
PROOFS_FILE = "proofs.parquet"
MODEL_DIR = "model"
ARRAYS = ("statement_vectors", "statement_bias", "proof_vectors", "proof_bias")


# ----------------------------------------------------------------------------- shared with building


def files_digest(folder: str | os.PathLike) -> str:
    """sha256 over the names and bytes of a folder's files (sorted): a model's identity. Hidden
    files are not the model's (Snakemake's ``.snakemake_timestamp`` in a declared folder)."""
    h = hashlib.sha256()
    files = (p for p in Path(folder).rglob("*") if p.is_file())
    for path in sorted(p for p in files if not any(n.startswith(".") for n in p.relative_to(folder).parts)):
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def as_is(tokens: list[str]) -> list[str]:
    """Analyzer that takes linearized tokens as they are (as the baselines do)."""
    return tokens


def count_vectors(docs: Sequence[list[str]], vocab: dict[str, int]) -> sp.csr_matrix:
    """Raw token counts over a fixed vocabulary (a ``bm25`` query; the base of :func:`tfidf_vectors`)."""
    from sklearn.feature_extraction.text import CountVectorizer

    cv = CountVectorizer(analyzer=as_is, lowercase=False, vocabulary=vocab)
    return sp.csr_matrix(cv.transform(list(docs)), dtype=np.float64)


def tfidf_vectors(docs: Sequence[list[str]], vocab: dict[str, int], idf: np.ndarray) -> sp.csr_matrix:
    """scikit-learn's TfidfVectorizer transform (raw counts x idf, rows L2-normalised)."""
    from sklearn.preprocessing import normalize

    return normalize(count_vectors(docs, vocab) @ sp.diags(idf), norm="l2", copy=False).tocsr()


# ----------------------------------------------------------------------------- searching


def top_order(scores: np.ndarray, k: int, gold: int | None = None) -> np.ndarray:
    """Indices of the first k proofs in :mod:`proofmatch.evaluation.decode`'s total order: score descending,
    ``gold`` after the proofs tied with it, then index ascending (so at a tie on the k-th score the
    lowest indices are kept and the gold is the first left out)."""
    n = scores.shape[0]
    k = min(int(k), n)
    cand = np.flatnonzero(scores >= np.partition(scores, n - k)[n - k]) if k < n else np.arange(n)
    is_gold = cand == (-1 if gold is None else gold)
    return cand[np.lexsort((cand, is_gold, -scores[cand]))[:k]]


@dataclass
class Hit:
    rank: int
    row: int
    pair_id: str
    score: float
    is_own_proof: bool


class SearchIndex:
    """A loaded index folder: ``search(query)`` -> ranked proofs (module docstring)."""

    def __init__(self, path: str | os.PathLike, device: str | None = "cpu"):
        self.path = Path(path)
        if not (self.path / META_FILE).exists():
            raise FileNotFoundError(f"{self.path}: no {META_FILE}; build one with `proofmatch index`")
        self.meta = read_json(self.path / META_FILE)
        if self.meta.get("format") != FORMAT:
            raise ValueError(f"{self.path}: index format {self.meta.get('format')}, this proofmatch reads {FORMAT}; "
                             "rebuild it with `proofmatch index`")
        self.method: str = self.meta["method"]
        self.table = pd.read_parquet(self.path / PROOFS_FILE)
        self.ids = pd.Index(self.table["pair_id"])
        self.row_of = {pid: i for i, pid in enumerate(self.table["pair_id"])}
        self.n = len(self.table)
        self._parts: dict[str | None, tuple[np.ndarray | None, Any]] = {}
        self._html: dict[tuple[int, str], str] = {}
        self.matcher = None
        self.faiss = None
        if self.method == "model":
            for key in ARRAYS:
                setattr(self, key, np.load(self.path / f"{key}.npy"))
            digest = files_digest(self.path / MODEL_DIR)
            if digest != self.meta["model"]["digest"]:
                raise ValueError(f"{self.path}/{MODEL_DIR} is not the model this index was built with "
                                 "(digest differs); rebuild the index")
            from proofmatch.models.matcher import load_matcher

            self.matcher = load_matcher(self.path / MODEL_DIR, device)
            if self.meta["backend"] == "faiss":
                self.faiss = ann.load(str(self.path / ann.INDEX_FILE))
        else:
            self.vocab = json.loads((self.path / "vocabulary.json").read_text())
            self.weights_t = sp.load_npz(self.path / "proof_weights.npz").T.tocsr()
            self.idf = np.load(self.path / "idf.npy") if self.method == "tfidf" else None

    # -- queries -> vectors ------------------------------------------------------------------

    def parse(self, text: str, kind: str = "auto", max_chars: int = MAX_QUERY_CHARS) -> Query:
        return parse_query(text, self.row_of, kind, max_chars)

    def _query_vector(self, q: Query) -> tuple[Any, float]:
        """(vector, row bias) of a model query; (sparse row, 0) for tfidf/bm25."""
        if self.method == "model":
            if q.kind == "id":
                i = self.row_of[q.pair_id]
                return self.statement_vectors[i], float(self.statement_bias[i])
            A, _, row, _ = self.matcher.factors([q.tokens], [], batch_size=1)
            return A[0], float(row[0])
        tokens = list(q.tokens) if q.kind != "id" else list(self.table["statement_tokens"].iloc[self.row_of[q.pair_id]])
        if self.method == "tfidf":
            return tfidf_vectors([tokens], self.vocab, self.idf), 0.0
        return count_vectors([tokens], self.vocab), 0.0

    def _candidates(self, part: str | None) -> tuple[np.ndarray | None, Any]:
        """(rows of ``part`` or None for all, the transposed proof matrix over them), cached."""
        if part not in self._parts:
            rows = None
            if part is not None:
                if part not in self.meta["parts"]:
                    raise QueryError(f"part {part!r} is not in this index (parts: {', '.join(self.meta['parts'])})")
                rows = np.flatnonzero(self.table["part"].to_numpy() == part)
            if self.method == "model":
                B = self.proof_vectors if rows is None else self.proof_vectors[rows]
                mat = None if self.faiss is not None else np.ascontiguousarray(B.T)
            else:
                mat = self.weights_t if rows is None else self.weights_t[:, rows]
            self._parts[part] = (rows, mat)
        return self._parts[part]

    def scores(self, q: Query, part: str | None = None) -> np.ndarray:
        """All candidate scores of a query (exact), float32, in candidate order."""
        rows, mat = self._candidates(part)
        vec, rb = self._query_vector(q)
        if self.method == "model":
            if mat is None:
                mat = np.ascontiguousarray((self.proof_vectors if rows is None else self.proof_vectors[rows]).T)
            S = np.asarray(vec, np.float32)[None, :] @ mat
            S += np.float32(rb)
            S += self.proof_bias[None, :] if rows is None else self.proof_bias[rows][None, :]
            return S[0]
        return np.asarray((vec @ mat).toarray()[0], np.float32)

    def search(self, text: str, k: int = 10, offset: int = 0, part: str | None = None, kind: str = "auto",
               max_chars: int = MAX_QUERY_CHARS) -> tuple[Query, list[Hit]]:
        """The proofs ranked ``offset+1 .. offset+k`` for a query (``part``: only that part's proofs)."""
        if k < 1 or offset < 0 or offset + k > MAX_RESULTS:
            raise QueryError(f"results 1-{MAX_RESULTS} can be shown; asked for {offset + 1}-{offset + k}")
        q = self.parse(text, kind, max_chars)
        rows, _ = self._candidates(part)
        gold_row = self.row_of[q.pair_id] if q.kind == "id" else None
        if self.faiss is not None:
            order_rows, S = self._faiss_top(q, offset + k, rows)
        else:
            S = self.scores(q, part)
            gold = None
            if gold_row is not None:
                gold = gold_row if rows is None else int(np.searchsorted(rows, gold_row))
                if rows is not None and (gold >= len(rows) or rows[gold] != gold_row):
                    gold = None
            order = top_order(S, offset + k, gold)
            order_rows = order if rows is None else rows[order]
            S = S[order]
        hits = [Hit(offset + r + 1, int(i), str(self.table["pair_id"].iat[int(i)]), float(s), int(i) == gold_row)
                for r, (i, s) in enumerate(zip(order_rows[offset:], S[offset:]))]
        return q, hits

    def _faiss_top(self, q: Query, k: int, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """FAISS candidates, rescored exactly in float32 and ordered like the exact path."""
        vec, rb = self._query_vector(q)
        info = self.meta["faiss"]
        qv = ann.augment(np.asarray(vec, np.float32)[None, :], np.ones(1, np.float32) if info["augmented"] else None)
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
        if key not in self._html:
            xml = self.table[f"{side}_xml"].iat[row]
            if xml is None:
                from html import escape

                text = self.table["statement_text"].iat[row] if side == "statement" else "(no XHTML in this index)"
                self._html[key] = f"<p>{escape(str(text))}</p>"
            else:
                self._html[key] = safe_html(xml)
            if len(self._html) > 20000:
                self._html.clear()
        return self._html[key]

    def record(self, hit: Hit, proof_chars: int | None = 600) -> dict[str, Any]:
        """A hit as a JSON-ready dict (statement and proof as plain text)."""
        r = self.table.iloc[hit.row]
        proof = fragment_text(r["proof_xml"]) if r["proof_xml"] is not None else ""
        if proof_chars is not None and len(proof) > proof_chars:
            proof = proof[:proof_chars].rsplit(" ", 1)[0] + " …"
        return {"rank": hit.rank, "pair_id": hit.pair_id, "score": hit.score, "article_id": r["article_id"],
                "title": r["title"], "kind": r["kind"], "part": r["part"], "statement": r["statement_text"],
                "proof": proof, "is_own_proof": hit.is_own_proof}

    def size(self, part: str | None = None) -> int:
        """How many proofs a search over ``part`` (None: all) ranks."""
        return self.n if part is None else int(self.meta["part_sizes"].get(part, 0))

    def describe(self) -> dict[str, Any]:
        m = self.meta
        out = {"method": m["method"], "n": m["n"], "parts": m["parts"], "backend": m["backend"]}
        if m["method"] == "model":
            out["run_dir"] = m["run"]["run_dir"]
            out["encoder"] = m["model"]["config"]["encoder"]
        if m["backend"] == "faiss":
            out["faiss_recall_at_10"] = m["faiss"]["recall_at_10"]
        return out
