"""Statements in one parsed article: theorem-like elements, their kinds, the proofs that follow.

A pair is a theorem-like element immediately followed by a proof element:

* theorem-like: an element whose ``class`` has the token ``ltx_theorem`` (LaTeXML, ar5iv:
  ``class="ltx_theorem ltx_theorem_lemma"``) or ``theorem`` (2011 arXMLiv:
  ``class="theorem lemma"``, or ``class="theorem ltx_thm"`` with a title
  ``<h6 class="title bold theorem-title">Theorem 2.1.</h6>``). Tokens, not substrings: the run-in
  title ``ltx_title_theorem`` and tag ``ltx_tag_theorem`` are not statements.
* proof: the next sibling *element* (comments, processing instructions, entity references and
  text in between are skipped) with class token ``ltx_proof`` or ``proof``.
* near miss (:data:`NEAR_MISS_SIDES`, counted, never a pair): two consecutive sibling elements
  placed as a pair would be, the first's class containing the substring ``theorem`` and the
  second's the substring ``proof``, where at least one of them lacks the class *token*:
  ``mytheorem`` followed by ``ltx_proof`` (side ``statement``), ``ltx_theorem`` followed by
  ``proofsketch`` (``proof``), ``mytheorem`` followed by ``proofsketch`` (``both``). The paper's
  Appendix A reads the statement's class as a substring (its rule would pair the first) and the
  proof's as the exact string ``proof``; the report counts them instead of dropping them
  silently. LaTeXML's run-in titles (``ltx_title_theorem``, ``ltx_tag_theorem``,
  ``ltx_title_proof``) are not near misses: they sit inside the statement or proof, and no
  proof-classed sibling follows them.
* kind (:func:`statement_kind`): the environment named by the class (``lemma`` in
  ``ltx_theorem_lemma`` or ``theorem lemma``) when it is an English kind word
  (:data:`KIND_WORDS`); otherwise (``ltx_thm``, ``thm``, a bare ``theorem`` class) the first kind
  word of the element's own title ("Lemma 3.2." -> ``lemma``, "Main Theorem." -> ``theorem``);
  a bare class without any title stays ``theorem``; anything else is :data:`UNKNOWN_KIND`. The
  report counts where each kind came from (``kind_sources``) and the first words of the titles
  that named no known kind (``unknown_kind_titles``), so a corpus in another language or with
  unusual environments shows up in numbers, not as silently wrong kinds.

Output is bounded by input (:func:`output_budget`): a nested statement's XML sits inside its
parent's stored XML too, so ``k`` nested statements cost ``O(k * size)``: a 4 MB file of nested
theorems would give a gigabyte of pairs. :func:`find_pairs` counts the characters it serialises
and stops at the budget (:data:`OUTPUT_RATIO` times the input plus :data:`OUTPUT_SLACK`), so the
file is skipped as ``output_too_large`` before the excess is ever held; real articles (nested
statements are rare and shallow) stay far below it.

Selection uses only ``@class``, so it works in any namespace (XHTML default namespace, prefixed
``m:`` MathML, no namespace). Each pair keeps the two elements serialised (``statement_xml``,
``proof_xml``, namespace declarations included) so later stages parse small fragments, never whole
articles again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

_MATH_TAGS = frozenset({"{http://www.w3.org/1998/Math/MathML}math", "math"})


@dataclass
class ArticleResult:
    """Pairs and counts from one article (:func:`proofmatch.data.extract.extract_bytes` fills in
    ``parser`` and ``entities_replaced``)."""

    pairs: list[dict[str, Any]] = field(default_factory=list)
    theorem_like_kinds: Counter = field(default_factory=Counter)
    kind_sources: Counter = field(default_factory=Counter)
    unknown_kind_titles: Counter = field(default_factory=Counter)
    parser: str = "xml"
    entities_replaced: int = 0
    unresolved_entities: int = 0
    duplicate_ids: int = 0
    near_misses: Counter = field(default_factory=Counter)
    near_miss_classes: Counter = field(default_factory=Counter)


# --------------------------------------------------------------------------------------------
# kinds


#: English words that name a kind of statement (environment names and title words), including
#: the plurals that real preambles use as environment names (the Stacks project's ``remarks``).
KINDS = frozenset(
    """theorem lemma proposition corollary claim definition remark remarks example examples conjecture
    fact observation assumption assumptions hypothesis notation exercise exercises problem question
    note property condition convention axiom principle situation construction algorithm criterion
    sublemma scholium addendum""".split()
)
#: Title word (lower case, no trailing punctuation) -> kind: every kind plus common abbreviations.
KIND_WORDS: dict[str, str] = {
    **{k: k for k in KINDS},
    **{
        "thm": "theorem",
        "lem": "lemma",
        "prop": "proposition",
        "cor": "corollary",
        "coro": "corollary",
        "def": "definition",
        "defn": "definition",
        "rem": "remark",
        "conj": "conjecture",
        "obs": "observation",
    },
}
#: The kind of a statement whose class names no kind and whose title names none either.
UNKNOWN_KIND = "unknown"
#: Where a statement's kind came from (the report's ``kind_sources``).
KIND_SOURCES = ("class", "title", "unknown")
#: Class tokens of a title child (LaTeXML ``ltx_title``, arXMLiv ``title``; linearize counts its tokens).
TITLE_CLASSES = frozenset({"ltx_title", "title"})
#: How many leading words of a title may precede its kind word ("Main Theorem", "Key Lemma").
_TITLE_WORDS = 4
_TITLE_STRIP = ".:,;!*\u00a0"
_NO_TITLE = "(no title)"
_EMPTY_TITLE = "(empty title)"


def class_env(class_value: str | None) -> tuple[bool, str | None]:
    """(theorem-like?, environment token) of a ``class`` value.

    LaTeXML: ``ltx_theorem ltx_theorem_<env>`` -> env. arXMLiv 2011: ``theorem <env>`` -> the
    token after ``theorem`` (``lemma``, or ``ltx_thm``, which names no kind). The env is None
    when the class has only the marker token.
    """
    if not class_value or "theorem" not in class_value:
        return False, None
    tokens = class_value.split()
    if "ltx_theorem" in tokens:
        env = next((t[12:] for t in tokens if t.startswith("ltx_theorem_") and len(t) > 12), None)
        return True, env.lower() if env else None
    if "theorem" in tokens:
        i = tokens.index("theorem")
        return True, tokens[i + 1].lower() if i + 1 < len(tokens) else None
    return False, None


def theorem_kind(class_value: str | None) -> str | None:
    """The kind a ``class`` value gives on its own: its env token, ``theorem`` without one, None
    when the element is not theorem-like. :func:`statement_kind` also reads the title."""
    theorem_like, env = class_env(class_value)
    if not theorem_like:
        return None
    return env or "theorem"


def _text_outside_math(element: etree._Element, out: list[str]) -> None:
    """Append the text of ``element`` (not its tail) to ``out``, skipping formulas."""
    if element.text:
        out.append(element.text)
    for child in element:
        if isinstance(child.tag, str) and child.tag not in _MATH_TAGS:
            _text_outside_math(child, out)
        if child.tail:
            out.append(child.tail)


def _title_words(element: etree._Element) -> list[str] | None:
    """The words of the element's own title child (formulas skipped); None without a title."""
    for child in element:
        if isinstance(child.tag, str) and not TITLE_CLASSES.isdisjoint(
            (child.get("class") or "").split()
        ):
            texts: list[str] = []
            _text_outside_math(child, texts)
            return " ".join(texts).split()
    return None


