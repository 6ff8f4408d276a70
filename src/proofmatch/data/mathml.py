"""MathML to typed math tokens: pick or build the presentation tree of a ``<math>``, then walk it.

Why presentation MathML: it is what a reader sees, in reading order. LaTeXML writes parallel
markup, ``math/semantics/(presentation, annotation-xml[Content], annotation[TeX])``; the content
tree and the TeX string restate the same formula and must never reach the tokens, or every
symbol would be counted three times and TeX macro names would leak into the vocabulary. The
``alttext`` attribute is ignored for the same reason.

:func:`presentation` follows the rules of the reference pipeline's ctop stylesheet for
``<semantics>`` (first child if it is presentation markup, else an ``annotation-xml`` with a
presentation encoding, else the first child converted from content MathML, else a Content
MathML ``annotation-xml``; a TeX ``annotation`` is never read) but is our own code:
:func:`content_to_presentation` implements about thirty conversion rules for content-only math
(2011 arXMLiv / canonical MathML): leaves (``ci→mi``, ``cn→mn``, ``csymbol→mi``, constants such
as ``reals→ℝ``), LaTeXML's ``csymbol`` heads (``subscript``/``superscript`` → ``msub``/``msup``,
``multirelation`` → ``a ≤ b < c``, ``restriction``, ``norm``, ``delimited-[]``,
``tensor-product``...), scripted big operators applied to a body (``∑_{i}^{n} a_i``), n-ary
infix operators with precedence-driven parentheses, unary/binary minus, ``divide`` as a slash
(as ctop writes it), ``power→msup``, ``root→msqrt/mroot``, fences (abs, floor, ceiling),
factorial, not, binders with ``bvar``/``lowlimit``/``uplimit``/``condition`` (forall, exists,
sum, product, int, limit, diff), containers (set, list, interval, vector, matrix, piecewise),
and ``head(args)`` for every other head. It is written from the MathML specification, not taken
from ctop.xsl. Where ctop would turn a LaTeXML symbol name into a token (``subscript x i``,
``multirelation ...``) it gives what the reader sees instead.

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
import functools
import unicodedata
from typing import Callable, Iterator

from lxml import etree

from proofmatch.data.views import math_token

MATHML_NS = "http://www.w3.org/1998/Math/MathML"

TOKEN_ELEMENTS = frozenset({"mi", "mo", "mn", "mtext", "ms"})
PRESENTATION_ELEMENTS = TOKEN_ELEMENTS | frozenset(
    {
        "math", "mrow", "mfrac", "msqrt", "mroot", "mstyle", "merror", "mpadded", "mphantom",
        "mfenced", "menclose", "msub", "msup", "msubsup", "munder", "mover", "munderover",
        "mmultiscripts", "mprescripts", "none", "mtable", "mtr", "mlabeledtr", "mtd",
        "maligngroup", "malignmark", "mspace", "mglyph", "maction", "mstack", "mlongdiv",
        "msgroup", "msrow", "mscarries", "mscarry", "msline",
    }
)
ANNOTATIONS = frozenset({"annotation", "annotation-xml"})
PRESENTATION_ENCODINGS = frozenset({"mathml-presentation", "application/mathml-presentation+xml"})
CONTENT_ENCODINGS = frozenset({"mathml-content", "application/mathml-content+xml"})

# Characters that occupy a position in the markup but show no symbol.
_INVISIBLE = dict.fromkeys(map(ord, "\u2061\u2062\u2063\u2064\u200b"), None)

# ---------------------------------------------------------------------------------------------
# element helpers


@functools.lru_cache(maxsize=4096)
def _local(tag: str) -> str:
    return tag.rpartition("}")[2].rpartition(":")[2]


def local_name(el: etree._Element) -> str:
    """Local name of an element in any namespace form: ``{ns}mi``, ``m:mi`` (undeclared), ``mi``.

    Comments and processing instructions give ``""``.
    """
    tag = el.tag
    return _local(tag) if isinstance(tag, str) else ""


def _m(name: str) -> str:
    return f"{{{MATHML_NS}}}{name}"


def _children(el: etree._Element) -> list[etree._Element]:
    return [c for c in el if isinstance(c.tag, str)]


def _new(name: str, *children: etree._Element | None, text: str | None = None, **attrib: str) -> etree._Element:
    el = etree.Element(_m(name), nsmap={None: MATHML_NS})
    for key, value in attrib.items():
        el.set(key, value)
    if text is not None:
        el.text = text
    for child in children:
        if child is not None:
            el.append(child)
    return el


def _mo(symbol: str) -> etree._Element:
    return _new("mo", text=symbol)


def _mi(symbol: str, variant: str | None = None) -> etree._Element:
    return _new("mi", text=symbol, **({"mathvariant": variant} if variant else {}))


def _row(nodes: list[etree._Element]) -> etree._Element:
    """One element for a list of nodes: the node itself, or an ``mrow`` around several."""
    return nodes[0] if len(nodes) == 1 else _new("mrow", *nodes)


def _fenced(open_: str, items: list[etree._Element], close: str, sep: str = ",") -> etree._Element:
    nodes: list[etree._Element] = [_mo(open_)] if open_ else []
    for i, item in enumerate(items):
        if i:
            nodes.append(_mo(sep))
        nodes.append(item)
    if close:
        nodes.append(_mo(close))
    return _new("mrow", *nodes)


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
_GREEK_SYMBOLS = {"EPSILON SYMBOL": "GREEK LUNATE EPSILON SYMBOL", "CAPITAL THETA SYMBOL": "GREEK CAPITAL THETA SYMBOL"}
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


def font_of(element_name: str, symbol: str, variant: str | None) -> str | None:
    """The font suffix of one token: None for the default look (normal, or italic one-letter mi)."""
    if not variant or variant == "normal":
        return None
    if variant == "italic" and element_name == "mi" and len(symbol) == 1:
        return None
    return variant


# ---------------------------------------------------------------------------------------------
# content MathML -> presentation MathML

_QUALIFIERS = frozenset(
    {"bvar", "lowlimit", "uplimit", "condition", "degree", "domainofapplication", "momentabout", "logbase"}
)
# n-ary infix operators: symbol and binding strength (higher binds tighter)
_INFIX: dict[str, tuple[str, int]] = {
    "implies": ("⇒", 1), "equivalent": ("≡", 1),
    "or": ("∨", 2), "xor": ("⊻", 2),
    "and": ("∧", 3),
    "eq": ("=", 4), "neq": ("≠", 4), "lt": ("<", 4), "gt": (">", 4), "leq": ("≤", 4), "geq": ("≥", 4),
    "in": ("∈", 4), "notin": ("∉", 4), "subset": ("⊆", 4), "prsubset": ("⊂", 4),
    "notsubset": ("⊈", 4), "notprsubset": ("⊄", 4), "approx": ("≈", 4), "factorof": ("∣", 4),
    "tendsto": ("→", 4),
    "plus": ("+", 5), "minus": ("−", 5), "union": ("∪", 5), "setdiff": ("∖", 5),
    "times": ("\u2062", 6), "intersect": ("∩", 6), "compose": ("∘", 6), "divide": ("/", 6),
    "cartesianproduct": ("×", 6), "vectorproduct": ("×", 6), "scalarproduct": ("⋅", 6),
    "outerproduct": ("⊗", 6),
}
_NON_ASSOCIATIVE = frozenset({"minus", "setdiff", "symbol", "divide"}) | {k for k, (_, p) in _INFIX.items() if p == 4}
# LaTeXML csymbol heads (cd="latexml"/"ambiguous") that are infix operators
_CSYMBOL_INFIX: dict[str, tuple[str, int]] = {
    "tensor-product": ("⊗", 6), "direct-sum": ("⊕", 5), "maps-to": ("↦", 4),
    "superset-of": ("⊃", 4), "superset-of-or-equals": ("⊇", 4), "not-subset-of": ("⊄", 4),
    "much-greater-than": ("≫", 4), "much-less-than": ("≪", 4), "similar-to": ("∼", 4),
    "similar-to-or-equals": ("≃", 4), "approximately-equals": ("≅", 4), "not-divides": ("∤", 4), "not-equivalent-to": ("≢", 4), "leads-to": ("↝", 4),
    "plus-or-minus": ("±", 5), "minus-or-plus": ("∓", 5), "modulo": ("mod", 5),
    "evaluated-at": ("|", 4), "conditional": ("∣", 4), "divides": ("∣", 4),
    "proportional-to": ("∝", 4), "perpendicular-to": ("⟂", 4), "parallel-to": ("∥", 4),
    "times": ("×", 6), "formulae-sequence": (",", 0), "assign": (":=", 4), "coproduct": ("∐", 6), "product": ("∏", 6),
    "colon": (":", 4),
}
# Binding strength of an operator character used as an ``apply`` head (``<ci>⋅</ci>``); others 4.
_SYMBOL_PRECEDENCE = {**dict.fromkeys("⋅∗×∘⊗⊙∧∨", 6), **dict.fromkeys("±∓⊕∪∖", 5)}
_FENCE_HEADS = {"abs": ("|", "|"), "floor": ("⌊", "⌋"), "ceiling": ("⌈", "⌉"), "card": ("|", "|")}
_BIG_OPERATORS = {"sum": "∑", "product": "∏", "int": "∫", "limit": "lim"}
_QUANTIFIERS = {"forall": "∀", "exists": "∃"}
_CONSTANTS: dict[str, tuple[str, str | None]] = {
    "reals": ("ℝ", None), "integers": ("ℤ", None), "naturalnumbers": ("ℕ", None),
    "rationals": ("ℚ", None), "complexes": ("ℂ", None), "primes": ("ℙ", None),
    "pi": ("π", None), "exponentiale": ("e", "normal"), "imaginaryi": ("i", "normal"),
    "eulergamma": ("γ", None), "infinity": ("∞", None), "emptyset": ("∅", None),
    "true": ("true", "normal"), "false": ("false", "normal"), "notanumber": ("NaN", "normal"),
}
_INTERVALS = {"closed": ("[", "]"), "open": ("(", ")"), "closed-open": ("[", ")"), "open-closed": ("(", "]")}
CONTENT_ELEMENTS = frozenset(
    {"apply", "bind", "ci", "cn", "csymbol", "cs", "cbytes", "cerror", "share", "sep", "lambda",
     "set", "list", "interval", "vector", "matrix", "matrixrow", "piecewise", "piece", "otherwise",
     "declare", "not", "divide", "power", "root", "factorial", "diff", "partialdiff", "exp", "ln",
     "log", "sin", "cos", "tan", "max", "min", "gcd", "lcm", "determinant", "transpose", "inverse",
     "conjugate", "arg", "real", "imaginary", "rem", "quotient"}
    | _QUALIFIERS | set(_INFIX) | set(_FENCE_HEADS) | set(_BIG_OPERATORS) | set(_QUANTIFIERS)
    | set(_CONSTANTS)
)


def _text(el: etree._Element) -> str:
    return " ".join("".join(el.itertext()).split())


MATHVARIANTS = frozenset(v for _, v in _STYLES) | {"normal"}


def _identifier(text: str, variant: str | None = None) -> etree._Element:
    """An ``mi`` for a content leaf; math alphanumeric code points become letter + font.

    LaTeXML also names some content symbols ``<font>-<char>`` (``italic-ϕ``, ``normal-Γ``).
    """
    split = split_alphanumeric(text)
    if split is not None:
        text, variant = split
    elif _bare(text) != text:
        text, variant = _bare(text), text.partition("-")[0]
    if variant == "italic" and len(text) == 1:
        variant = None
    return _mi(text, variant)


class _Converter:
    """Content to presentation conversion of one content tree."""

    def __init__(self, present: Callable[[etree._Element], list[etree._Element]], root: etree._Element) -> None:
        self._present = present  # handles semantics / presentation islands inside content
        self._root = root
        self._sharing: set[str] = set()  # share targets being expanded (a cycle is not followed)

    def convert(self, el: etree._Element) -> etree._Element:
        name = local_name(el)
        if name in PRESENTATION_ELEMENTS or name == "semantics":
            return _row(self._present(el) or [_new("mrow")])
        if name == "ci":
            kids = _children(el)
            if kids:  # MathML 2 allows presentation markup inside ci
                return _row([n for k in kids for n in self._present(k)] or [_new("mrow")])
            return _identifier(_text(el))
        if name == "cn":
            return self._number(el)
        if name == "csymbol":
            text = _text(el)
            if text in _CSYMBOL_INFIX:  # an operator used as a value, e.g. the base of ⊗_R
                return _mo(_CSYMBOL_INFIX[text][0])
            return _new("mrow") if text == "absent" else _identifier(text)
        if name == "share":
            return self._share(el)
        if name in ("cs", "cbytes"):
            return _new("ms" if name == "cs" else "mtext", text=_text(el))
        if name in _CONSTANTS:
            symbol, variant = _CONSTANTS[name]
            return _identifier(symbol, variant)
        if name in ("apply", "bind"):
            return self._apply(el)
        if name == "lambda":
            bvars, _, args = self._split(_children(el))
            return _new("mrow", _mo("λ"), *self._bvars(bvars), _mo("."), *[self.convert(a) for a in args])
        if name in ("set", "list", "vector"):
            return self._container(el, name)
        if name == "interval":
            open_, close = _INTERVALS.get(el.get("closure", "closed"), ("[", "]"))
            return _fenced(open_, [self.convert(c) for c in _children(el)], close)
        if name == "matrix":
            return _fenced("(", [_new("mtable", *[self.convert(r) for r in _children(el)])], ")")
        if name == "matrixrow":
            return _new("mtr", *[_new("mtd", self.convert(c)) for c in _children(el)])
        if name == "piecewise":
            rows = [self.convert(p) for p in _children(el)]
            return _new("mrow", _mo("{"), _new("mtable", *rows))
        if name in ("piece", "otherwise"):
            return _new("mtr", *[_new("mtd", self.convert(c)) for c in _children(el)])
        if name in ("declare", "sep") or name in _QUALIFIERS:
            return _new("mrow", *[self.convert(c) for c in _children(el)])
        if name == "cerror":
            return _new("merror", *[self.convert(c) for c in _children(el)])
        kids = _children(el)
        if kids:  # unknown container: keep its children in order
            return _new("mrow", *[self.convert(c) for c in kids])
        if name in _BIG_OPERATORS:  # the base of a scripted big operator: ∑ in sum_{i}^{n}
            return _mo(_BIG_OPERATORS[name])
        if name in _QUANTIFIERS:
            return _mo(_QUANTIFIERS[name])
        if name in _INFIX:  # an operator used as a value, e.g. <in/> alone
            return _mo(_INFIX[name][0])
        return _mi(name, "normal")  # a function used as a value, e.g. <sin/> alone

    def _share(self, el: etree._Element) -> etree._Element:
        """``<share href="#id">`` repeats another node of the same tree (LaTeXML: a = b = c)."""
        ref = (el.get("href") or "").lstrip("#")
        target = None
        if ref and ref not in self._sharing:
            target = next((t for t in self._root.iter() if t.get("id") == ref), None)
        if target is None:
            return _new("mrow")
        self._sharing.add(ref)
        try:
            return self.convert(target)
        finally:
            self._sharing.discard(ref)

    # -- leaves ---------------------------------------------------------------------------
    def _number(self, el: etree._Element) -> etree._Element:
        parts = [" ".join((el.text or "").split())]
        for sep in _children(el):
            parts.append(" ".join((sep.tail or "").split()))
        kind = el.get("type", "")
        if len(parts) == 2:
            a, b = (_new("mn", text=p) for p in parts)
            if kind == "rational":
                return _new("mrow", a, _mo("/"), b)
            if kind == "complex-cartesian":
                return _new("mrow", a, _mo("+"), b, _mo("\u2062"), _mi("i", "normal"))
            if kind == "e-notation":
                return _new("mrow", a, _mo("E"), b)
            return _new("mrow", _mi("Polar", "normal"), _fenced("(", [a, b], ")"))
        split = split_alphanumeric(parts[0])
        mn = _new("mn", text=split[0], mathvariant=split[1]) if split else _new("mn", text=parts[0])
        base = el.get("base")
        return _new("msub", mn, _new("mn", text=base)) if base and base != "10" else mn

    # -- apply ----------------------------------------------------------------------------
    @staticmethod
    def _split(kids: list[etree._Element]) -> tuple[list, dict[str, etree._Element], list]:
        bvars, quals, args = [], {}, []
        for k in kids:
            n = local_name(k)
            if n == "bvar":
                bvars.append(k)
            elif n in _QUALIFIERS:
                quals[n] = k
            else:
                args.append(k)
        return bvars, quals, args

    def _bvars(self, bvars: list[etree._Element]) -> list[etree._Element]:
        nodes: list[etree._Element] = []
        for i, b in enumerate(bvars):
            if i:
                nodes.append(_mo(","))
            inner = [self.convert(c) for c in _children(b) if local_name(c) != "degree"]
            nodes.extend(inner)
        return nodes

    def _qual(self, quals: dict[str, etree._Element], name: str) -> etree._Element | None:
        q = quals.get(name)
        return None if q is None else _row([self.convert(c) for c in _children(q)] or [_new("mrow")])

    def _operand(self, arg: etree._Element, parent: str, prec: int, position: int) -> etree._Element:
        """An operand of an infix operator, in parentheses where precedence requires them."""
        node = self.convert(arg)
        child = _infix_of(arg)
        if child is not None:
            cname, cprec = child
            same_level = cprec == prec and (cname != parent or parent in _NON_ASSOCIATIVE)
            if cprec < prec or (same_level and (position > 0 or prec == 4)):  # relations never chain
                return _fenced("(", [node], ")")
        return node

    def _apply(self, el: etree._Element) -> etree._Element:
        kids = _children(el)
        if not kids:
            return _new("mrow")
        head, rest = kids[0], kids[1:]
        hname = local_name(head)
        bvars, quals, args = self._split(rest)
        conv = self.convert
        if hname == "csymbol":
            symbol = _text(head)
            special = self._csymbol_apply(symbol, args)
            if special is not None:
                return special
            if symbol in CONTENT_ELEMENTS:  # strict content MathML: <csymbol>plus</csymbol>
                hname = symbol
        if hname in ("ci", "mo") and len(args) >= 2 and _is_operator_symbol(_text(head)):
            symbol = _bare(_text(head))
            return self._infix("symbol", symbol, _SYMBOL_PRECEDENCE.get(symbol, 4), args)  # f : X → S
        if hname == "apply" and _is_big_operator(head):  # LaTeXML: sum_{i=1}^{n} a_i, int_U f dx
            return _new("mrow", conv(head), *[conv(a) for a in args])
        if hname in _INFIX and not (hname == "minus" and len(args) == 1):
            op, prec = _INFIX[hname]
            return self._infix(hname, op, prec, args)
        if hname in ("minus", "not"):
            sign = "−" if hname == "minus" else "¬"
            return _new("mrow", _mo(sign), self._operand(args[0], hname, 7, 0)) if args else _mo(sign)
        if hname == "power" and len(args) == 2:
            return _new("msup", _script_base(conv(args[0]), args[0]), conv(args[1]))
        if hname == "root" and args:
            degree = self._qual(quals, "degree")
            return _new("mroot", conv(args[0]), degree) if degree is not None else _new("msqrt", conv(args[0]))
        if hname in _FENCE_HEADS and args:
            open_, close = _FENCE_HEADS[hname]
            return _fenced(open_, [conv(a) for a in args], close)
        if hname == "factorial" and args:
            return _new("mrow", _script_base(conv(args[0]), args[0]), _mo("!"))
        if hname in _QUANTIFIERS:
            nodes = [_mo(_QUANTIFIERS[hname]), *self._bvars(bvars)]
            cond = self._qual(quals, "condition")
            if cond is not None:
                nodes += [_mo(":"), cond]
            nodes += [_mo("."), *[conv(a) for a in args]]
            return _new("mrow", *nodes)
        if hname in _BIG_OPERATORS:
            return self._big(hname, bvars, quals, args)
        if hname in ("diff", "partialdiff"):
            return self._derivative(hname, bvars, args)
        if hname == "log" and "logbase" in quals:
            head_node = _new("msub", _mi("log", "normal"), self._qual(quals, "logbase"))
        elif hname in ("apply", "bind", "ci", "csymbol", "lambda", "semantics") or hname in PRESENTATION_ELEMENTS:
            head_node = conv(head)  # f(x), (f∘g)(x), f_i(x)
        else:
            head_node = _mi(hname, "normal")  # a named function: sin, max, determinant, ...
        cond = self._qual(quals, "condition") or self._qual(quals, "domainofapplication")
        if cond is not None:
            head_node = _new("munder", head_node, cond)
        if not args:
            return head_node
        return _new("mrow", head_node, _mo("\u2061"), _fenced("(", [conv(a) for a in args], ")"))

    def _csymbol_apply(self, symbol: str, args: list[etree._Element]) -> etree._Element | None:
        """LaTeXML's csymbol heads: sub/superscripts, delimiters, set builders, infix operators."""
        conv = self.convert
        if symbol in ("subscript", "superscript") and len(args) >= 2:
            scripts = [conv(a) for a in args[1:]]
            script = scripts[0] if len(scripts) == 1 else _fenced("", scripts, "")
            return _new("msub" if symbol == "subscript" else "msup", _script_base(conv(args[0]), args[0]), script)
        if symbol == "multirelation" and len(args) >= 3:  # LaTeXML: a ≤ b < c as (a, ≤, b, <, c)
            nodes = [self._operand(a, symbol, 4, 1) if i % 2 == 0 else self._relation(a) for i, a in enumerate(args)]
            return _new("mrow", *nodes)
        if symbol == "restriction" and len(args) == 2:  # F|_U
            return _new("msub", _new("mrow", _script_base(conv(args[0]), args[0]), _mo("|")), conv(args[1]))
        if symbol in ("norm", "inner-product") and args:
            open_, close = ("‖", "‖") if symbol == "norm" else ("⟨", "⟩")
            return _fenced(open_, [conv(a) for a in args], close)
        if symbol.startswith("delimited-") and len(symbol) > len("delimited-"):
            fence = symbol[len("delimited-") :]
            return _fenced(fence[0], [conv(a) for a in args], fence[1:])
        if symbol == "conditional-set" and len(args) == 2:
            return _new("mrow", _mo("{"), conv(args[0]), _mo("|"), conv(args[1]), _mo("}"))
        if symbol in _CSYMBOL_INFIX:
            op, prec = _CSYMBOL_INFIX[symbol]
            return self._infix(symbol, op, prec, args)
        return None

    def _relation(self, el: etree._Element) -> etree._Element:
        """The operator of a ``multirelation`` (``<leq/>``, ``<ci>→</ci>``, a LaTeXML csymbol)."""
        name = local_name(el)
        if name in _INFIX and not _children(el):
            return _mo(_INFIX[name][0])
        if name == "csymbol" and _text(el) in _CSYMBOL_INFIX:
            return _mo(_CSYMBOL_INFIX[_text(el)][0])
        if name in ("ci", "mo") and _is_operator_symbol(_text(el)):
            return _mo(_bare(_text(el)))
        return self.convert(el)

    def _derivative(self, name: str, bvars: list[etree._Element], args: list[etree._Element]) -> etree._Element:
        """d/dx f (or ∂/∂x f); f′ without a bound variable."""
        body = [self.convert(a) for a in args]
        if not bvars:
            return _new("msup", _row(body or [_new("mrow")]), _mo("′"))
        d = (lambda: _mi("d", "normal")) if name == "diff" else (lambda: _mo("∂"))
        den: list[etree._Element] = []
        for b in bvars:
            for c in _children(b):
                if local_name(c) != "degree":
                    den += [d(), self.convert(c)]
        return _new("mrow", _new("mfrac", d(), _row(den or [_new("mrow")])), *body)

    def _infix(self, name: str, op: str, prec: int, args: list[etree._Element]) -> etree._Element:
        if len(args) == 1:  # unary use of an n-ary operator, e.g. <plus/> x
            return _new("mrow", _mo(op), self.convert(args[0]))
        nodes: list[etree._Element] = []
        for i, a in enumerate(args):
            if i:
                nodes.append(_mo(op))
            nodes.append(self._operand(a, name, prec, i))
        return _new("mrow", *nodes)

    def _big(self, name: str, bvars: list, quals: dict, args: list) -> etree._Element:
        op = _mo(_BIG_OPERATORS[name])
        low, up = self._qual(quals, "lowlimit"), self._qual(quals, "uplimit")
        cond = self._qual(quals, "condition") or self._qual(quals, "domainofapplication")
        body = [self.convert(a) for a in args]
        interval = next((a for a in args if local_name(a) == "interval"), None)
        if name == "int" and interval is not None and low is None:  # ∫ over <interval> a b
            body = [self.convert(a) for a in args if a is not interval]
            ends = [self.convert(c) for c in _children(interval)]
            if len(ends) == 2:
                low, up = ends
        bv = self._bvars(bvars)
        if name == "limit":
            under = cond if cond is not None else (_new("mrow", *bv, _mo("→"), low) if low is not None else None)
            head = _new("munder", op, under) if under is not None else op
            return _new("mrow", head, *body)
        if name == "int":
            if low is not None and up is not None:
                head = _new("msubsup", op, low, up)
            elif cond is not None or low is not None:
                head = _new("msub", op, cond if cond is not None else low)
            else:
                head = op
            tail = [n for b in bv if local_name(b) != "mo" for n in (_mi("d", "normal"), b)]
            return _new("mrow", head, *body, *tail)
        if low is not None:
            under = _new("mrow", *bv, _mo("="), low) if bv else low
            head = _new("munderover", op, under, up) if up is not None else _new("munder", op, under)
        elif cond is not None:
            head = _new("munder", op, cond)
        elif bv:
            head = _new("munder", op, _row(bv))
        else:
            head = op
        return _new("mrow", head, *body)

    def _container(self, el: etree._Element, name: str) -> etree._Element:
        open_, close = {"set": ("{", "}"), "list": ("[", "]"), "vector": ("(", ")")}[name]
        bvars, quals, args = self._split(_children(el))
        cond = self._qual(quals, "condition")
        items = [self.convert(a) for a in args]
        if cond is not None:  # {x | condition}
            subject = items or self._bvars(bvars)
            return _new("mrow", _mo(open_), *subject, _mo("|"), cond, _mo(close))
        return _fenced(open_, items, close)


