"""Tokens as the scorers and their explanations see them: a column as token lists, a token drawn.

Evaluation, the baselines, fusion and the search index all score the token lists of a Parquet
column (:func:`token_lists`); Figure 2's LIME and the search page's occlusion both show a token
without whitespace (:func:`display_token`) and mask one in place with the matcher's unknown
token (:func:`mask_token`), so a masked text keeps its positions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from proofmatch.data import views as tok

DEFAULT_UNK = "[UNK]"  # the mask of a scorer that names no ``unk_token`` (BM25, TF-IDF, a fake)
_WS = re.compile(r"\s+")


def token_lists(column: Iterable[Iterable[object]], which: tok.View = "both") -> list[list[str]]:
    """Plain Python token lists of one input view (Parquet gives arrays; matchers want lists)."""
    return [tok.view([str(t) for t in toks], which) for toks in column]


def display_token(token: str) -> str:
    """How a token is drawn and what LIME sees: no whitespace; math shown without its ``$``."""
    if tok.is_math(token):
        symbol, variant = tok.split_math(token)
        token = symbol if not variant else f"{symbol}[{variant}]"
    return _WS.sub("_", token) or "_"


def mask_token(scorer: object) -> str:
    """The token that masks another for ``scorer``: its ``unk_token`` attribute, else
    :data:`DEFAULT_UNK` (also for ``None``, an index without a model)."""
    return str(getattr(scorer, "unk_token", DEFAULT_UNK))
