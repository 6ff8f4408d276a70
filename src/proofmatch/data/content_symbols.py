"""Content MathML symbols: what each head shows as, how tightly it binds, and which nodes are infix.

The tables :mod:`proofmatch.data.content_mathml` converts by: n-ary infix operators of
canonical MathML (``plus``, ``leq``, ``in``...) with their character and binding strength
(higher binds tighter; the precedence drives where parentheses go), LaTeXML's ``csymbol`` heads
(``cd="latexml"``/``"ambiguous"``: ``tensor-product``, ``direct-sum``, ``maps-to``...), fences
(``abs``, ``floor``...), big operators, quantifiers, constants (``reals`` -> ``ℝ``), interval
closures and the qualifier elements (``bvar``, ``lowlimit``...). Written from the MathML
specification and LaTeXML's output, not taken from ctop.xsl.
"""

from __future__ import annotations

import unicodedata

from lxml import etree

from proofmatch.data.mathml_names import MATHVARIANTS, element_children, local_name

QUALIFIERS = frozenset(
    {
        "bvar",
        "lowlimit",
        "uplimit",
        "condition",
        "degree",
        "domainofapplication",
        "momentabout",
        "logbase",
    }
)
# n-ary infix operators: symbol and binding strength (higher binds tighter)
INFIX: dict[str, tuple[str, int]] = {
    "implies": ("⇒", 1),
    "equivalent": ("≡", 1),
    "or": ("∨", 2),
    "xor": ("⊻", 2),
    "and": ("∧", 3),
    "eq": ("=", 4),
    "neq": ("≠", 4),
    "lt": ("<", 4),
    "gt": (">", 4),
    "leq": ("≤", 4),
    "geq": ("≥", 4),
    "in": ("∈", 4),
    "notin": ("∉", 4),
    "subset": ("⊆", 4),
    "prsubset": ("⊂", 4),
    "notsubset": ("⊈", 4),
    "notprsubset": ("⊄", 4),
    "approx": ("≈", 4),
    "factorof": ("∣", 4),
    "tendsto": ("→", 4),
    "plus": ("+", 5),
    "minus": ("−", 5),
    "union": ("∪", 5),
    "setdiff": ("∖", 5),
    "times": ("\u2062", 6),
    "intersect": ("∩", 6),
    "compose": ("∘", 6),
    "divide": ("/", 6),
    "cartesianproduct": ("×", 6),
    "vectorproduct": ("×", 6),
    "scalarproduct": ("⋅", 6),
    "outerproduct": ("⊗", 6),
}
NON_ASSOCIATIVE = frozenset({"minus", "setdiff", "symbol", "divide"}) | {
    k for k, (_, p) in INFIX.items() if p == 4
}
# LaTeXML csymbol heads (cd="latexml"/"ambiguous") that are infix operators
CSYMBOL_INFIX: dict[str, tuple[str, int]] = {
    "tensor-product": ("⊗", 6),
    "direct-sum": ("⊕", 5),
    "maps-to": ("↦", 4),
    "superset-of": ("⊃", 4),
    "superset-of-or-equals": ("⊇", 4),
    "not-subset-of": ("⊄", 4),
    "much-greater-than": ("≫", 4),
    "much-less-than": ("≪", 4),
    "similar-to": ("∼", 4),
    "similar-to-or-equals": ("≃", 4),
    "approximately-equals": ("≅", 4),
    "not-divides": ("∤", 4),
    "not-equivalent-to": ("≢", 4),
    "leads-to": ("↝", 4),
    "plus-or-minus": ("±", 5),
    "minus-or-plus": ("∓", 5),
    "modulo": ("mod", 5),
    "evaluated-at": ("|", 4),
    "conditional": ("∣", 4),
    "divides": ("∣", 4),
    "proportional-to": ("∝", 4),
    "perpendicular-to": ("⟂", 4),
    "parallel-to": ("∥", 4),
    "times": ("×", 6),
    "formulae-sequence": (",", 0),
    "assign": (":=", 4),
    "coproduct": ("∐", 6),
    "product": ("∏", 6),
    "colon": (":", 4),
}
# Binding strength of an operator character used as an ``apply`` head (``<ci>⋅</ci>``); others 4.
SYMBOL_PRECEDENCE = {**dict.fromkeys("⋅∗×∘⊗⊙∧∨", 6), **dict.fromkeys("±∓⊕∪∖", 5)}
FENCE_HEADS = {"abs": ("|", "|"), "floor": ("⌊", "⌋"), "ceiling": ("⌈", "⌉"), "card": ("|", "|")}
BIG_OPERATORS = {"sum": "∑", "product": "∏", "int": "∫", "limit": "lim"}
QUANTIFIERS = {"forall": "∀", "exists": "∃"}
CONSTANTS: dict[str, tuple[str, str | None]] = {
    "reals": ("ℝ", None),
    "integers": ("ℤ", None),
    "naturalnumbers": ("ℕ", None),
    "rationals": ("ℚ", None),
    "complexes": ("ℂ", None),
    "primes": ("ℙ", None),
    "pi": ("π", None),
    "exponentiale": ("e", "normal"),
    "imaginaryi": ("i", "normal"),
    "eulergamma": ("γ", None),
    "infinity": ("∞", None),
    "emptyset": ("∅", None),
    "true": ("true", "normal"),
    "false": ("false", "normal"),
    "notanumber": ("NaN", "normal"),
}
INTERVALS = {
    "closed": ("[", "]"),
    "open": ("(", ")"),
    "closed-open": ("[", ")"),
    "open-closed": ("(", "]"),
}
CONTENT_ELEMENTS = frozenset(
    {
        "apply",
        "bind",
        "ci",
        "cn",
        "csymbol",
        "cs",
        "cbytes",
        "cerror",
        "share",
        "sep",
        "lambda",
        "set",
        "list",
        "interval",
        "vector",
        "matrix",
        "matrixrow",
        "piecewise",
        "piece",
        "otherwise",
        "declare",
        "not",
        "divide",
        "power",
        "root",
        "factorial",
        "diff",
        "partialdiff",
        "exp",
        "ln",
        "log",
        "sin",
        "cos",
        "tan",
        "max",
        "min",
        "gcd",
        "lcm",
        "determinant",
        "transpose",
        "inverse",
        "conjugate",
        "arg",
        "real",
        "imaginary",
        "rem",
        "quotient",
    }
    | QUALIFIERS
    | set(INFIX)
    | set(FENCE_HEADS)
    | set(BIG_OPERATORS)
    | set(QUANTIFIERS)
    | set(CONSTANTS)
)


