"""Statements and proofs for people: sanitized HTML with MathML, and plain text for a terminal.

The stored fragments are corpus input and therefore untrusted. :func:`safe_html` turns one into
HTML that a browser renders as text plus MathML Core and nothing else:

1. the fragment is parsed with the linearizer's XML parser (no DTD, no entities, no network);
2. each ``<math>`` is replaced by the presentation copy the tokens were read from
   (:func:`proofmatch.data.mathml.presentation`: no TeX or Content MathML annotations; content-only
   formulas converted), and ``mfenced``, which MathML Core dropped, becomes an ``mrow`` of
   ``mo`` fences, so the reader sees what the model read;
3. namespace prefixes are dropped (``m:mi`` -> ``mi``) and the tree is serialized as HTML;
4. the result goes through `nh3 <https://nh3.readthedocs.io>`_ (the Python binding of the
   maintained Rust sanitizer ammonia) with an allow-list of text and MathML Core elements and of
   a few presentational attributes. Everything else goes: ``script``/``style`` with their
   content, every ``on*`` attribute, every URL-bearing attribute (``href``, ``src``), so the
   page loads no external resource. The web page adds a Content-Security-Policy as a second wall.

:func:`fragment_text` gives a one-line plain reading of a fragment (math as its TeX ``alttext``
when the converter kept one, else as its symbols) for the command line and the JSON API.
"""

from __future__ import annotations

import re
from typing import Any

import nh3
from lxml import etree

from proofmatch.data.linearize import FragmentError, parse_fragment
from proofmatch.data.mathml import presentation, tokens_of_presentation
from proofmatch.data.mathml_names import local_name
from proofmatch.data.views import split_math

#: Text elements kept (LaTeXML/arXMLiv write div/p/span/h6 and a few inline styles).
TEXT_TAGS = frozenset(
    {
        "div",
        "p",
        "span",
        "h6",
        "em",
        "i",
        "b",
        "strong",
        "sub",
        "sup",
        "br",
        "ul",
        "ol",
        "li",
        "blockquote",
        "cite",
        "small",
        "table",
        "tbody",
        "tr",
        "td",
        "th",
    }
)
#: MathML Core elements (https://www.w3.org/TR/mathml-core/), without ``semantics``/annotations.
MATH_TAGS = frozenset(
    {
        "math",
        "mi",
        "mo",
        "mn",
        "mtext",
        "ms",
        "mspace",
        "mrow",
        "mfrac",
        "msqrt",
        "mroot",
        "mstyle",
        "merror",
        "mpadded",
        "mphantom",
        "msub",
        "msup",
        "msubsup",
        "munder",
        "mover",
        "munderover",
        "mmultiscripts",
        "mprescripts",
        "none",
        "mtable",
        "mtr",
        "mtd",
    }
)
ALLOWED_TAGS = TEXT_TAGS | MATH_TAGS
#: Presentational attributes only: nothing that names a URL, a script or a style sheet.
_MATH_ATTRS = {
    "mathvariant",
    "displaystyle",
    "scriptlevel",
    "stretchy",
    "fence",
    "separator",
    "lspace",
    "rspace",
    "form",
    "largeop",
    "movablelimits",
    "accent",
    "accentunder",
    "linethickness",
    "columnspan",
    "rowspan",
}
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    **{t: set(_MATH_ATTRS) for t in MATH_TAGS},
    "math": {"display", "displaystyle", "mathvariant"},
    "td": {"colspan", "rowspan"},
}
DROPPED_WITH_CONTENT = frozenset(
    {
        "script",
        "style",
        "annotation",
        "annotation-xml",
        "svg",
        "iframe",
        "object",
        "embed",
        "template",
        "noscript",
    }
)


