"""How MathML elements are written in each dialect (those of the demo corpus).

The dialects (:data:`DIALECTS`, described in :mod:`proofmatch.texmath.convert`) differ below the
structure of a formula: the ``m:`` prefix of arXMLiv, LaTeXML's ``id``/``xref`` pairs that link
every presentation element to its Content MathML twin, and the Unicode mathematical alphabets
(𝐱 ℝ 𝒜, italic 𝑥) LaTeXML writes where arXMLiv writes ``mathvariant`` on a plain letter.
:class:`MathMarkup` holds these conventions; :class:`proofmatch.texmath.writer.MathWriter`
builds the structure on top of it.
"""

from __future__ import annotations

from proofmatch.registry.checks import one_of
from proofmatch.texmath.parse import Node

#: The markups of the demo corpus.
DIALECTS = ("latexml", "arxmliv", "arxmliv_ltx")


def xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def attr_escape(text: str) -> str:
    return xml_escape(text).replace('"', "&quot;")


_ITALIC_LOWER = {c: chr(0x1D44E + i) for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")} | {
    "h": "ℎ"
}
_ITALIC_UPPER = {c: chr(0x1D434 + i) for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZ")}
_ITALIC_GREEK = {c: chr(0x1D6FC + i) for i, c in enumerate("αβγδεζηθικλμνξοπρςστυφχψω")}
_ITALIC_GREEK |= {"ϵ": "𝜖", "ϕ": "𝜙", "φ": "𝜑", "ϑ": "𝜗"}
_LETTERLIKE = {
    "double-struck": {"C": "ℂ", "H": "ℍ", "N": "ℕ", "P": "ℙ", "Q": "ℚ", "R": "ℝ", "Z": "ℤ"},
    "script": {
        "B": "ℬ",
        "E": "ℰ",
        "F": "ℱ",
        "H": "ℋ",
        "I": "ℐ",
        "L": "ℒ",
        "M": "ℳ",
        "R": "ℛ",
        "e": "ℯ",
        "g": "ℊ",
        "o": "ℴ",
    },
    "fraktur": {"C": "ℭ", "H": "ℌ", "I": "ℑ", "R": "ℜ", "Z": "ℨ"},
}
_ALPHABET_BASE = {"bold": 0x1D400, "script": 0x1D49C, "fraktur": 0x1D504, "double-struck": 0x1D538}
_BOLD_GREEK = {c: chr(0x1D6C2 + i) for i, c in enumerate("αβγδεζηθικλμνξοπρςστυφχψω")}


def math_alphabet(ch: str, variant: str | None) -> str:
    """The Unicode mathematical-alphabet character LaTeXML writes for ``ch`` in ``variant``."""
    if variant in _LETTERLIKE and ch in _LETTERLIKE[variant]:
        return _LETTERLIKE[variant][ch]
    if variant in _ALPHABET_BASE and len(ch) == 1 and "A" <= ch <= "Z":
        return chr(_ALPHABET_BASE[variant] + ord(ch) - ord("A"))
    if variant in _ALPHABET_BASE and len(ch) == 1 and "a" <= ch <= "z":
        return chr(_ALPHABET_BASE[variant] + 26 + ord(ch) - ord("a"))
    if variant == "bold" and ch in _BOLD_GREEK:
        return _BOLD_GREEK[ch]
    if variant in ("bold", "double-struck") and len(ch) == 1 and ch.isdigit():
        return chr((0x1D7CE if variant == "bold" else 0x1D7D8) + int(ch))
    return ch


def math_italic(ch: str) -> str:
    """The Unicode mathematical italic LaTeXML writes for a one-letter identifier."""
    return _ITALIC_LOWER.get(ch) or _ITALIC_UPPER.get(ch) or _ITALIC_GREEK.get(ch) or ch


class MathMarkup:
    """The elements of one formula in one dialect, and LaTeXML's ids.

    LaTeXML: every presentation node has ``id``/``xref`` and its Content MathML twin the mirrored
    ``.cmml`` ids. arXMLiv: ``m:`` prefix, no inner ids. arXMLiv-ltx: as arXMLiv without the prefix.
    """

    def __init__(self, dialect: str, math_id: str) -> None:
        one_of("dialect", dialect, DIALECTS)
        self.latexml = dialect == "latexml"
        self.p = "m:" if dialect == "arxmliv" else ""
        self.mid = math_id
        self.count = 0
        self.ids: dict[tuple[int, str | None], str] = {}
        self.owner: str | None = None  # id of the innermost node with a Content MathML twin

    # -- ids -----------------------------------------------------------------------------
    def _new_id(self) -> str:
        self.count += 1
        return f"{self.mid}.{self.count}"

    def _pid(self, node: Node | None, key: str | None = None) -> str:
        """Attributes of a presentation element (LaTeXML only); registers the node's id."""
        if not self.latexml:
            return ""
        if node is None:
            return self._aux()
        nid = self._new_id()
        self.ids[(id(node), key)] = nid
        if key is None:
            self.owner = nid
        return f' id="{nid}" xref="{nid}.cmml"'

    def _aux(self) -> str:
        """Attributes of an element without a content twin (parenthesis, comma, grouping row):
        LaTeXML points its xref at the enclosing node's content."""
        if not self.latexml:
            return ""
        nid = self._new_id()
        return f' id="{nid}" xref="{self.owner}.cmml"' if self.owner else f' id="{nid}"'

    def _cid(self, node: Node | None, key: str | None = None) -> str:
        if not self.latexml or node is None:
            return ""
        nid = self.ids.get((id(node), key))
        return f' id="{nid}.cmml" xref="{nid}"' if nid else ""

    def _el(self, tag: str, attrs: str, body: str) -> str:
        return f"<{self.p}{tag}{attrs}>{body}</{self.p}{tag}>"

    def _mo(
        self, char: str, extra: str = "", node: Node | None = None, key: str | None = None
    ) -> str:
        return self._el("mo", extra + self._pid(node, key), xml_escape(char))

    def _empty(self, tag: str, node: Node | None, key: str | None = None) -> str:
        return f"<{self.p}{tag}{self._cid(node, key) if node is not None else ''}/>"

    def _csym(self, name: str, cd: str) -> str:
        return self._el("csymbol", f' cd="{cd}"', name)
