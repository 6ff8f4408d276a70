"""Search a corpus for the proofs of a statement with a trained matcher (or TF-IDF/BM25).

``proofmatch index`` encodes every proof once (:mod:`.build`; the folder's files :mod:`.folder`; the
loaded index is :mod:`.index`),
``proofmatch search`` ranks them for a query (:mod:`.query`, :mod:`.search_cli`), ``proofmatch
serve`` is the web page (:mod:`.web`);
above 100,000 proofs the search goes through FAISS (:mod:`.ann`). Fragments are shown through an
allow-list sanitizer (:mod:`.display`).
"""