def _bare(text: str) -> str:
    """``normal-:`` -> ``:`` (LaTeXML's font-prefixed content names)."""
    prefix, dash, rest = text.partition("-")
    return rest if dash and rest and prefix in MATHVARIANTS else text


def _is_operator_symbol(text: str) -> bool:
    """A ci/mo text such as ``→`` or ``normal-:`` that LaTeXML uses as an operator head."""
    symbol = _bare(text)
    return len(symbol) == 1 and unicodedata.category(symbol)[0] in "SP"


def _infix_of(el: etree._Element) -> tuple[str, int] | None:
    """(head name, precedence) when ``el`` is an ``apply`` rendered as an infix operation."""
    if local_name(el) != "apply":
        return None
    kids = _children(el)
    if not kids:
        return None
    head = kids[0]
    hname = local_name(head)
    if hname == "csymbol":
        symbol = _text(head)
        if symbol == "multirelation":
            return (symbol, 4)
        return (symbol, _CSYMBOL_INFIX[symbol][1]) if symbol in _CSYMBOL_INFIX else None
    if hname == "minus" and len(kids) == 2:
        return ("minus", 7)
    if hname in ("ci", "mo") and len(kids) >= 3 and _is_operator_symbol(_text(head)):
        return ("symbol", _SYMBOL_PRECEDENCE.get(_bare(_text(head)), 4))
    return (hname, _INFIX[hname][1]) if hname in _INFIX else None


