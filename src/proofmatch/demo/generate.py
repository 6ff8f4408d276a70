"""The project's demo corpus: a deterministic generator of LaTeXML / arXMLiv XHTML articles.

Why a generator and not a download: the pipeline needs a corpus that every checkout can build in
seconds, that exercises every extraction skip and every pair filter, and that is hard enough for
the models to be worth comparing. The text is produced from small templates written for this
project (``demo_data/<lang>.yaml``); nothing is copied from real papers.

What the output looks like (one article per file, ``out_dir/xhtml/<article_id>.xhtml[.gz]``):

* three markup dialects, as real converters produced them:
  ``latexml`` (LaTeXML 0.8 / ar5iv: ``div.ltx_theorem.ltx_theorem_<kind>`` with a run-in
  ``h6.ltx_title_theorem``, sibling ``div.ltx_proof`` titled "Proof." and ending in ∎, math as
  ``<math alttext=...><semantics>`` presentation + ``annotation-xml`` Content MathML (ids and
  xrefs) + ``annotation application/x-tex``, Unicode math alphabets ℝ 𝐱 𝒜 with
  ``ltx_font_mathcaligraphic``), ``arxmliv`` (2011 arXMLiv as inferred from LaTeXML's source of
  the period: unprefixed classes ``theorem lemma`` / ``proof``, ``m:``-prefixed MathML,
  ``mathvariant`` attributes, no alttext and no TeX annotation, and some formulas in Content
  MathML only) and ``arxmliv_ltx`` (2011 arXMLiv as real articles of that era have it: every
  statement ``div class="theorem ltx_thm"``, its kind only in the title
  ``h6 class="title bold theorem-title"`` "Theorem 2.1.", MathML in a default namespace with
  ``semantics``: presentation + ``annotation-xml`` Content MathML + TeX annotation; about a
  fifth of the articles, :data:`ARXMLIV_LTX_SHARE`);
* per-article notation (which letter is the random variable, the group, the domain), shared by
  statements and proofs, so symbol replacement changes something and a model can learn from it;
* proofs that restate their statement only partly, padded with the article's other facts, so a
  TF-IDF baseline lands in the 20-60 MRR range instead of near 100 (see ``tests/test_demo.py``);
* work for every filter: non-English articles (fr, de, ru), omitted and reference-only proofs,
  too short and too long pairs, title-only statements and proofs, theorem-like elements without
  a proof (definitions, remarks, examples, lemmas followed by a comment, a main theorem proved
  later), and a fixed set of hostile files (:data:`HOSTILE`) for the extraction skip counters;
  a few arXMLiv articles use the MathML DTD's named entities (``&nbsp;``, ``&InvisibleTimes;``)
  and one repeats its theorem ids in every section (duplicate statement ids).

Everything is a pure function of ``(n_articles, seed)``: ``random.Random`` seeded with strings,
gzip with ``mtime=0``, no clock, no set iteration. Same arguments, same bytes.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import logging
import random
import re
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import yaml

from proofmatch.logs import setup_logging
from proofmatch.artifacts import atomic_path, write_text
from proofmatch.demo.texmath import DIALECTS, TexError, arxmliv_form, attr_escape, render_math, xml_escape

log = logging.getLogger(__name__)

METADATA_COLUMNS = ("article_id", "file", "title", "primary_category", "categories")
LANGUAGES = ("en", "fr", "de", "ru")

#: Hostile files written besides the regular articles: name suffix -> (file suffix, what it is).
HOSTILE: dict[str, tuple[str, str]] = {
    "empty": (".xhtml", "zero bytes"),
    "truncated": (".xhtml", "a valid article cut in the middle"),
    "truncated-gz": (".xhtml.gz", "a gzip stream cut in the middle"),
    "not-gzip": (".xhtml.gz", "plain XHTML behind a .gz name"),
    "binary": (".xhtml", "random bytes"),
    "latin1": (".xhtml", "Latin-1 bytes under an UTF-8 declaration"),
    "malformed": (".xhtml", "mismatched end tags"),
    "deep": (".xhtml", "element nesting deeper than libxml2's 256 levels"),
    "entity-bomb": (".xhtml", "nested internal-DTD entities (billion laughs, small)"),
}

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
CATEGORY_CYCLE = ("math.PR", "math.CO", "math.NT", "math.PR", "math.FA", "math.AG", "math.GR", "math.AP")
#: An article with no theorem environment at all (a survey): index.
NO_THEOREMS_INDEX = 13
#: An arXMLiv article whose theorem ids restart in every section (duplicate ids): index.
FLAT_IDS_INDEX = 1
#: Share of the articles (from index 4, without named entities) in the ``arxmliv_ltx`` markup,
#: drawn from a random stream of its own so that the other articles keep their bytes.
ARXMLIV_LTX_SHARE = 0.2
#: An article that is always in the ``arxmliv_ltx`` markup (small corpora have one too): index.
ARXMLIV_LTX_INDEX = 11

#: Kinds of statements that get proofs, with weights.
PROVED_KINDS = (("lemma", 45), ("theorem", 14), ("proposition", 20), ("corollary", 15), ("claim", 6))

#: The share of pairs given each special treatment (the rest are ordinary pairs).
SPECIAL_PAIRS = (
    ("omitted", 0.035),
    ("reference_only", 0.04),
    ("short_proof", 0.02),
    ("short_statement", 0.025),
    ("long_proof", 0.03),
    ("title_only_statement", 0.012),
    ("title_only_proof", 0.006),
)

# Difficulty knobs, tuned so that TF-IDF (statements vs proofs, 10% held out) scores 30-40 MRR,
# like real corpora (about 32 on the Stacks chapters). With RESTATEMENT = 0 the article-level
# signal alone (notation, category vocabulary) gives about 25; see tests/test_demo.py.
#: Weights of a role's candidate symbols: most articles share the first (common notation).
NOTATION_WEIGHTS = (0.8, 0.15, 0.05, 0.05)
#: Share of its category's facts an article talks about (its topic).
ARTICLE_FACTS = 0.85
#: Probability that a distractor fact in a proof comes from the article's topic, not the category.
ARTICLE_DISTRACTORS = 0.5
#: Mean probability that a proof slot restates the statement's own hypothesis or conclusion.
RESTATEMENT = 0.25

# ============================================================================================
# templates


@lru_cache(maxsize=None)
def load_language(lang: str) -> dict[str, Any]:
    """The templates of one language (``demo_data/<lang>.yaml``), roles resolved from English."""
    if lang not in LANGUAGES:
        raise ValueError(f"no demo templates for language {lang!r}; have {LANGUAGES}")
    text = resources.files("proofmatch.demo").joinpath("demo_data", f"{lang}.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    if lang != "en":
        english = load_language("en")["categories"]
        for cat in data["categories"].values():
            cat["roles"] = english[cat.pop("roles_from")]["roles"]
    return data


_ROLE = re.compile(r"@([A-Za-z]+)")
_ALT = re.compile(r"\[\[(.*?)\]\]")
_SLOT = re.compile(
    r"\{(hyp2?|concl2?|hypm|conclm|fact2?|factm|intro|ref|cite|step|term|termsym|sec|self|topic2?|Topic)\}"
)
_DISPLAY_SLOT = re.compile(r"\$\$\{(hypm|conclm|factm)\}\$\$")
_INLINE_MATH = re.compile(r"(?<!\$)\$([^$]+)\$(?!\$)")
_RELATION = re.compile(
    r"[=<>]|\\(?:le|ge|ne|in|to|subset|subseteq|sim|ll|gg|cong|equiv|mid|nmid|hookrightarrow)(?![A-Za-z])"
)
_PIECE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\ref\{([^}]*)\}|\\cite\{([^}]*)\}(?:\[([^\]]*)\])?")
_COMMAND_END = re.compile(r"\\[A-Za-z]+$")


def choose_notation(roles: dict[str, list[str]], rng: random.Random) -> dict[str, str]:
    """The article's symbol for every role: mostly the first candidate, so that many articles
    share conventions (as real papers do), and never one symbol for two roles."""
    used: set[str] = set()
    out: dict[str, str] = {}
    for role, candidates in roles.items():
        weights = NOTATION_WEIGHTS[: len(candidates)]
        first = rng.choices(candidates, weights=weights)[0]
        pick = next((c for c in [first, *candidates] if c not in used), None)
        if pick is None:
            raise ValueError(f"role {role!r}: every candidate {candidates} is taken by another role")
        used.add(pick)
        out[role] = pick
    return out


def substitute_roles(text: str, notation: dict[str, str]) -> str:
    """Replace ``@role`` by the article's TeX symbol (a space after ``\\cmd`` before a letter)."""

    def sub(m: re.Match[str]) -> str:
        try:
            value = notation[m.group(1)]
        except KeyError:
            raise TexError(f"unknown notation role @{m.group(1)} in {text!r}") from None
        if _COMMAND_END.search(value) and text[m.end() : m.end() + 1].isalpha():
            value += " "
        return value

    return _ROLE.sub(sub, text)


