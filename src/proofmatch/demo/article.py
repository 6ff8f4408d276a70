"""Who each demo article is (:func:`article_specs`) and what a planned article holds.

:class:`Spec` is decided before any content, from ``(index, seed)`` alone: language, categories,
markup dialect, compression and the special cases some indices stand for.
:class:`Article` is the planned content (:func:`proofmatch.demo.plan.plan_article`): sections of
:class:`Block` elements whose text is still template output (TeX formulas, ``\\ref``, ``\\cite``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from proofmatch.demo.templates import load_language
from proofmatch.texmath.dialects import DIALECTS

#: Non-English articles: article index -> (language, primary category). Indices past
#: ``n_articles`` are simply not generated.
FOREIGN: dict[int, tuple[str, str]] = {
    7: ("fr", "math.AP"),
    19: ("de", "math.FA"),
    31: ("ru", "math.PR"),
    43: ("fr", "math.PR"),
    55: ("de", "math.FA"),
}
#: Primary categories of the English articles, cycled (math.PR twice: the probability split).
CATEGORY_CYCLE = (
    "math.PR",
    "math.CO",
    "math.NT",
    "math.PR",
    "math.FA",
    "math.AG",
    "math.GR",
    "math.AP",
)
#: An article with no theorem environment at all (a survey): index.
NO_THEOREMS_INDEX = 13
#: An arXMLiv article whose theorem ids restart in every section (duplicate ids): index.
FLAT_IDS_INDEX = 1
#: Share of the articles (from index 4, without named entities) in the ``arxmliv_ltx`` markup,
#: drawn from a random stream of its own so that the other articles keep their bytes.
ARXMLIV_LTX_SHARE = 0.2
#: An article that is always in the ``arxmliv_ltx`` markup (small corpora have one too): index.
ARXMLIV_LTX_INDEX = 11


@dataclass
class Spec:
    """Who an article is, decided before its content: a pure function of (index, seed)."""

    index: int
    article_id: str
    lang: str
    primary: str
    categories: list[str]
    dialect: str
    gz: bool
    named_entities: bool = False
    no_theorems: bool = False
    flat_ids: bool = False


@dataclass
class Block:
    """A theorem-like element (with or without proof), a plain paragraph or a detached proof."""

    kind: str  # lemma, theorem, ..., definition, remark, example, para, proof
    number: str = ""
    anchor: str = ""
    name: str | None = None
    body: list[str] = field(default_factory=list)
    proof: list[str] | None = None
    proof_title: str = ""


@dataclass
class Section:
    """A numbered section: its title and its blocks in order."""

    number: int
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Article:
    """A planned article: everything :func:`proofmatch.demo.markup.render_article` writes."""

    spec: Spec
    title: str
    authors: list[str]
    abstract: str
    sections: list[Section]
    bib: list[tuple[str, str, str]]  # (key, label, entry text)
    anchors: dict[str, tuple[str, str]]  # anchor -> (kind word, number)


def article_specs(n_articles: int, seed: int) -> list[Spec]:
    """The identity of every regular article (language, category, dialect, compression)."""
    specs = []
    for index in range(n_articles):
        rng = random.Random(f"proofmatch-demo:{seed}:spec:{index}")
        lang, primary = FOREIGN.get(index, ("en", CATEGORY_CYCLE[index % len(CATEGORY_CYCLE)]))
        data = load_language(lang)
        secondary_pool = data["categories"][primary]["secondary"]
        k = rng.choices((0, 1, 2), weights=(0.45, 0.4, 0.15))[0]
        categories = [primary, *rng.sample(secondary_pool, min(k, len(secondary_pool)))]
        # The first articles fix the mix for small corpora: both older dialects, both file kinds
        # (ARXMLIV_LTX_INDEX adds the third dialect).
        dialect = (
            DIALECTS[index % 2] if index < 4 else ("arxmliv" if rng.random() < 0.35 else "latexml")
        )
        gz = index in (0, 3) or (index >= 4 and rng.random() < 0.5)
        named_entities = dialect == "arxmliv" and rng.random() < 0.25
        markup = random.Random(f"proofmatch-demo:{seed}:markup:{index}")
        if index == ARXMLIV_LTX_INDEX or (
            index >= 4 and not named_entities and markup.random() < ARXMLIV_LTX_SHARE
        ):
            dialect, named_entities = "arxmliv_ltx", False
        specs.append(
            Spec(
                index=index,
                article_id=f"demo-{index + 1:04d}",
                lang=lang,
                primary=primary,
                categories=categories,
                dialect=dialect,
                gz=gz,
                named_entities=named_entities,
                no_theorems=index == NO_THEOREMS_INDEX,
                flat_ids=index == FLAT_IDS_INDEX,
            )
        )
    return specs