def _is_big_operator(el: etree._Element) -> bool:
    """Whether ``el`` is a big operator (sum, product, int, limit), bare or with LaTeXML scripts."""
    while local_name(el) == "apply":
        kids = _children(el)
        if len(kids) < 2 or local_name(kids[0]) != "csymbol" or _text(kids[0]) not in ("subscript", "superscript"):
            return False
        el = kids[1]
    return local_name(el) in _BIG_OPERATORS and not _children(el)


def _script_base(node: etree._Element, source: etree._Element) -> etree._Element:
    """Parenthesise a compound base of a script (``(a+b)^2``, not ``a+b^2``)."""
    if _infix_of(source) is not None:
        return _fenced("(", [node], ")")
    return node


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
        return [_Converter(_present, _top(el)).convert(el)]
    if name in TOKEN_ELEMENTS:
        node = copy.deepcopy(el)
        node.tail = None
        if el.tag != _m(name):  # prefixed or no namespace: move the token into MathML
            node.tag = _m(name)
        return [node]
    tag = _m(name) if name in PRESENTATION_ELEMENTS else el.tag
    node = etree.Element(tag, attrib=dict(el.attrib), nsmap={None: MATHML_NS})
    node.text = el.text
    for child in el:
        for sub in _present(child):
            node.append(sub)
    return [node]