def title_kind(element: etree._Element) -> tuple[str | None, str | None]:
    """(kind, first title word) from a statement's title: the first of its leading words that is a
    kind word (:data:`KIND_WORDS`); words with digits (numbers such as "2.1") are skipped, a
    parenthesis (the statement's name) ends the search. The first word is the title's first
    word without digits (``"(empty title)"`` for a title without words); (None, None) without a
    title."""
    words = _title_words(element)
    if words is None:
        return None, None
    first: str | None = None
    for word in words[:_TITLE_WORDS]:
        if word.startswith("("):
            break
        if any(ch.isdigit() for ch in word):
            continue
        w = word.strip(_TITLE_STRIP).lower()
        if not w:
            continue
        first = first or w
        if w in KIND_WORDS:
            return KIND_WORDS[w], w
    return None, first or (words[0].lower() if words else _EMPTY_TITLE)


def statement_kind(element: etree._Element) -> tuple[str, str]:
    """(kind, source) of a theorem-like element; source is one of :data:`KIND_SOURCES`.

    The class's env when it is a kind word; else the title's kind word; a bare ``theorem`` /
    ``ltx_theorem`` class without a title keeps the name ``theorem``; else :data:`UNKNOWN_KIND`.
    """
    kind, source, _ = _kind_and_title(element)
    return kind, source


def _kind_and_title(element: etree._Element) -> tuple[str, str, str | None]:
    """:func:`statement_kind` plus the title's first word (None when the title was not read)."""
    _, env = class_env(element.get("class"))
    if env in KINDS:
        return env, "class", None
    kind, first = title_kind(element)
    if kind is not None:
        return kind, "title", first
    if env is None and first is None:
        return "theorem", "class", None
    return UNKNOWN_KIND, "unknown", first or _NO_TITLE


# --------------------------------------------------------------------------------------------
# pairs


def is_proof(element: etree._Element) -> bool:
    tokens = (element.get("class") or "").split()
    return "ltx_proof" in tokens or "proof" in tokens


#: Which side of a near miss lacks its class token (the report's ``near_misses``).
NEAR_MISS_SIDES = ("statement", "proof", "both")
#: Longest class value kept in the report's ``near_miss_classes`` (untrusted input).
_CLASS_CHARS = 80