def _mfenced_to_mrow(el: etree._Element) -> None:
    """Rewrite one ``mfenced`` in place as ``mrow(mo open, a, mo sep, b, ..., mo close)``."""
    ns = el.tag.rpartition("}")[0] + "}" if el.tag.startswith("{") else ""
    seps = [c for c in "".join(el.get("separators", ",").split())]
    kids = [c for c in el if isinstance(c.tag, str)]
    open_, close = el.get("open", "("), el.get("close", ")")
    for child in list(el):
        el.remove(child)
    for key in list(el.attrib):
        del el.attrib[key]
    el.tag = f"{ns}mrow"

    def mo(text: str) -> etree._Element:
        node = etree.SubElement(el, f"{ns}mo")
        node.text = text
        return node

    if open_.strip():
        mo(open_.strip())
    for i, kid in enumerate(kids):
        if i and seps:
            mo(seps[min(i - 1, len(seps) - 1)])
        el.append(kid)
    if close.strip():
        mo(close.strip())


def _display_math(math_el: etree._Element) -> etree._Element:
    """The presentation copy of one formula, with ``mfenced`` spelled out for MathML Core."""
    pres = presentation(math_el)
    for fenced in [e for e in pres.iter() if local_name(e) == "mfenced"]:
        _mfenced_to_mrow(fenced)
    return pres


def _strip_namespaces(root: etree._Element) -> etree._Element:
    for el in root.iter():
        if isinstance(el.tag, str):
            el.tag = local_name(el)
    etree.cleanup_namespaces(root)
    return root


def to_html(xml: Any) -> str:
    """Steps 1-3 of the module docstring: a fragment as unsanitized HTML (raises FragmentError)."""
    root = parse_fragment(xml)
    if local_name(root) == "math":
        root = _display_math(root)
    else:
        for m in [
            e
            for e in root.iter()
            if local_name(e) == "math"
            and not any(local_name(a) == "math" for a in e.iterancestors())
        ]:
            parent = m.getparent()
            pres = _display_math(m)
            pres.tail = m.tail
            parent.replace(m, pres)
    return etree.tostring(_strip_namespaces(root), method="html", encoding="unicode")


def sanitize(html: str) -> str:
    """Step 4: the allow-list sanitizer (also what the web page applies to anything it shows)."""
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes=ALLOWED_ATTRIBUTES,
        clean_content_tags=set(DROPPED_WITH_CONTENT),
        url_schemes=set(),
        link_rel=None,
        strip_comments=True,
    )


def safe_html(xml: Any) -> str:
    """A stored fragment as sanitized HTML + MathML; a fragment that does not parse is shown as
    its escaped text, so a broken row never breaks the page."""
    try:
        return sanitize(to_html(xml))
    except FragmentError:
        return sanitize(f"<p>{nh3.clean_text(str(xml or ''))}</p>")


_SPACE = re.compile(r"\s+")
_SKIP = frozenset({"annotation", "annotation-xml", "script", "style"})


def _math_text(m: etree._Element) -> str:
    tex = (m.get("alttext") or "").strip()
    if tex:
        return f"${tex}$"
    symbols = [split_math(t)[0] for t in tokens_of_presentation(presentation(m))]
    return "$" + " ".join(symbols) + "$"


def _walk(el: etree._Element, out: list[str]) -> None:
    name = local_name(el)
    if name == "math":
        out.append(" " + _math_text(el) + " ")
        return
    if name and name not in _SKIP:
        out.append(el.text or "")
        for child in el:
            _walk(child, out)
            out.append(child.tail or "")


def fragment_text(xml: Any, tokens: Any = None) -> str:
    """One line of plain text: text as written, each formula as ``$TeX$`` (or its symbols).

    Without a fragment (an index built without the pairs file) the tokens are joined instead.
    """
    if xml is None or (isinstance(xml, float)):
        return " ".join(str(t) for t in (tokens if tokens is not None else []))
    try:
        root = parse_fragment(xml)
    except FragmentError:
        return _SPACE.sub(" ", str(xml)).strip()
    out: list[str] = []
    _walk(root, out)
    text = _SPACE.sub(" ", "".join(out)).strip()
    return re.sub(r" ([.,;:)])", r"\1", text)
