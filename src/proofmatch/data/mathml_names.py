"""MathML names and fonts, shared by the presentation reader and the content converter.

:mod:`proofmatch.data.mathml` (presentation tree and tokens) and
:mod:`proofmatch.data.content_mathml` (content to presentation) both need the namespace, the
classes of presentation elements and the local name of an element in any namespace form; both
also read mathematical alphanumeric code points (``𝑀`` U+1D440, ``𝒪`` U+1D4AA, ``ℝ`` U+211D, ...)
as the plain letter plus its ``mathvariant`` (``M``; ``O`` script; ``R`` double-struck), so that
one visible symbol gives one token whichever way LaTeXML wrote it. The table
:data:`ALPHANUMERIC` is built from the Unicode character names (``MATHEMATICAL BOLD SCRIPT
CAPITAL A``), plus the Letterlike-block characters that fill the holes of that block.
"""

from __future__ import annotations

import functools
import unicodedata

from lxml import etree

MATHML_NS = "http://www.w3.org/1998/Math/MathML"

TOKEN_ELEMENTS = frozenset({"mi", "mo", "mn", "mtext", "ms"})
PRESENTATION_ELEMENTS = TOKEN_ELEMENTS | frozenset(
    {
        "math",
        "mrow",
        "mfrac",
        "msqrt",
        "mroot",
        "mstyle",
        "merror",
        "mpadded",
        "mphantom",
        "mfenced",
        "menclose",
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
        "mlabeledtr",
        "mtd",
        "maligngroup",
        "malignmark",
        "mspace",
        "mglyph",
        "maction",
        "mstack",
        "mlongdiv",
        "msgroup",
        "msrow",
        "mscarries",
        "mscarry",
        "msline",
    }
)

# ---------------------------------------------------------------------------------------------
# element names


@functools.lru_cache(maxsize=4096)
def _local(tag: str) -> str:
    return tag.rpartition("}")[2].rpartition(":")[2]


def local_name(el: etree._Element) -> str:
    """Local name of an element in any namespace form: ``{ns}mi``, ``m:mi`` (undeclared), ``mi``.

    Comments and processing instructions give ``""``.
    """
    tag = el.tag
    return _local(tag) if isinstance(tag, str) else ""


def mathml_tag(name: str) -> str:
    """``mi`` -> ``{http://www.w3.org/1998/Math/MathML}mi``."""
    return f"{{{MATHML_NS}}}{name}"


def element_children(el: etree._Element) -> list[etree._Element]:
    """The element children of ``el`` (no comments or processing instructions)."""
    return [c for c in el if isinstance(c.tag, str)]


# ---------------------------------------------------------------------------------------------
# mathematical alphanumeric symbols -> (plain character, mathvariant)

_STYLES = (  # Unicode name fragment -> MathML mathvariant; longest first so prefixes do not win
    ("SANS-SERIF BOLD ITALIC", "sans-serif-bold-italic"),
    ("SANS-SERIF BOLD", "bold-sans-serif"),
    ("SANS-SERIF ITALIC", "sans-serif-italic"),
    ("SANS-SERIF", "sans-serif"),
    ("BOLD ITALIC", "bold-italic"),
    ("BOLD SCRIPT", "bold-script"),
    ("BOLD FRAKTUR", "bold-fraktur"),
    ("DOUBLE-STRUCK", "double-struck"),
    ("MONOSPACE", "monospace"),
    ("BOLD", "bold"),
    ("ITALIC", "italic"),
    ("SCRIPT", "script"),
    ("FRAKTUR", "fraktur"),
)
_GREEK_SYMBOLS = {
    "EPSILON SYMBOL": "GREEK LUNATE EPSILON SYMBOL",
    "CAPITAL THETA SYMBOL": "GREEK CAPITAL THETA SYMBOL",
}
# Letterlike-block characters that fill the holes of the mathematical alphanumeric block.
_LETTERLIKE = {
    "ℎ": ("h", "italic"),
    **{c: (p, "script") for c, p in zip("ℬℰℱℋℐℒℳℛℯℊℴ", "BEFHILMRego")},
    **{c: (p, "fraktur") for c, p in zip("ℭℌℑℜℨ", "CHIRZ")},
    **{c: (p, "double-struck") for c, p in zip("ℂℍℕℙℚℝℤ", "CHNPQRZ")},
}


def _plain_of(name: str) -> str | None:
    """Plain character for the part of a mathematical alphanumeric name after its style."""
    case, _, rest = name.partition(" ")
    candidates = []
    if case in ("CAPITAL", "SMALL"):  # one-letter names are Latin (A), longer ones Greek (ALPHA)
        script = "LATIN" if len(rest) == 1 else "GREEK"
        candidates.append(f"{script} {case} LETTER {rest}")
    if case == "DIGIT":
        candidates.append(name)
    if name in _GREEK_SYMBOLS:
        candidates.append(_GREEK_SYMBOLS[name])
    candidates += [f"GREEK {name}", name]
    for cand in candidates:
        try:
            return unicodedata.lookup(cand)
        except KeyError:
            continue
    return None


def _build_alphanumeric_table() -> dict[str, tuple[str, str]]:
    table = dict(_LETTERLIKE)
    for cp in range(0x1D400, 0x1D800):
        name = unicodedata.name(chr(cp), "")
        if not name.startswith("MATHEMATICAL "):
            continue
        body = name[len("MATHEMATICAL ") :]
        for prefix, variant in _STYLES:
            if body.startswith(prefix + " "):
                plain = _plain_of(body[len(prefix) + 1 :])
                if plain is not None:
                    table[chr(cp)] = (plain, variant)
                break
    return table


ALPHANUMERIC: dict[str, tuple[str, str]] = _build_alphanumeric_table()


def split_alphanumeric(text: str) -> tuple[str, str] | None:
    """``'𝑆𝑐ℎ'`` -> ``('Sch', 'italic')``; None unless every character is one font's math letter."""
    if not text:
        return None
    pairs = [ALPHANUMERIC.get(c) for c in text]
    if any(p is None for p in pairs):
        return None
    variants = {p[1] for p in pairs}  # type: ignore[index]
    if len(variants) != 1:
        return None
    return "".join(p[0] for p in pairs), variants.pop()  # type: ignore[index]


#: Every ``mathvariant`` value the table gives, plus ``normal``.
MATHVARIANTS = frozenset(v for _, v in _STYLES) | {"normal"}