def _present_semantics(sem: etree._Element) -> list[etree._Element]:
    kids = _children(sem)
    if not kids:
        return []
    first = kids[0]
    if local_name(first) in PRESENTATION_ELEMENTS or local_name(first) == "semantics":
        return _present(first)
    for k in kids[1:]:
        if local_name(k) == "annotation-xml" and _encoding(k) in PRESENTATION_ENCODINGS:
            return [n for c in _children(k) for n in _present(c)]
    if local_name(first) not in ANNOTATIONS:
        return [_Converter(_present, _top(first)).convert(first)]
    # No primary tree: the formula lives only in a Content MathML annotation (ctop converts
    # whatever comes first; a TeX string is never read).
    for k in kids:
        if local_name(k) == "annotation-xml" and _encoding(k) in CONTENT_ENCODINGS:
            converter = _Converter(_present, _top(k))
            return [converter.convert(c) for c in _children(k)]
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
    node = _Converter(_present, _top(content_el)).convert(content_el)
    _normalize(node, None)
    return node


def presentation(math_el: etree._Element) -> etree._Element:
    """A new ``<math>`` holding only presentation MathML for ``math_el`` (a copy, no annotations).

    Idempotent: the presentation of a presentation tree is an equal tree. Token elements carry
    their effective ``mathvariant``; one-character identifiers are plain ``mi`` elements (see
    :func:`single_char_identifiers`) whose text can be rewritten in place.
    """
    out = etree.Element(_m("math"), nsmap={None: MATHML_NS})
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
    for i, child in enumerate(_children(el)):
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