def near_miss_side(
    first: etree._Element, theorem_like: bool, second: etree._Element | None
) -> str | None:
    """The side (:data:`NEAR_MISS_SIDES`) that makes ``first``/``second`` a near miss, else None.

    ``first``'s class contains ``theorem`` (``theorem_like``: as a token); ``second`` is its next
    sibling element. None when the second's class lacks the substring ``proof`` or both sides
    carry their tokens (a pair).
    """
    if second is None or "proof" not in (second.get("class") or ""):
        return None
    proof = is_proof(second)
    if theorem_like:
        return None if proof else "proof"
    return "statement" if proof else "both"


def _near_miss_classes(first: etree._Element, second: etree._Element) -> str:
    return " -> ".join(
        " ".join((e.get("class") or "").split())[:_CLASS_CHARS] for e in (first, second)
    )


def next_element(element: etree._Element) -> etree._Element | None:
    """Next sibling that is an element (skips comments, PIs and entity references)."""
    nxt = element.getnext()
    while nxt is not None and not isinstance(nxt.tag, str):
        nxt = nxt.getnext()
    return nxt


def _inline_entities(element: etree._Element) -> int:
    """Turn entity-reference nodes under ``element`` into literal ``&name;`` text; return how many."""
    entities = list(element.iter(etree.Entity))
    for ent in entities:
        text = ent.text + (ent.tail or "")
        parent = ent.getparent()
        prev = ent.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + text
        else:
            parent.text = (parent.text or "") + text
        parent.remove(ent)
    return len(entities)


def serialize(element: etree._Element) -> str:
    """The element as a standalone XML fragment (namespace declarations included, no tail)."""
    return etree.tostring(element, encoding="unicode", with_tail=False)


def _statement_id(element: etree._Element) -> str | None:
    return element.get("id") or element.get("{http://www.w3.org/XML/1998/namespace}id")


#: The pairs of one article may hold at most this many times its (decompressed) size in XML ...
OUTPUT_RATIO = 4
#: ... plus this many characters (namespace declarations repeated on many small fragments).
OUTPUT_SLACK = 2**20


def output_budget(input_bytes: int) -> int:
    """Most characters of ``statement_xml`` + ``proof_xml`` one article of ``input_bytes`` may give."""
    return OUTPUT_RATIO * input_bytes + OUTPUT_SLACK


class OutputTooLarge(Exception):
    """An article's pairs would exceed :func:`output_budget` (``extract`` skips the file)."""


def find_pairs(
    root: etree._Element,
    article_id: str,
    *,
    may_have_entities: bool = True,
    max_output_chars: int | None = None,
) -> ArticleResult:
    """All theorem-like elements of a parsed article and the pairs among them, in document order.

    ``position`` is the index among the article's theorem-like elements; a statement without id
    gets ``p<position>``, and a repeated id gets ``<id>#p<position>`` so pair ids stay unique.
    ``may_have_entities=False`` (no unknown named reference in the source) skips the search for
    entity-reference nodes. ``<math>`` subtrees are not searched (a statement cannot sit inside a
    formula); skipping them makes this walk 4x faster. ``max_output_chars`` (None: unbounded)
    bounds the serialised XML of all pairs: past it :class:`OutputTooLarge` is raised.
    """
    result = ArticleResult()
    budget = max_output_chars
    produced = 0
    seen: set[str] = set()
    position = -1
    walker = etree.iterwalk(root, events=("start",))
    for _event, element in walker:
        if element.tag in _MATH_TAGS:  # formulas hold ~80% of the elements and no statements
            walker.skip_subtree()
            continue
        cls = element.get("class")
        if cls is None or "theorem" not in cls:  # cheap test first: this loop sees most elements
            continue
        theorem_like = class_env(cls)[0]
        proof = next_element(element)
        side = near_miss_side(element, theorem_like, proof)
        if side is not None:
            result.near_misses[side] += 1
            result.near_miss_classes[_near_miss_classes(element, proof)] += 1
        if not theorem_like:
            continue
        kind, source, title_word = _kind_and_title(element)
        position += 1
        result.theorem_like_kinds[kind] += 1
        result.kind_sources[source] += 1
        if source == "unknown":
            result.unknown_kind_titles[title_word] += 1
        if proof is None or not is_proof(proof):
            continue
        sid = _statement_id(element) or f"p{position}"
        if sid in seen:
            sid = f"{sid}#p{position}"
            result.duplicate_ids += 1
        seen.add(sid)
        if may_have_entities:
            result.unresolved_entities += _inline_entities(element) + _inline_entities(proof)
        statement_xml = serialize(element)
        proof_xml = serialize(proof)
        produced += len(statement_xml) + len(proof_xml)
        if budget is not None and produced > budget:
            raise OutputTooLarge(
                f"pairs' XML over {budget} characters after {len(result.pairs) + 1} pairs "
                f"(nested statements repeat their content)"
            )
        result.pairs.append(
            {
                "article_id": article_id,
                "statement_id": sid,
                "kind": kind,
                "position": position,
                "statement_xml": statement_xml,
                "proof_xml": proof_xml,
            }
        )
    return result
