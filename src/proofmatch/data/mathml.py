"""MathML to typed math tokens: pick or build the presentation tree of a ``<math>``, then walk it.

Why presentation MathML: it is what a reader sees, in reading order. LaTeXML writes parallel
markup, ``math/semantics/(presentation, annotation-xml[Content], annotation[TeX])``; the content
tree and the TeX string restate the same formula and must never reach the tokens, or every
symbol would be counted three times and TeX macro names would leak into the vocabulary. The
``alttext`` attribute is ignored for the same reason.

:func:`presentation` follows the rules of the reference pipeline's ctop stylesheet for
``<semantics>`` (first child if it is presentation markup, else an ``annotation-xml`` with a
presentation encoding, else the first child converted from content MathML, else a Content
MathML ``annotation-xml``; a TeX ``annotation`` is never read) but is our own code. Content-only
math (2011 arXMLiv / canonical MathML) goes through :class:`proofmatch.data.content_mathml.Converter`
(about thirty conversion rules written from the MathML specification, not taken from ctop.xsl);
:func:`content_to_presentation` is that conversion on its own, normalised as below.

The presentation copy is normalised so that one visible symbol always gives one token:

* Mathematical alphanumeric code points (``𝑀`` U+1D440, ``𝒪`` U+1D4AA, ``ℝ`` U+211D, ...) become
  the plain letter plus ``mathvariant`` (``M``; ``O`` script; ``R`` double-struck). LaTeXML
  writes such code points in content ``ci`` and in multi-letter or calligraphic presentation
  ``mi``; normalising both makes ``\\mathcal{O}`` and ``<mi mathvariant="script">O</mi>`` the
  same token, and lets symbol replacement see the letter under the font.
* Every token element (``mi mo mn mtext ms``) carries its effective ``mathvariant``: one
  inherited from ``mstyle``/``math`` is copied onto it. ``italic`` on a one-character ``mi`` is
  MathML's default and is dropped, so ``𝑥`` and ``x`` are the same token.

Token rules (:func:`math_tokens`): the text of each token element, split on whitespace, each piece
typed with :func:`proofmatch.data.views.math_token` (so bold x ``$x~bold`` differs from ``$x``);
``mfenced`` emits its ``open``, ``separators`` and ``close`` characters; the invisible operators
U+2061-U+2064 (function application, invisible times/separator/plus, which LaTeXML writes for
juxtaposition) and zero-width spaces carry no symbol and are dropped.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

from lxml import etree

from proofmatch.data.content_mathml import Converter
from proofmatch.data.content_symbols import CONTENT_ELEMENTS
from proofmatch.data.mathml_names import (
    MATHML_NS,
    PRESENTATION_ELEMENTS,
    TOKEN_ELEMENTS,
    element_children,
    local_name,
    mathml_tag,
    split_alphanumeric,
)
from proofmatch.data.views import math_token

ANNOTATIONS = frozenset({"annotation", "annotation-xml"})
PRESENTATION_ENCODINGS = frozenset({"mathml-presentation", "application/mathml-presentation+xml"})
CONTENT_ENCODINGS = frozenset({"mathml-content", "application/mathml-content+xml"})

# Characters that occupy a position in the markup but show no symbol.
_INVISIBLE = dict.fromkeys(map(ord, "\u2061\u2062\u2063\u2064\u200b"), None)

# ---------------------------------------------------------------------------------------------
# presentation tree


def _top(el: etree._Element) -> etree._Element:
    """The enclosing ``semantics``/``math`` (or root): where ``share`` targets are looked up."""
    top = el
    for anc in el.iterancestors():
        top = anc
        if local_name(anc) == "math":
            break
    return top


def _encoding(el: etree._Element) -> str:
    return (el.get("encoding") or "").strip().lower()


def _present(el: etree._Element) -> list[etree._Element]:
    """Presentation nodes (fresh copies, MathML namespace) for one source node."""
    name = local_name(el)
    if not name or name in ANNOTATIONS:
        return []
    if name == "semantics":
        return _present_semantics(el)
    if name in CONTENT_ELEMENTS:
        return [Converter(_present, _top(el)).convert(el)]
    if name in TOKEN_ELEMENTS:
        node = copy.deepcopy(el)
        node.tail = None
        if el.tag != mathml_tag(name):  # prefixed or no namespace: move the token into MathML
            node.tag = mathml_tag(name)
        return [node]
    tag = mathml_tag(name) if name in PRESENTATION_ELEMENTS else el.tag
    node = etree.Element(tag, attrib=dict(el.attrib), nsmap={None: MATHML_NS})
    node.text = el.text
    for child in el:
        for sub in _present(child):
            node.append(sub)
    return [node]


def _present_semantics(sem: etree._Element) -> list[etree._Element]:
    kids = element_children(sem)
    if not kids:
        return []
    first = kids[0]
    if local_name(first) in PRESENTATION_ELEMENTS or local_name(first) == "semantics":
        return _present(first)
    for k in kids[1:]:
        if local_name(k) == "annotation-xml" and _encoding(k) in PRESENTATION_ENCODINGS:
            return [n for c in element_children(k) for n in _present(c)]
    if local_name(first) not in ANNOTATIONS:
        return [Converter(_present, _top(first)).convert(first)]
    # No primary tree: the formula lives only in a Content MathML annotation (ctop converts
    # whatever comes first; a TeX string is never read).
    for k in kids:
        if local_name(k) == "annotation-xml" and _encoding(k) in CONTENT_ENCODINGS:
            converter = Converter(_present, _top(k))
            return [converter.convert(c) for c in element_children(k)]
    return []


def _normalize(el: etree._Element, inherited: str | None) -> None:
    """Give each token element its plain text and effective font (see the module docstring)."""
    name = local_name(el)
    variant = el.get("mathvariant") or inherited
    if name in TOKEN_ELEMENTS:
        if len(el) == 0 and el.text:
            stripped = el.text.strip()
            split = split_alphanumeric(stripped)
            if split is not None:
                el.text, variant = split
            elif stripped != el.text and name == "mi":
                el.text = stripped
        if variant == "italic" and name == "mi" and len((el.text or "").strip()) == 1:
            variant = None  # MathML's default for a one-letter identifier
        if variant:
            el.set("mathvariant", variant)  # "normal" is kept: upright e, i, d are constants
        elif "mathvariant" in el.attrib:
            del el.attrib["mathvariant"]
        return
    for child in el:
        if isinstance(child.tag, str):
            _normalize(child, variant)


def content_to_presentation(content_el: etree._Element) -> etree._Element:
    """Presentation MathML (a new element) for one content MathML element (``apply``, ``ci``...)."""
    node = Converter(_present, _top(content_el)).convert(content_el)
    _normalize(node, None)
    return node


def presentation(math_el: etree._Element) -> etree._Element:
    """A new ``<math>`` holding only presentation MathML for ``math_el`` (a copy, no annotations).

    Idempotent: the presentation of a presentation tree is an equal tree. Token elements carry
    their effective ``mathvariant``; one-character identifiers are plain ``mi`` elements (see
    :func:`single_char_identifiers`) whose text can be rewritten in place.
    """
    out = etree.Element(mathml_tag("math"), nsmap={None: MATHML_NS})
    for attr in ("display", "mathvariant"):
        if math_el.get(attr) is not None:
            out.set(attr, math_el.get(attr))
    if local_name(math_el) == "math":
        for child in math_el:
            for node in _present(child):
                out.append(node)
    else:  # a bare presentation/content element
        for node in _present(math_el):
            out.append(node)
    _normalize(out, None)
    if "mathvariant" in out.attrib:
        del out.attrib["mathvariant"]  # already pushed onto the token elements
    return out


def single_char_identifiers(tree: etree._Element) -> Iterator[etree._Element]:
    """The ``mi`` elements of a presentation tree whose text is exactly one character.

    These are the candidates of symbol replacement; set ``el.text`` to rename one (the font lives
    in ``mathvariant`` and is kept).
    """
    for el in tree.iter():
        if local_name(el) == "mi" and len(el) == 0 and el.text is not None and len(el.text) == 1:
            yield el


# ---------------------------------------------------------------------------------------------
# tokens


def font_of(element_name: str, symbol: str, variant: str | None) -> str | None:
    """The font suffix of one token: None for the default look (normal, or italic one-letter mi)."""
    if not variant or variant == "normal":
        return None
    if variant == "italic" and element_name == "mi" and len(symbol) == 1:
        return None
    return variant


def _pieces(text: str) -> list[str]:
    return text.translate(_INVISIBLE).split()


def _emit(el: etree._Element, out: list[str]) -> None:
    name = local_name(el)
    if not name or name in ANNOTATIONS:
        return
    if name in TOKEN_ELEMENTS:
        variant = el.get("mathvariant")
        for piece in _pieces("".join(el.itertext())):
            out.append(math_token(piece, font_of(name, piece, variant)))
        return
    if name == "mfenced":
        _emit_fenced(el, out)
        return
    out.extend(math_token(p) for p in _pieces(el.text or ""))
    for child in el:
        _emit(child, out)
        out.extend(math_token(p) for p in _pieces(child.tail or ""))


def _emit_fenced(el: etree._Element, out: list[str]) -> None:
    separators = _pieces(el.get("separators", ","))
    seps = [c for s in separators for c in s]
    open_ = el.get("open", "(").strip()
    if open_:
        out.append(math_token(open_))
    for i, child in enumerate(element_children(el)):
        if i and seps:
            out.append(math_token(seps[min(i - 1, len(seps) - 1)]))
        _emit(child, out)
    close = el.get("close", ")").strip()
    if close:
        out.append(math_token(close))


def tokens_of_presentation(tree: etree._Element) -> list[str]:
    """Tokens of a tree that is already presentation MathML (output of :func:`presentation`)."""
    out: list[str] = []
    _emit(tree, out)
    return out


def math_tokens(math_el: etree._Element) -> list[str]:
    """Typed tokens of one ``<math>`` element, depth-first over its presentation form."""
    return tokens_of_presentation(presentation(math_el))