def text_of(el: etree._Element) -> str:
    """The text of a content leaf, whitespace collapsed."""
    return " ".join("".join(el.itertext()).split())


def bare_symbol(text: str) -> str:
    """``normal-:`` -> ``:`` (LaTeXML's font-prefixed content names)."""
    prefix, dash, rest = text.partition("-")
    return rest if dash and rest and prefix in MATHVARIANTS else text


def is_operator_symbol(text: str) -> bool:
    """A ci/mo text such as ``→`` or ``normal-:`` that LaTeXML uses as an operator head."""
    symbol = bare_symbol(text)
    return len(symbol) == 1 and unicodedata.category(symbol)[0] in "SP"


def infix_of(el: etree._Element) -> tuple[str, int] | None:
    """(head name, precedence) when ``el`` is an ``apply`` rendered as an infix operation."""
    if local_name(el) != "apply":
        return None
    kids = element_children(el)
    if not kids:
        return None
    head = kids[0]
    hname = local_name(head)
    if hname == "csymbol":
        symbol = text_of(head)
        if symbol == "multirelation":
            return (symbol, 4)
        return (symbol, CSYMBOL_INFIX[symbol][1]) if symbol in CSYMBOL_INFIX else None
    if hname == "minus" and len(kids) == 2:
        return ("minus", 7)
    if hname in ("ci", "mo") and len(kids) >= 3 and is_operator_symbol(text_of(head)):
        return ("symbol", SYMBOL_PRECEDENCE.get(bare_symbol(text_of(head)), 4))
    return (hname, INFIX[hname][1]) if hname in INFIX else None


def is_big_operator(el: etree._Element) -> bool:
    """Whether ``el`` is a big operator (sum, product, int, limit), bare or with LaTeXML scripts."""
    while local_name(el) == "apply":
        kids = element_children(el)
        if (
            len(kids) < 2
            or local_name(kids[0]) != "csymbol"
            or text_of(kids[0]) not in ("subscript", "superscript")
        ):
            return False
        el = kids[1]
    return local_name(el) in BIG_OPERATORS and not element_children(el)
