"""A search index folder: what :mod:`proofmatch.search.build` writes and :mod:`proofmatch.search.index` reads.

An index folder holds

* ``index.json``: method (``model``, ``tfidf``, ``bm25`` or ``fusion``), size, parts, backend
  (``exact`` or ``faiss``) and, for a model or fusion index, the run it came from: the digest of
  the model files (:func:`files_digest`; loading checks it against the query encoder's copy in
  ``model/``), the training run's fingerprint (:func:`proofmatch.models.checkpoint.fingerprint`)
  and ``metrics.json`` (which records the fingerprint);
* ``proofs.parquet``: one row per pair, in the order of :func:`proofmatch.data.splits.read_parts`
  (parts in the order asked, file order within a part): pair_id, article_id, part, kind, title,
  statement_text, statement_xml, proof_xml, proof_text, statement_tokens, proof_tokens (an index
  built before proof tokens were stored cannot explain its results: :mod:`proofmatch.search.explain`);
* a model index: ``proof_vectors.npy`` ``B``, ``proof_bias.npy``, ``statement_vectors.npy``
  ``A``, ``statement_bias.npy`` from :meth:`proofmatch.models.matcher.Matcher.factors`, so that
  ``score = A @ B.T + row_bias + col_bias`` (paper §6: ``sᵀWp + b`` with ``sᵀW`` folded into
  ``A``) and a query costs one vector-matrix product. Each part is encoded with one ``factors``
  call on that part's statements and proofs, exactly as ``proofmatch evaluate``
  encodes the part it evaluates;
* a ``tfidf`` index (no model): ``vocabulary.json``, ``idf.npy`` and the TF-IDF vectors of the
  proofs (``proof_weights.npz``), fitted on the indexed statements and proofs (a search engine
  fits on its corpus; the baseline fits on the train part); a ``bm25`` index: the BM25Okapi
  weights of the proofs (:func:`proofmatch.scoring.lexical.bm25_fit`, idf over the indexed proofs,
  as the baseline computes it over the evaluated part), with ``bm25_idf.npy`` and ``index.json``'s
  ``bm25`` (k1, b, avgdl) to weight a changed proof;
* a ``fusion`` index: a model index's arrays and model and a ``bm25`` index's weights, and
  ``index.json``'s ``fusion`` (the weight λ, its source ``run`` or ``hand``, the run's
  ``fusion.json``); a fusion of several runs: each run's arrays in ``members/<i>/`` and model in
  ``model-<i>/``, ``index.json``'s ``members`` and the weights' source
  (:mod:`proofmatch.search.members`);
* above ``faiss_above`` proofs (default 100,000) a model index adds ``faiss.index``
  (:mod:`proofmatch.search.ann`).

The sparse vectors of a list of tokens are :mod:`proofmatch.scoring.lexical`'s
(:func:`~proofmatch.scoring.lexical.count_vectors`, :func:`~proofmatch.scoring.lexical.tfidf_vectors`):
building writes the proofs' vectors with them, and searching and explaining compute a query's (or
a masked proof's) the same way.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

MAX_EXPLAIN_TOKENS = 1200  # statement + proof tokens masked in one explanation (search.explain)

FORMAT = 1
META_FILE = "index.json"
PROOFS_FILE = "proofs.parquet"
MODEL_DIR = "model"
ARRAYS = ("statement_vectors", "statement_bias", "proof_vectors", "proof_bias")
BM25_IDF_FILE = "bm25_idf.npy"
#: A fusion index's λ is for z-score fusion: search fuses z-scores (scoring.fusion.standardize) and
#: explain holds their pool statistics; building refuses a run's λ chosen for another normalisation.
FUSION_NORMALIZE = "zscore"


def files_digest(folder: str | os.PathLike) -> str:
    """sha256 over the names and bytes of a folder's files (sorted): a model's identity. Hidden
    files are not the model's (Snakemake's ``.snakemake_timestamp`` in a declared folder)."""
    h = hashlib.sha256()
    files = (p for p in Path(folder).rglob("*") if p.is_file())
    for path in sorted(
        p for p in files if not any(n.startswith(".") for n in p.relative_to(folder).parts)
    ):
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()