def main_formula(text: str) -> str | None:
    """The TeX of a realized fact's main formula: its longest inline formula with a relation
    (``E|X| < \\infty``, not a lone ``X``), so that "we obtain {factm}" reads as mathematics."""
    formulas = [m.group(1) for m in _INLINE_MATH.finditer(text) if _RELATION.search(m.group(1))]
    return max(formulas, key=len) if formulas else None


def split_pieces(text: str) -> list[tuple[str, ...]]:
    """A realized paragraph as pieces: ``(text,)``, ``(math, tex)``, ``(display, tex)``,
    ``(ref, anchor)``, ``(cite, key, extra)``."""
    pieces: list[tuple[str, ...]] = []
    pos = 0
    for m in _PIECE.finditer(text):
        if m.start() > pos:
            pieces.append(("text", text[pos : m.start()]))
        if m.group(1) is not None:
            pieces.append(("display", m.group(1).strip()))
        elif m.group(2) is not None:
            pieces.append(("math", m.group(2).strip()))
        elif m.group(3) is not None:
            pieces.append(("ref", m.group(3)))
        else:
            pieces.append(("cite", m.group(4), m.group(5) or ""))
        pos = m.end()
    if pos < len(text):
        pieces.append(("text", text[pos:]))
    return pieces


@dataclass
class Fact:
    """A realized fact: its sentence fragment and the TeX of its first formula."""

    text: str
    math: str | None


# ============================================================================================
# planning an article (content only, no markup)


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
    number: int
    title: str
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Article:
    spec: Spec
    title: str
    authors: list[str]
    abstract: str
    sections: list[Section]
    bib: list[tuple[str, str, str]]  # (key, label, entry text)
    anchors: dict[str, tuple[str, str]]  # anchor -> (kind word, number)


SURNAMES = tuple(
    "Abele Baker Costa Dubois Eriksen Fischer Garcia Horvat Ivanova Jensen Kowalski Lindqvist Moreau"
    " Nakamura Olsen Petrov Quist Rossi Schmidt Tanaka Urban Varga Weber Yilmaz Zhou".split()
)
INITIALS = "ABCDEFGHJKLMNOPRSTVW"


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
        dialect = DIALECTS[index % 2] if index < 4 else ("arxmliv" if rng.random() < 0.35 else "latexml")
        gz = index in (0, 3) or (index >= 4 and rng.random() < 0.5)
        named_entities = dialect == "arxmliv" and rng.random() < 0.25
        markup = random.Random(f"proofmatch-demo:{seed}:markup:{index}")
        if index == ARXMLIV_LTX_INDEX or (index >= 4 and not named_entities and markup.random() < ARXMLIV_LTX_SHARE):
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


class Planner:
    """Realizes the templates of one article with its own random stream and notation."""

    def __init__(self, spec: Spec, seed: int) -> None:
        self.spec = spec
        self.rng = random.Random(f"proofmatch-demo:{seed}:article:{spec.index}")
        self.lang = load_language(spec.lang)
        self.cat = self.lang["categories"][spec.primary]
        self.notation = choose_notation(self.cat["roles"], self.rng)
        facts = self.cat["facts"]
        self.article_facts = self.rng.sample(facts, max(8, round(ARTICLE_FACTS * len(facts))))
        self.blocks_so_far: list[Block] = []
        self.anchors: dict[str, tuple[str, str]] = {}
        self.n_bib = self.rng.randint(6, 14)
        self.n_sections = 0
        self.section = 0

    # -- realization --------------------------------------------------------------------------
    def realize(self, template: str) -> str:
        """Alternatives and notation roles of one template string (slots left alone)."""
        text = _ALT.sub(lambda m: self.rng.choice(m.group(1).split("|")), template)
        return substitute_roles(text, self.notation)

    def fact(self, pool: list[str] | None = None, need_math: bool = False) -> Fact:
        """A realized fact from ``pool`` (default: the article's topic or its category); with
        ``need_math``, one whose main formula exists (see :func:`main_formula`)."""
        pool = (
            pool
            if pool is not None
            else (self.article_facts if self.rng.random() < ARTICLE_DISTRACTORS else self.cat["facts"])
        )
        if need_math:
            pool = [t for t in pool if main_formula(t)] or [t for t in self.cat["facts"] if main_formula(t)]
            if not pool:
                raise ValueError(f"no fact with a formula in {self.spec.primary} ({self.spec.lang})")
        text = self.realize(self.rng.choice(pool))
        return Fact(text, main_formula(text))

    def ref(self) -> str:
        """A reference to an earlier numbered block, or a citation when there is none."""
        targets = [b for b in self.blocks_so_far if b.anchor and b.kind != "proof"]
        if not targets:
            return self.cite()
        b = self.rng.choice(targets[-12:])
        return f"{self.lang['kinds'][b.kind]}\u00a0\\ref{{{b.anchor}}}"

    def cite(self) -> str:
        key = f"bib{self.rng.randint(1, self.n_bib)}"
        if self.rng.random() < 0.6:
            word = self.lang["kinds"][self.rng.choice(("theorem", "lemma", "proposition"))]
            return f"\\cite{{{key}}}[{word} {self.rng.randint(1, 9)}.{self.rng.randint(1, 12)}]"
        return f"\\cite{{{key}}}"

    def fill(self, template: str, slots: dict[str, Callable[[], str]]) -> str:
        """Fill ``{slot}`` placeholders (``$${xm}$$`` gets raw TeX, ``{xm}`` inline math)."""

        def display(m: re.Match[str]) -> str:
            return f"$${slots[m.group(1) + '_tex']()}$$"

        def inline(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in slots:
                raise KeyError(f"template slot {{{name}}} has no value here: {template!r}")
            return slots[name]()

        text = _DISPLAY_SLOT.sub(display, template)
        return self.realize(_SLOT.sub(inline, text))

    def slots(
        self, hyps: list[Fact], concls: list[Fact], intro: str | None, signal: float
    ) -> dict[str, Callable[[], str]]:
        """Slot values: statement facts with probability ``signal``, other facts otherwise."""
        rng = self.rng

        def pick(facts: list[Fact], i: int, need_math: bool) -> Fact:
            if i < len(facts) and rng.random() < signal and (facts[i].math or not need_math):
                return facts[i]
            return self.fact(need_math=need_math)

        def text_of(facts: list[Fact], i: int) -> Callable[[], str]:
            return lambda: pick(facts, i, False).text

        def math_of(facts: list[Fact], i: int) -> Callable[[], str]:
            return lambda: pick(facts, i, True).math or ""

        intro_value = intro
        values: dict[str, Callable[[], str]] = {
            "hyp": text_of(hyps, 0),
            "hyp2": text_of(hyps, 1),
            "concl": text_of(concls, 0),
            "concl2": text_of(concls, 1),
            "hypm_tex": math_of(hyps, 0),
            "conclm_tex": math_of(concls, 0),
            "fact": lambda: self.fact().text,
            "fact2": lambda: self.fact().text,
            "factm_tex": lambda: self.fact(need_math=True).math or "",
            "intro": lambda: (
                intro_value if intro_value and rng.random() < signal else self.realize(rng.choice(self.cat["intros"]))
            ),
            "ref": self.ref,
            "cite": self.cite,
            "step": lambda: self.realize(rng.choice(self.cat["steps"])),
            "sec": lambda: str(rng.randint(2, max(2, self.n_sections))),
            "term": lambda: rng.choice(self.cat["terms"]),
            "termsym": lambda: f"${self.notation[rng.choice(self.cat['term_sym'])]}$",
        }
        for name in ("hypm", "conclm", "factm"):
            values[name] = (lambda f: lambda: f"${f()}$")(values[name + "_tex"])
        return values

    # -- statements and proofs ----------------------------------------------------------------
    def statement_proof(self, special: str | None) -> tuple[list[str], list[str] | None, str | None]:
        """(statement paragraphs, proof paragraphs, theorem name) of one pair."""
        rng, lang = self.rng, self.lang
        intro = self.realize(rng.choice(self.cat["intros"]))
        pool = self.article_facts if rng.random() < 0.8 else self.cat["facts"]
        chosen = [self.fact([t]) for t in rng.sample(pool, 4)]  # four different facts
        hyps, concls = chosen[:2], chosen[2:]
        own = self.slots(hyps, concls, intro, 1.0)
        if special == "short_statement":
            statement = [self.fill(rng.choice(lang["short_statements"]), own)]
        elif special == "title_only_statement":
            statement = []
        else:
            statement = [self.fill(rng.choice(lang["statements"]), own)]
        name = rng.choice(self.cat["names"]) if special == "title_only_statement" or rng.random() < 0.12 else None
        # How much of the statement the proof restates: from almost nothing to most of it.
        signal = min(1.0, rng.betavariate(2.0, 2.0) * 2 * RESTATEMENT)
        slots = self.slots(hyps, concls, intro, signal)
        if special == "omitted":
            return statement, [rng.choice(lang["omitted"])], name
        if special == "reference_only":
            return statement, [self.fill(rng.choice(lang["reference_only"]), slots)], name
        if special == "short_proof":
            return statement, [self.fill(rng.choice(lang["short_proofs"]), slots)], name
        if special == "title_only_proof":
            return statement, [], name
        n_mid = rng.randint(45, 60) if special == "long_proof" else rng.choice((1, 1, 2, 2, 3, 3, 4, 5, 6, 8))
        sentences = [self.fill(rng.choice(lang["proof_open"]), slots)]
        for _ in range(n_mid):
            if rng.random() < 0.12 or (special == "long_proof" and rng.random() < 0.2):
                lead = rng.choice(lang["display_leads"])
                sentences.append(f"{lead} $${self.realize(rng.choice(self.cat['displays']))}$$")
            else:
                sentences.append(self.fill(rng.choice(lang["proof_middle"]), slots))
        sentences.append(self.fill(rng.choice(lang["proof_close"]), slots))
        return statement, _paragraphs(sentences, rng), name

    def plain(self, key: str) -> str:
        """One realized sentence of a generic list (filler, remarks, ...)."""
        slots = self.slots([], [], None, 0.0)
        return self.fill(self.rng.choice(self.lang[key]), slots)

    def number_block(self, block: Block, counter: list[int]) -> Block:
        counter[0] += 1
        block.number = f"{self.section}.{counter[0]}"
        if self.spec.flat_ids:
            block.anchor = f"Thm{counter[0]}"  # restarts in every section: duplicate ids
        elif self.spec.dialect in ("arxmliv", "arxmliv_ltx"):
            block.anchor = f"S{self.section}.Thm{counter[0]}"
        else:
            block.anchor = f"S{self.section}.Thmtheorem{counter[0]}"
        self.anchors[block.anchor] = (self.lang["kinds"][block.kind], block.number)
        return block


def _paragraphs(sentences: list[str], rng: random.Random) -> list[str]:
    """Group sentences into 1-3 paragraphs (displays end a sentence but not a paragraph)."""
    if len(sentences) < 4:
        return [" ".join(sentences)]
    cuts = sorted(rng.sample(range(1, len(sentences)), min(len(sentences) // 4, 2)))
    bounds = [0, *cuts, len(sentences)]
    return [" ".join(sentences[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]


def _special_kind(rng: random.Random) -> str | None:
    r = rng.random()
    for name, share in SPECIAL_PAIRS:
        if r < share:
            return name
        r -= share
    return None


def plan_article(spec: Spec, seed: int) -> Article:
    """The full content of one article: sections of blocks, every sentence realized."""
    pl = Planner(spec, seed)
    rng, lang, cat = pl.rng, pl.lang, pl.cat
    topics = rng.sample(cat["topics"], 2)
    topic_slots = {
        "topic": lambda: topics[0],
        "topic2": lambda: topics[1],
        "Topic": lambda: topics[0][:1].upper() + topics[0][1:],
    }
    title = pl.fill(rng.choice(lang["titles"]), topic_slots)
    authors = [f"{rng.choice(INITIALS)}. {s}" for s in rng.sample(SURNAMES, rng.randint(1, 3))]
    abstract = pl.fill(rng.choice(lang["abstract"]), {**pl.slots([], [], None, 0.0), **topic_slots})

    n_pairs = 0 if spec.no_theorems else rng.randint(16, 32)
    pl.n_sections = n_later = rng.randint(3, 5)
    pl.n_sections += 1
    sections: list[Section] = []

    # Section 1: introduction, sometimes with a main theorem proved in the last section.
    pl.section = 1
    counter = [0]
    intro = Section(1, lang["intro_title"], [Block("para", body=[pl.plain("filler"), pl.plain("filler")])])
    main_theorem: Block | None = None
    main_proof: list[str] | None = None
    if not spec.no_theorems and rng.random() < 0.35:
        statement, proof, _ = pl.statement_proof(None)
        main_theorem = pl.number_block(Block("theorem", body=statement), counter)
        intro.blocks.append(Block("para", body=[lang["main_result"]]))
        intro.blocks.append(main_theorem)
        pl.blocks_so_far.append(main_theorem)
        kind_ref = f"{lang['kinds']['theorem']}\u00a0\\ref{{{main_theorem.anchor}}}"
        intro.blocks.append(
            Block(
                "para",
                body=[pl.fill(lang["later_proof"], {"self": lambda: kind_ref, "sec": lambda: str(pl.n_sections)})],
            )
        )
        main_proof = proof
    sections.append(intro)

    per_section = _split_count(n_pairs, n_later, rng)
    titles = rng.sample(lang["sections"], n_later)
    for s, (count, stitle) in enumerate(zip(per_section, titles), start=2):
        pl.section, counter = s, [0]
        sec = Section(s, stitle, [Block("para", body=[pl.plain("filler")])])
        extras = (
            ["definition"] * (rng.random() < 0.7) + ["remark"] * rng.randint(0, 1) + ["example"] * (rng.random() < 0.3)
        )
        extras += ["commentary"] * (not spec.no_theorems and rng.random() < 0.3)
        kinds = [
            rng.choices([k for k, _ in PROVED_KINDS], weights=[w for _, w in PROVED_KINDS])[0] for _ in range(count)
        ]
        order = kinds + extras
        rng.shuffle(order)
        if spec.no_theorems:
            order = ["para"] * rng.randint(2, 4)
        for what in order:
            if what == "para":
                sec.blocks.append(Block("para", body=[pl.plain("filler") + " " + pl.plain("examples")]))
            elif what in ("definition", "remark", "example"):
                key = {"definition": "definitions", "remark": "remarks", "example": "examples"}[what]
                block = pl.number_block(Block(what, body=[pl.plain(key)]), counter)
                sec.blocks.append(block)
                pl.blocks_so_far.append(block)
            elif what == "commentary":
                statement, _, name = pl.statement_proof(None)
                block = pl.number_block(Block("lemma", body=statement, name=name), counter)
                self_ref = f"{lang['kinds']['lemma']}\u00a0\\ref{{{block.anchor}}}"
                slots = {
                    **pl.slots([], [], None, 0.0),
                    "self": lambda: self_ref,
                    "sec": lambda: str(min(pl.n_sections, s + 1)),
                }
                sec.blocks += [block, Block("para", body=[pl.fill(rng.choice(lang["commentary"]), slots)])]
                pl.blocks_so_far.append(block)
            else:
                special = _special_kind(rng)
                statement, proof, name = pl.statement_proof(special)
                block = pl.number_block(
                    Block(what, body=statement, proof=proof, name=name, proof_title=lang["proof_title"]), counter
                )
                sec.blocks.append(block)
                pl.blocks_so_far.append(block)
        sections.append(sec)

    if main_theorem is not None:
        last = sections[-1]
        kind_ref = f"{lang['kinds']['theorem']} {main_theorem.number}"
        last.blocks.append(Block("para", body=[pl.plain("filler")]))
        last.blocks.append(
            Block("proof", proof=main_proof, proof_title=lang["proof_of"].replace("{kind}", kind_ref) + ".")
        )

    bib = []
    for i in range(1, pl.n_bib + 1):
        names = rng.sample(SURNAMES, rng.randint(1, 3))
        year = rng.randint(1975, 2011)
        label = (
            str(i)
            if spec.index % 3
            else (
                "".join(n[0] for n in names) + f"{year % 100:02d}"
                if len(names) > 1
                else names[0][:3] + f"{year % 100:02d}"
            )
        )
        btitle = pl.fill(
            rng.choice(lang["bib_titles"]),
            {"topic": lambda: rng.choice(cat["topics"]), "Topic": lambda: rng.choice(cat["topics"]).capitalize()},
        )
        entry = f"{', '.join(f'{rng.choice(INITIALS)}. {n}' for n in names)}, {btitle}, {rng.choice(lang['journals'])} ({year})."
        bib.append((f"bib{i}", label, entry))
    return Article(spec, title, authors, abstract, sections, bib, pl.anchors)


def _split_count(total: int, parts: int, rng: random.Random) -> list[int]:
    """``total`` items over ``parts`` sections, each share at least a third of the average."""
    weights = [rng.uniform(1.0, 3.0) for _ in range(parts)]
    raw = [total * w / sum(weights) for w in weights]
    counts = [int(x) for x in raw]
    for i in sorted(range(parts), key=lambda i: raw[i] - counts[i], reverse=True)[: total - sum(counts)]:
        counts[i] += 1
    return counts


# ============================================================================================
# rendering an article as XHTML


class Renderer:
    """Markup of one planned article in its dialect; ids follow LaTeXML's scheme.

    ``arxmliv_ltx`` shares the ``arxmliv`` markup except for statements (``theorem ltx_thm``
    with a bold title), formulas (:func:`proofmatch.demo.texmath.render_math`) and the root element
    (no ``m:`` prefix declared).
    """

    def __init__(self, article: Article) -> None:
        self.a = article
        self.spec = article.spec
        self.latexml = article.spec.dialect == "latexml"
        self.ltx_thm = article.spec.dialect == "arxmliv_ltx"
        self.labels = {key: label for key, label, _ in article.bib}
        self.eq_count: dict[int, int] = {}
        self.ex_count: dict[int, int] = {}
        self.para_count: dict[int, int] = {}

    def c(self, latexml: str, arxmliv: str) -> str:
        """A class attribute value in the article's dialect."""
        return latexml if self.latexml else arxmliv

    # -- inline content -------------------------------------------------------------------------
    def inline(self, pieces: list[tuple[str, ...]], para_id: str, counter: list[int]) -> str:
        out: list[str] = []
        for piece in pieces:
            kind = piece[0]
            if kind == "text":
                out.append(xml_escape(piece[1]))
            elif kind == "math":
                counter[0] += 1
                mid = f"{para_id}.m{counter[0]}"
                out.append(
                    render_math(piece[1], mid, self.spec.dialect, False, arxmliv_form(mid, self.spec.article_id))
                )
            elif kind == "ref":
                word, number = self.a.anchors[piece[1]]
                if self.latexml:
                    out.append(
                        f'<a href="#{piece[1]}" title="{attr_escape(word)} {number}" class="ltx_ref">'
                        f'<span class="ltx_text ltx_ref_tag">{number}</span></a>'
                    )
                else:
                    out.append(f'<a href="#{piece[1]}" class="ref">{number}</a>')
            elif kind == "cite":
                label = self.labels[piece[1]]
                extra = f", {xml_escape(piece[2])}" if piece[2] else ""
                key = f"bib.{piece[1]}" if self.latexml else piece[1]
                link = f'<a href="#{key}" class="{self.c("ltx_ref", "ref")}">{xml_escape(label)}</a>'
                out.append(f'<cite class="{self.c("ltx_cite ltx_citemacro_cite", "cite")}">[{link}{extra}]</cite>')
        return "".join(out)

    def equation(self, tex: str, section: int, numbered: bool) -> str:
        if numbered:
            self.eq_count[section] = self.eq_count.get(section, 0) + 1
            eid, tag = f"S{section}.E{self.eq_count[section]}", f"({section}.{self.eq_count[section]})"
        else:
            self.ex_count[section] = self.ex_count.get(section, 0) + 1
            eid, tag = f"S{section}.Ex{self.ex_count[section]}", None
        mid = f"{eid}.m1"
        math = render_math(tex, mid, self.spec.dialect, True, arxmliv_form(mid, self.spec.article_id))
        if self.latexml:
            eqno = (
                (
                    f'\n<td rowspan="1" class="ltx_eqn_cell ltx_eqn_eqno ltx_align_middle ltx_align_right">'
                    f'<span class="ltx_tag ltx_tag_equation ltx_align_right">{tag}</span></td>'
                )
                if tag
                else ""
            )
            return (
                f'<table id="{eid}" class="ltx_equation ltx_eqn_table">\n<tbody><tr class="ltx_equation ltx_eqn_row ltx_align_baseline">\n'
                f'<td class="ltx_eqn_cell ltx_eqn_center_padleft"/>\n<td class="ltx_eqn_cell ltx_align_center">{math}</td>\n'
                f'<td class="ltx_eqn_cell ltx_eqn_center_padright"/>{eqno}</tr></tbody>\n</table>'
            )
        eqno = f'<td class="eqno">{tag}</td>' if tag else ""
        return f'<table class="equation" id="{eid}"><tr><td class="eqpad"/><td class="eq">{math}</td><td class="eqpad"/>{eqno}</tr></table>'

    def para(self, text: str, para_id: str, section: int, italic: bool = False, qed: bool = False) -> str:
        """One ``div.ltx_para``: ``p`` runs with display equations between them."""
        pieces = split_pieces(text)
        counter = [0]
        runs: list[list[tuple[str, ...]]] = [[]]
        parts: list[str] = []

        def flush() -> None:
            body = self.inline(runs[-1], para_id, counter).strip()
            if body:
                if italic:
                    body = f'<span class="{self.c("ltx_text ltx_font_italic", "text italic")}">{body}</span>'
                parts.append(f'<p class="{self.c("ltx_p", "p")}">{body}</p>')
            runs[-1] = []

        for piece in pieces:
            if piece[0] == "display":
                flush()
                parts.append(self.equation(piece[1], section, zlib.crc32(piece[1].encode()) % 3 == 0))
            else:
                runs[-1].append(piece)
        if qed:
            runs[-1].append(("text", "\n∎" if self.latexml else " □"))
        flush()
        return f'<div id="{para_id}" class="{self.c("ltx_para", "para")}">\n' + "\n".join(parts) + "\n</div>"

    def next_para_id(self, section: int) -> str:
        self.para_count[section] = self.para_count.get(section, 0) + 1
        return f"S{section}.p{self.para_count[section]}"

    # -- blocks ----------------------------------------------------------------------------------
    def theorem(self, b: Block, section: int) -> str:
        word = self.a.anchors[b.anchor][0]
        name = f" ({xml_escape(b.name)})" if b.name else ""
        italic = b.kind not in ("definition", "remark", "example")
        paras = "\n".join(self.para(t, f"{b.anchor}.p{i}", section, italic=italic) for i, t in enumerate(b.body, 1))
        if self.latexml:
            title = (
                f'<h6 class="ltx_title ltx_runin ltx_title_theorem"><span class="ltx_tag ltx_tag_theorem">'
                f'<span class="ltx_text ltx_font_bold">{xml_escape(word)} {b.number}</span></span>{name}'
                f'<span class="ltx_text ltx_font_bold">.</span></h6>'
            )
            head = f'<div id="{b.anchor}" class="ltx_theorem ltx_theorem_{b.kind}">'
        elif self.ltx_thm:  # every kind is "ltx_thm": only the title says theorem, lemma, ...
            title = f'<h6 class="title bold theorem-title">{xml_escape(word)} {b.number}{name}.</h6>'
            head = f'<div class="theorem ltx_thm" id="{b.anchor}">'
        else:
            title = f'<h6 class="title theorem-title">{xml_escape(word)} {b.number}{name}.</h6>'
            head = f'<div class="theorem {b.kind}" id="{b.anchor}">'
        return "\n".join(x for x in (head, title, paras, "</div>") if x)

    def proof(self, b: Block, section: int) -> str:
        paras = b.proof or [""]
        body = "\n".join(
            self.para(t, self.next_para_id(section), section, qed=i == len(paras)) for i, t in enumerate(paras, 1)
        )
        if self.latexml:
            title = f'<h6 class="ltx_title ltx_runin ltx_font_italic ltx_title_proof">{xml_escape(b.proof_title)}</h6>'
            return f'<div class="ltx_proof">\n{title}\n{body}\n</div>'
        return f'<div class="proof">\n<h6 class="title proof-title">{xml_escape(b.proof_title)}</h6>\n{body}\n</div>'

    def section(self, sec: Section) -> str:
        out = []
        if self.latexml:
            out.append(
                f'<div id="S{sec.number}" class="ltx_section">\n<h2 class="ltx_title ltx_title_section">'
                f'<span class="ltx_tag ltx_tag_section">{sec.number} </span>{xml_escape(sec.title)}</h2>'
            )
        else:
            out.append(
                f'<div class="section" id="S{sec.number}">\n<h2 class="title section-title">{sec.number} {xml_escape(sec.title)}</h2>'
            )
        for b in sec.blocks:
            if b.kind == "para":
                out.extend(self.para(t, self.next_para_id(sec.number), sec.number) for t in b.body)
            elif b.kind == "proof":
                out.append(self.proof(b, sec.number))
            else:
                out.append(self.theorem(b, sec.number))
                if b.proof is not None:
                    out.append(self.proof(b, sec.number))
        out.append("</div>")
        return "\n".join(out)

    # -- the document ----------------------------------------------------------------------------
    def document(self) -> str:
        a, spec = self.a, self.spec
        title = xml_escape(a.title)
        authors = xml_escape(", ".join(a.authors))
        sections = "\n".join(self.section(s) for s in a.sections)
        abstract = self.inline(split_pieces(a.abstract), "abstract", [0])
        lang = load_language(spec.lang)
        if self.latexml:
            bib = "\n".join(
                f'<li id="bib.{key}" class="ltx_bibitem"><span class="ltx_tag ltx_role_refnum ltx_tag_bibitem">[{xml_escape(label)}]</span>\n'
                f'<span class="ltx_bibblock">{xml_escape(entry)}</span></li>'
                for key, label, entry in a.bib
            )
            text = (
                '<?xml version="1.0" encoding="utf-8"?>\n'
                '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1 plus MathML 2.0//EN" "http://www.w3.org/Math/DTD/mathml2/xhtml-math11-f.dtd">\n'
                f'<html xmlns="http://www.w3.org/1999/xhtml" lang="{spec.lang}">\n<head>\n'
                '<meta http-equiv="content-type" content="application/xhtml+xml; charset=UTF-8"/>\n'
                f"<title>{title}</title>\n<!--Generated by proofmatch.demo.generate in the markup of LaTeXML 0.8.-->\n\n"
                '<link rel="stylesheet" href="LaTeXML.css" type="text/css"/>\n<link rel="stylesheet" href="ltx-article.css" type="text/css"/>\n'
                '</head>\n<body>\n<div class="ltx_page_main">\n<div class="ltx_page_content">\n'
                '<div class="ltx_document ltx_authors_1line">\n'
                f'<h1 class="ltx_title ltx_title_document">{title}</h1>\n'
                f'<div class="ltx_authors"><span class="ltx_creator ltx_role_author"><span class="ltx_personname">{authors}</span></span></div>\n'
                f'<div class="ltx_abstract"><h6 class="ltx_title ltx_title_abstract">{xml_escape(lang["abstract_title"])}</h6>\n'
                f'<p class="ltx_p">{abstract}</p>\n</div>\n{sections}\n'
                f'<div id="bib" class="ltx_bibliography">\n<h2 class="ltx_title ltx_title_bibliography">{xml_escape(lang["references_title"])}</h2>\n'
                f'<ul class="ltx_biblist">\n{bib}\n</ul>\n</div>\n</div>\n</div>\n</div>\n</body>\n</html>\n'
            )
        else:
            bib = "\n".join(
                f'<li class="bibitem" id="{key}"><span class="bibtag">[{xml_escape(label)}]</span> {xml_escape(entry)}</li>'
                for key, label, entry in a.bib
            )
            text = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1 plus MathML 2.0//EN" "http://www.w3.org/Math/DTD/mathml2/xhtml-math11-f.dtd">\n'
                '<html xmlns="http://www.w3.org/1999/xhtml" '
                + ('' if self.ltx_thm else 'xmlns:m="http://www.w3.org/1998/Math/MathML" ')
                + f'xmlns:arxmliv="http://arxmliv.kwarc.info/ns/" xml:lang="{spec.lang}">\n'
                f'<head><title>{title}</title><link rel="stylesheet" type="text/css" href="core.css"/></head>\n'
                '<body><div class="main"><div class="content"><div class="document">\n'
                f'<h1 class="title document-title">{title}</h1>\n'
                f'<div class="creator author"><div class="personname">{authors}</div></div>\n'
                f'<div class="abstract"><h6 class="title abstract-title">{xml_escape(lang["abstract_title"])}</h6><p class="p">{abstract}</p></div>\n'
                f"{sections}\n"
                f'<div class="bibliography" id="bib"><h2 class="title bibliography-title">{xml_escape(lang["references_title"])}</h2>\n'
                f'<ul class="biblist">\n{bib}\n</ul></div>\n</div></div></div></body>\n</html>\n'
            )
        if spec.named_entities:
            # Older XHTML relied on the MathML DTD's named entities (never loaded by a safe parser).
            text = (
                text.replace("\u00a0", "&nbsp;")
                .replace("\u2062", "&InvisibleTimes;")
                .replace("\u2061", "&ApplyFunction;")
            )
        return text


def render_article(article: Article) -> str:
    """The article as one XHTML document (text)."""
    return Renderer(article).document()


# ============================================================================================
# hostile files


def hostile_files(seed: int, donor: Article, donor_fr: Article) -> dict[str, bytes]:
    """The bytes of every :data:`HOSTILE` file; ``donor`` articles supply realistic content."""
    rng = random.Random(f"proofmatch-demo:{seed}:hostile")
    good = render_article(donor).encode("utf-8")
    cut = len(good) * 11 // 20
    gz = gzip.compress(good, compresslevel=6, mtime=0)
    binary = bytearray(rng.randbytes(4096))
    binary[17] = 0
    deep = (
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Nested</title></head><body>'
        + '<div class="ltx_para">' * 300
        + "deep"
        + "</div>" * 300
        + "</body></html>\n"
    )
    bomb = ['<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html [\n<!ENTITY e0 "proof">']
    bomb += [f'<!ENTITY e{i} "{("&e%d;" % (i - 1)) * 10}">' for i in range(1, 11)]
    bomb.append(
        ']>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Entities</title></head><body>'
        '<div class="ltx_theorem ltx_theorem_lemma"><p>&e10;</p></div><div class="ltx_proof"><p>&e10;</p></div></body></html>\n'
    )
    out = {
        "empty": b"",
        "truncated": good[:cut],
        "truncated-gz": gz[: len(gz) // 2],
        "not-gzip": good,
        "binary": bytes(binary),
        "latin1": render_article(donor_fr).encode("latin-1", errors="xmlcharrefreplace"),
        "malformed": good.replace(b"</p>", b"</span>", 3),
        "deep": deep.encode("utf-8"),
        "entity-bomb": "\n".join(bomb).encode("utf-8"),
    }
    assert set(out) == set(HOSTILE)
    return out


# ============================================================================================
# the corpus


def _write_bytes(data: bytes, path: Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def generate(out_dir: str | Path, n_articles: int = 72, seed: int = 7) -> None:
    """Write the demo corpus: ``out_dir/xhtml/<article_id>.xhtml[.gz]`` and ``out_dir/metadata.csv``.

    ``n_articles`` regular articles (one of them, a survey, has no theorem) plus the
    :data:`HOSTILE` files, all listed in the metadata. Stale ``demo-*`` files of an earlier run
    with other arguments are removed, so the folder always holds exactly one corpus.
    """
    if n_articles < 12:
        raise ValueError(
            f"n_articles must be at least 12 (got {n_articles}): fewer cannot cover the categories and dialects"
        )
    out = Path(out_dir)
    xhtml = out / "xhtml"
    xhtml.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, str]] = []
    written: set[str] = set()
    specs = article_specs(n_articles, seed)
    for spec in specs:
        article = plan_article(spec, seed)
        data = render_article(article).encode("utf-8")
        name = f"{spec.article_id}.xhtml" + (".gz" if spec.gz else "")
        _write_bytes(gzip.compress(data, compresslevel=6, mtime=0) if spec.gz else data, xhtml / name)
        written.add(name)
        rows.append(_metadata_row(spec, name, article.title))
    # Hostile files start from valid articles of their own (seed + 1), independent of n_articles.
    donor_spec = article_specs(1, seed + 1)[0]
    donor = plan_article(Spec(**{**donor_spec.__dict__, "article_id": "demo-bad", "gz": False}), seed + 1)
    fr_spec = Spec(
        index=0,
        article_id="demo-bad-fr",
        lang="fr",
        primary="math.AP",
        categories=["math.AP"],
        dialect="latexml",
        gz=False,
    )
    donor_fr = plan_article(fr_spec, seed + 1)
    for kind, data in hostile_files(seed, donor, donor_fr).items():
        suffix, _ = HOSTILE[kind]
        spec = donor_fr if kind == "latin1" else donor
        aid = f"demo-bad-{kind}"
        name = aid + suffix
        _write_bytes(data, xhtml / name)
        written.add(name)
        rows.append(_metadata_row(spec.spec, name, spec.title, article_id=aid))
    for stale in sorted(xhtml.glob("demo-*")):
        if stale.name not in written and stale.is_file():
            stale.unlink()
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=METADATA_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(buf.getvalue(), out / "metadata.csv")
    log.info("demo corpus: %d articles + %d hostile files -> %s", len(specs), len(HOSTILE), out)


def _metadata_row(spec: Spec, file_name: str, title: str, article_id: str | None = None) -> dict[str, str]:
    return {
        "article_id": article_id or spec.article_id,
        "file": f"xhtml/{file_name}",
        "title": title,
        "primary_category": spec.primary,
        "categories": " ".join(spec.categories),
    }


# ============================================================================================
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", help="output folder (gets xhtml/ and metadata.csv)")
    parser.add_argument("--articles", type=int, default=72, help="number of regular articles (default 72, at least 12)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    try:
        generate(args.out_dir, n_articles=args.articles, seed=args.seed)
    except ValueError as exc:
        log.error("%s", exc)
        return 2
    return 0
