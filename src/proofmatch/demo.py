"""The project's demo corpus: a deterministic generator of LaTeXML / arXMLiv XHTML articles.

Why a generator and not a download: the pipeline needs a corpus that every checkout can build in
seconds, that exercises every extraction skip and every pair filter, and that is hard enough for
the models to be worth comparing. The text is produced from small templates written for this
project (``demo_data/<lang>.yaml``); nothing is copied from real papers.

What the output looks like (one article per file, ``out_dir/xhtml/<article_id>.xhtml[.gz]``):

* two markup dialects, as real converters produced them:
  ``latexml`` (LaTeXML 0.8 / ar5iv: ``div.ltx_theorem.ltx_theorem_<kind>`` with a run-in
  ``h6.ltx_title_theorem``, sibling ``div.ltx_proof`` titled "Proof." and ending in ∎, math as
  ``<math alttext=...><semantics>`` presentation + ``annotation-xml`` Content MathML (ids and
  xrefs) + ``annotation application/x-tex``, Unicode math alphabets ℝ 𝐱 𝒜 with
  ``ltx_font_mathcaligraphic``) and ``arxmliv`` (2011 arXMLiv / MREC: unprefixed classes
  ``theorem lemma`` / ``proof``, ``m:``-prefixed MathML, ``mathvariant`` attributes, no alttext
  and no TeX annotation, and some formulas in Content MathML only);
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
from proofmatch.store import atomic_path, write_text

log = logging.getLogger(__name__)

METADATA_COLUMNS = ("article_id", "file", "title", "primary_category", "categories")
DIALECTS = ("latexml", "arxmliv")
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
# A TeX subset -> expression tree


@dataclass(eq=False)
class Node:
    """One node of a formula tree; ``kind`` decides how the other fields are read.

    ``ci`` identifier (text, variant), ``cn`` number, ``mo`` lone operator, ``infix`` operands
    ``kids`` joined by ``ops``, ``neg``/``prefix`` unary, ``sub``/``sup``/``subsup`` scripts,
    ``call`` f(args), ``fence`` delimited group, ``frac``/``binom``/``sqrt``/``accent``,
    ``fn`` named operator (log, dim, sup) with optional scripts and argument, ``big`` sum/product/
    integral with limits and body, ``list`` comma list, ``prime``, ``restrict`` (F|_U).
    """

    kind: str
    text: str = ""
    kids: list["Node"] = field(default_factory=list)
    variant: str | None = None
    ops: list[str] = field(default_factory=list)
    open: str = ""
    close: str = ""
    sub: "Node | None" = None
    sup: "Node | None" = None
    arg: list["Node"] | None = None
    delim: bool = False


# fmt: off
GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ",
    "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ",
    "phi": "ϕ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ",
    "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ",
    "Omega": "Ω",
}
#: Identifiers that LaTeXML marks ``mathvariant="normal"`` (upright symbols).
UPRIGHT_SYMBOLS = {
    "infty": "∞", "emptyset": "∅", "partial": "∂", "nabla": "∇", "ldots": "…", "cdots": "⋯",
    "#": "#", "ell": "ℓ",
}
#: operator -> (character, content MathML head, precedence class). A head ``@name`` is
#: ``<csymbol cd="latexml">name</csymbol>``; ``@ci`` is ``<ci>character</ci>``; else an empty element.
OPERATORS: dict[str, tuple[str, str, str]] = {
    "=": ("=", "eq", "rel"), "<": ("<", "lt", "rel"), ">": (">", "gt", "rel"),
    "le": ("≤", "leq", "rel"), "leq": ("≤", "leq", "rel"), "ge": ("≥", "geq", "rel"),
    "geq": ("≥", "geq", "rel"), "ne": ("≠", "neq", "rel"), "neq": ("≠", "neq", "rel"),
    "in": ("∈", "in", "rel"), "notin": ("∉", "notin", "rel"), "subset": ("⊂", "subset", "rel"),
    "subseteq": ("⊆", "subset", "rel"), "to": ("→", "@ci", "rel"), "mapsto": ("↦", "@maps-to", "rel"),
    "approx": ("≈", "approx", "rel"), "sim": ("∼", "@similar-to", "rel"),
    "cong": ("≅", "@approximately-equals", "rel"), "equiv": ("≡", "equivalent", "rel"),
    "mid": ("∣", "@conditional", "rel"), "nmid": ("∤", "@not-divides", "rel"),
    "ll": ("≪", "@much-less-than", "rel"), "gg": ("≫", "@much-greater-than", "rel"),
    "hookrightarrow": ("↪", "@ci", "rel"), "Rightarrow": ("⇒", "implies", "rel"),
    "colon": (":", "@colon", "rel"), ":": (":", "@colon", "rel"), ":=": ("≔", "@assign", "rel"),
    "+": ("+", "plus", "add"), "-": ("−", "minus", "add"), "pm": ("±", "@plus-or-minus", "add"),
    "cup": ("∪", "union", "add"), "oplus": ("⊕", "@direct-sum", "add"),
    "setminus": ("∖", "setdiff", "add"),
    "times": ("×", "times", "mul"), "cdot": ("⋅", "@ci", "mul"), "circ": ("∘", "compose", "mul"),
    "otimes": ("⊗", "@tensor-product", "mul"), "cap": ("∩", "intersect", "mul"),
    "/": ("/", "divide", "mul"), "wedge": ("∧", "@ci", "mul"), "vee": ("∨", "@ci", "mul"),
    "*": ("∗", "@ci", "mul"), "ast": ("∗", "@ci", "mul"),
    "invisible": ("\u2062", "times", "mul"),
}
ASSOCIATIVE = {"+", "invisible", "times", "cup", "cap", "oplus", "otimes", "circ", "wedge", "vee"}
BIG_OPERATORS = {"sum": ("∑", "sum"), "prod": ("∏", "product"), "bigcup": ("⋃", "union"),
                 "bigcap": ("⋂", "intersect"), "int": ("∫", "int")}
FUNCTIONS = {"log", "ln", "exp", "sin", "cos", "dim", "deg", "ker", "det", "max", "min", "sup",
             "inf", "lim", "limsup", "liminf", "gcd"}
#: Named operators whose argument is a whole product (lim_{n} a_n b_n), not one atom.
LIMIT_LIKE = {"max", "min", "sup", "inf", "lim", "limsup", "liminf"}
#: Named operators with a Content MathML element of their own.
CONTENT_FUNCTIONS = {"log", "ln", "exp", "sin", "cos", "max", "min", "gcd", "det"}
FONTS = {"mathbb": "double-struck", "mathbf": "bold", "boldsymbol": "bold", "mathcal": "script",
         "mathscr": "script", "mathfrak": "fraktur", "mathrm": "normal"}
# fmt: on
ACCENTS = {"overline": "¯", "bar": "¯", "hat": "^", "tilde": "~"}
IGNORED = {"left", "right", "big", "Big", "bigl", "bigr", ",", ";", "!", "quad", " "}

_TEX_TOKEN = re.compile(r"\\[A-Za-z]+|\\[{}|,;! #]|:=|[A-Za-z]|[0-9]+(?:\.[0-9]+)?|\S")


class TexError(ValueError):
    """A template formula outside the supported TeX subset (a bug in demo_data, not in input)."""


def _font_argument(tex: str, i: int) -> tuple[str, int]:
    """The raw text of a ``{...}`` font argument starting at ``tex[i]`` and the index after it."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i >= len(tex) or tex[i] != "{":
        raise TexError(f"font command without braced argument in {tex!r}")
    j = tex.index("}", i)
    return tex[i + 1 : j].strip(), j + 1


def tokenize_tex(tex: str) -> list[tuple[str, str, str | None]]:
    """Tokens ``(type, value, variant)``; types: id num op open close big fn frac binom sqrt accent
    ``^ _ ' ! { } , |`` norm restrict."""
    out: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(tex):
        m = _TEX_TOKEN.match(tex, i)
        if m is None:
            i += 1  # whitespace
            continue
        tok, i = m.group(0), m.end()
        if tok.startswith("\\") and len(tok) > 1 and tok[1:].isalpha():
            name = tok[1:]
            if name in FONTS or name == "operatorname":
                arg, i = _font_argument(tex, i)
                if name == "operatorname" or (len(arg) > 1 and not arg.startswith("\\")):
                    out.append(("fn", arg, None))
                else:
                    ch = GREEK.get(arg[1:], None) if arg.startswith("\\") else arg
                    if ch is None:
                        raise TexError(f"unsupported font argument {arg!r} in {tex!r}")
                    out.append(("id", ch, FONTS[name]))
            elif name in GREEK:
                ch = GREEK[name]
                out.append(("id", ch, "normal" if ch.isupper() else None))
            elif name in UPRIGHT_SYMBOLS:
                out.append(("id", UPRIGHT_SYMBOLS[name], "normal"))
            elif name in OPERATORS:
                out.append(("op", name, None))
            elif name in BIG_OPERATORS:
                out.append(("big", name, None))
            elif name in FUNCTIONS:
                out.append(("fn", name, None))
            elif name in ("frac", "binom", "sqrt"):
                out.append((name, name, None))
            elif name in ACCENTS:
                out.append(("accent", ACCENTS[name], None))
            elif name == "langle":
                out.append(("open", "\\langle", None))
            elif name == "rangle":
                out.append(("close", "\\rangle", None))
            elif name == "prime":
                out.append(("'", "'", None))
            elif name in IGNORED:
                continue
            else:
                raise TexError(f"unsupported TeX command \\{name} in {tex!r}")
        elif tok in ("\\{",):
            out.append(("open", "\\{", None))
        elif tok in ("\\}",):
            out.append(("close", "\\}", None))
        elif tok == "\\|":
            out.append(("norm", "\\|", None))
        elif tok == "\\#":
            out.append(("id", "#", "normal"))
        elif tok.startswith("\\"):
            continue  # \, \; \! and friends: spacing
        elif tok.isalpha():
            out.append(("id", tok, None))
        elif tok[0].isdigit():
            out.append(("num", tok, None))
        elif tok in ("(", "["):
            out.append(("open", tok, None))
        elif tok in (")", "]"):
            out.append(("close", tok, None))
        elif tok == "|":
            out.append(("restrict", "|", None) if tex[i : i + 1] == "_" else ("|", "|", None))
        elif tok in ("^", "_", "'", "!", "{", "}", ","):
            out.append((tok, tok, None))
        elif tok in OPERATORS:
            out.append(("op", tok, None))
        else:
            raise TexError(f"unsupported character {tok!r} in {tex!r}")
    return out


class _TexParser:
    """Recursive descent over :func:`tokenize_tex` tokens: list > relation > additive >
    multiplicative (explicit and invisible times) > unary > postfix (scripts, calls) > atom."""

    def __init__(self, tex: str) -> None:
        self.tex = tex
        self.toks = tokenize_tex(tex)
        self.i = 0
        self.fence_depth = {"|": 0, "\\|": 0}

    def peek(self) -> tuple[str, str, str | None] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str, str | None]:
        tok = self.peek()
        if tok is None:
            raise TexError(f"unexpected end of formula {self.tex!r}")
        self.i += 1
        return tok

    def expect(self, typ: str, value: str | None = None) -> None:
        tok = self.take()
        if tok[0] != typ or (value is not None and tok[1] != value):
            raise TexError(f"expected {value or typ!r}, got {tok[1]!r} in {self.tex!r}")

    def op_class(self, tok: tuple[str, str, str | None] | None) -> str | None:
        return OPERATORS[tok[1]][2] if tok is not None and tok[0] == "op" else None

    def starts_atom(self, tok: tuple[str, str, str | None] | None) -> bool:
        if tok is None:
            return False
        typ = tok[0]
        if typ == "|":
            return self.fence_depth["|"] == 0
        if typ == "norm":
            return self.fence_depth["\\|"] == 0
        return typ in ("id", "num", "open", "{", "frac", "binom", "sqrt", "accent", "fn", "big")

    def parse(self) -> Node:
        node = self.formula()
        if self.peek() is not None:
            raise TexError(f"trailing {self.peek()[1]!r} in {self.tex!r}")
        return node

    def formula(self) -> Node:
        items = [self.relation()]
        while self.peek() is not None and self.peek()[0] == ",":
            self.take()
            items.append(self.relation())
        return items[0] if len(items) == 1 else Node("list", kids=items)

    def relation(self) -> Node:
        kids = [self.additive()]
        ops: list[str] = []
        while self.op_class(self.peek()) == "rel":
            ops.append(self.take()[1])
            kids.append(self.additive())
        return kids[0] if not ops else Node("infix", kids=kids, ops=ops)

    def additive(self) -> Node:
        tok = self.peek()
        if self.op_class(tok) in ("add", "mul"):
            op = self.take()[1]
            nxt = self.peek()
            if nxt is None or nxt[0] in ("}", "close", ","):
                return Node("mo", text=op)  # a lone operator: X^{*}, L^{\vee}
            operand = self.multiplicative()
            left = Node("neg", kids=[operand]) if op == "-" else Node("prefix", text=op, kids=[operand])
        else:
            left = self.multiplicative()
        while self.op_class(self.peek()) == "add":
            op = self.take()[1]
            left = _combine(left, op, self.multiplicative())
        return left

    def multiplicative(self) -> Node:
        left = self.unary()
        while True:
            tok = self.peek()
            if self.op_class(tok) == "mul":
                op = self.take()[1]
                left = _combine(left, op, self.unary())
            elif self.starts_atom(tok):
                left = _combine(left, "invisible", self.unary())
            else:
                return left

    def unary(self) -> Node:
        tok = self.peek()
        if tok is not None and tok[0] == "big":
            self.take()
            node = Node("big", text=tok[1])
            self.scripts(node)
            node.kids = [self.multiplicative()]
            return node
        return self.postfix()

    def scripts(self, node: Node) -> None:
        while self.peek() is not None and self.peek()[0] in ("^", "_"):
            which = self.take()[0]
            arg = self.script_arg()
            if which == "_":
                node.sub = arg
            else:
                node.sup = arg

    def script_arg(self) -> Node:
        tok = self.peek()
        if tok is not None and tok[0] == "{":
            self.take()
            node = self.formula()
            self.expect("}")
            return node
        if tok is not None and tok[0] == "op":
            self.take()
            return Node("mo", text=tok[1])
        return self.atom()

    def postfix(self) -> Node:
        node = self.atom()
        while True:
            tok = self.peek()
            if tok is None:
                return node
            if tok[0] in ("^", "_"):
                holder = Node("scripts", kids=[node])
                self.scripts(holder)
                node = _scripted(node, holder.sub, holder.sup)
            elif tok[0] == "'":
                self.take()
                node = Node("prime", kids=[node])
            elif tok[0] == "!":
                self.take()
                node = Node("factorial", kids=[node])
            elif tok[0] == "restrict":
                self.take()
                self.expect("_")
                node = Node("restrict", kids=[node, self.script_arg()])
            elif tok[0] == "open" and tok[1] in ("(", "[") and _callable(node):
                self.take()
                args = self.formula()
                self.expect("close")
                node = Node(
                    "call",
                    kids=[node],
                    arg=args.kids if args.kind == "list" else [args],
                    open=tok[1],
                    close=")" if tok[1] == "(" else "]",
                )
            else:
                return node

    def atom(self) -> Node:
        tok = self.take()
        typ, value, variant = tok
        if typ == "id":
            return Node("ci", text=value, variant=variant)
        if typ == "num":
            return Node("cn", text=value)
        if typ == "{":
            node = self.formula()
            self.expect("}")
            return node
        if typ == "open":
            inner = self.formula()
            close = self.take()
            if close[0] != "close":
                raise TexError(f"unclosed {value!r} in {self.tex!r}")
            return Node("fence", kids=[inner], open=value, close=close[1])
        if typ in ("|", "norm"):
            key = "|" if typ == "|" else "\\|"
            self.fence_depth[key] += 1
            inner = self.formula()
            self.fence_depth[key] -= 1
            self.expect(typ)
            return Node("fence", kids=[inner], open=key, close=key)
        if typ in ("frac", "binom"):
            return Node(typ, kids=[self.script_arg(), self.script_arg()])
        if typ == "sqrt":
            return Node("sqrt", kids=[self.script_arg()])
        if typ == "accent":
            return Node("accent", text=value, kids=[self.script_arg()])
        if typ == "fn":
            node = Node("fn", text=value)
            self.scripts(node)
            nxt = self.peek()
            if nxt is not None and nxt[0] == "open" and nxt[1] == "(":
                self.take()
                args = self.formula()
                self.expect("close", ")")
                node.arg, node.delim = (args.kids if args.kind == "list" else [args]), True
            elif self.starts_atom(nxt):
                node.arg = [self.multiplicative() if value in LIMIT_LIKE else self.postfix()]
            return node
        raise TexError(f"unexpected {value!r} in {self.tex!r}")


def _callable(node: Node) -> bool:
    """Whether ``node(...)`` is a function application (an identifier, possibly scripted)."""
    base = node
    while base.kind in ("sub", "sup", "subsup", "prime"):
        base = base.kids[0]
    return base.kind == "ci"


def _scripted(base: Node, sub: Node | None, sup: Node | None) -> Node:
    if base.kind == "sub" and sup is not None and sub is None:
        return Node("subsup", kids=[base.kids[0], base.kids[1], sup])
    if base.kind == "sup" and sub is not None and sup is None:
        return Node("subsup", kids=[base.kids[0], sub, base.kids[1]])
    if sub is not None and sup is not None:
        return Node("subsup", kids=[base, sub, sup])
    if sub is not None:
        return Node("sub", kids=[base, sub])
    return Node("sup", kids=[base, sup])


def _combine(left: Node, op: str, right: Node) -> Node:
    """``left op right``, flattening chains of one associative operator (a + b + c)."""
    if left.kind == "infix" and op in ASSOCIATIVE and set(left.ops) == {op}:
        left.kids.append(right)
        left.ops.append(op)
        return left
    return Node("infix", kids=[left, right], ops=[op])


@lru_cache(maxsize=8192)
def parse_tex(tex: str) -> Node:
    """Parse one formula of the supported TeX subset; raises :class:`TexError` outside it.

    Trees are cached and shared, so renderers must not mutate them.
    """
    return _TexParser(tex).parse()


# ============================================================================================
# expression tree -> MathML (presentation, content, both dialects)

_ITALIC_LOWER = {c: chr(0x1D44E + i) for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")} | {"h": "ℎ"}
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


def _italic(ch: str) -> str:
    return _ITALIC_LOWER.get(ch) or _ITALIC_UPPER.get(ch) or _ITALIC_GREEK.get(ch) or ch


def xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def attr_escape(text: str) -> str:
    return xml_escape(text).replace('"', "&quot;")


_FENCE_CHARS = {
    "(": "(",
    ")": ")",
    "[": "[",
    "]": "]",
    "\\{": "{",
    "\\}": "}",
    "|": "|",
    "\\|": "‖",
    "\\langle": "⟨",
    "\\rangle": "⟩",
}


class MathWriter:
    """Render one formula tree as MathML in one dialect.

    LaTeXML: every presentation node has ``id``/``xref`` and its Content MathML twin the mirrored
    ``.cmml`` ids; identifiers in Unicode math alphabets (𝐱, ℝ, 𝒜 + ``ltx_font_mathcaligraphic``),
    upright symbols ``mathvariant="normal"``. arXMLiv: ``m:`` prefix, no inner ids, fonts as
    ``mathvariant`` attributes on plain letters.
    """

    def __init__(self, dialect: str, math_id: str) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}")
        self.latexml = dialect == "latexml"
        self.p = "" if self.latexml else "m:"
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

    def _mo(self, char: str, extra: str = "", node: Node | None = None, key: str | None = None) -> str:
        return self._el("mo", extra + self._pid(node, key), xml_escape(char))

    # -- presentation -----------------------------------------------------------------------
    def pres(self, n: Node) -> str:
        saved = self.owner
        try:
            return self._pres(n)
        finally:
            self.owner = saved

    def _pres(self, n: Node) -> str:
        k = n.kind
        if k == "ci":
            return self._mi(n)
        if k == "cn":
            return self._el("mn", self._pid(n), xml_escape(n.text))
        if k == "mo":
            return self._mo(OPERATORS[n.text][0], node=n)
        if k == "infix":
            attrs = self._pid(n)
            parts = [self.pres(n.kids[0])]
            for i, (op, kid) in enumerate(zip(n.ops, n.kids[1:])):
                if i and _one_head(n) and self.latexml:
                    # a + b + c has one <plus/>: every '+' points at it, as in LaTeXML
                    twin = self.ids[(id(n), "op0")]
                    parts.append(
                        self._el("mo", f' id="{self._new_id()}" xref="{twin}.cmml"', xml_escape(OPERATORS[op][0]))
                    )
                else:
                    parts.append(self._mo(OPERATORS[op][0], node=n, key=f"op{i}"))
                parts.append(self.pres(kid))
            return self._el("mrow", attrs, "".join(parts))
        if k in ("neg", "prefix"):
            attrs = self._pid(n)
            op = "−" if k == "neg" else OPERATORS[n.text][0]
            return self._el("mrow", attrs, self._mo(op, node=n, key="op") + self.pres(n.kids[0]))
        if k in ("sub", "sup", "subsup"):
            attrs = self._pid(n)
            tag = {"sub": "msub", "sup": "msup", "subsup": "msubsup"}[k]
            return self._el(tag, attrs, "".join(self.pres(c) for c in n.kids))
        if k == "prime":
            attrs = self._pid(n)
            return self._el("msup", attrs, self.pres(n.kids[0]) + self._mo("′", node=n, key="op"))
        if k == "factorial":
            attrs = self._pid(n)
            return self._el("mrow", attrs, self.pres(n.kids[0]) + self._mo("!", node=n, key="op"))
        if k == "restrict":
            attrs = self._pid(n)
            inner = self._el("mrow", "", self.pres(n.kids[0]) + self._mo("|", ' fence="false"', node=n, key="op"))
            return self._el("msub", attrs, inner + self.pres(n.kids[1]))
        if k == "call":
            attrs = self._pid(n)
            return self._el(
                "mrow", attrs, self.pres(n.kids[0]) + self._mo("\u2061") + self._args(n.arg, n.open, n.close)
            )
        if k == "fence":
            inner = n.kids[0]
            grouping = n.open in ("(", "[") and inner.kind != "list"
            attrs = self._aux() if grouping else self._pid(n)
            items = inner.kids if inner.kind == "list" else [inner]
            return self._el("mrow", attrs, self._fenced(items, n.open, n.close))
        if k == "list":
            attrs = self._pid(n)
            return self._el("mrow", attrs, self._joined(n.kids))
        if k == "frac":
            return self._el("mfrac", self._pid(n), self.pres(n.kids[0]) + self.pres(n.kids[1]))
        if k == "binom":
            attrs = self._pid(n)
            inner = self._el("mfrac", ' linethickness="0pt"', self.pres(n.kids[0]) + self.pres(n.kids[1]))
            return self._el("mrow", attrs, self._mo("(") + inner + self._mo(")"))
        if k == "sqrt":
            return self._el("msqrt", self._pid(n), self.pres(n.kids[0]))
        if k == "accent":
            attrs = self._pid(n)
            return self._el(
                "mover", ' accent="true"' + attrs, self.pres(n.kids[0]) + self._mo(n.text, node=n, key="op")
            )
        if k == "fn":
            return self._fn(n)
        if k == "big":
            attrs = self._pid(n)
            op = self._el("mo", ' largeop="true" symmetric="true"' + self._pid(n, "op"), BIG_OPERATORS[n.text][0])
            if n.sub is not None or n.sup is not None:
                op = self._scripts(
                    op, n.sub, n.sup, "munderover" if n.sub is not None and n.sup is not None else "munder"
                )
            return self._el("mrow", attrs, op + self.pres(n.kids[0]))
        raise ValueError(f"cannot render node kind {k!r}")

    def _mi(self, n: Node) -> str:
        ch, variant = n.text, n.variant
        if self.latexml:
            if variant in ("bold", "double-struck", "script", "fraktur"):
                cls = ' class="ltx_font_mathcaligraphic"' if variant == "script" else ""
                return self._el("mi", cls + self._pid(n), xml_escape(math_alphabet(ch, variant)))
            normal = ' mathvariant="normal"' if variant == "normal" and len(ch) == 1 else ""
            return self._el("mi", normal + self._pid(n), xml_escape(ch))
        mv = f' mathvariant="{variant}"' if variant and not (variant == "normal" and len(ch) > 1) else ""
        return self._el("mi", mv, xml_escape(ch))

    def _scripts(self, base: str, sub: Node | None, sup: Node | None, tag: str) -> str:
        if sub is not None and sup is not None:
            return self._el(tag if tag.startswith("munder") else "msubsup", "", base + self.pres(sub) + self.pres(sup))
        if sub is not None:
            return self._el("munder" if tag.startswith("munder") else "msub", "", base + self.pres(sub))
        return self._el("mover" if tag.startswith("munder") else "msup", "", base + self.pres(sup))

    def _joined(self, items: list[Node]) -> str:
        parts: list[str] = []
        for i, item in enumerate(items):
            if i:
                parts.append(self._mo(","))
            parts.append(self.pres(item))
        return "".join(parts)

    def _fenced(self, items: list[Node], open_: str, close: str) -> str:
        return (
            self._mo(_FENCE_CHARS[open_], ' stretchy="false"')
            + self._joined(items)
            + self._mo(_FENCE_CHARS[close], ' stretchy="false"')
        )

    def _args(self, args: list[Node] | None, open_: str = "(", close: str = ")") -> str:
        return self._el("mrow", "", self._fenced(args or [], open_, close))

    def _fn(self, n: Node) -> str:
        attrs = self._pid(n) if n.arg else ""
        head = self._el(
            "mi", self._pid(n, "head"), xml_escape(n.text.replace("limsup", "lim sup").replace("liminf", "lim inf"))
        )
        if n.sub is not None or n.sup is not None:
            head = self._scripts(head, n.sub, n.sup, "munderover" if n.text in LIMIT_LIKE else "msubsup")
        if not n.arg:
            return head
        body = self._args(n.arg) if n.delim else self.pres(n.arg[0])
        return self._el("mrow", attrs, head + self._mo("\u2061") + body)

    # -- content ------------------------------------------------------------------------------
    def cont(self, n: Node) -> str:
        k = n.kind
        if k == "ci":
            return self._el("ci", self._cid(n), xml_escape(self._ci_text(n)))
        if k == "cn":
            kind = "float" if "." in n.text else "integer"
            return self._el("cn", f' type="{kind}"' + self._cid(n), xml_escape(n.text))
        if k == "mo":
            return self._head(n.text, n, None)
        if k == "infix":
            if _one_head(n):
                head = self._head(n.ops[0], n, "op0")
                return self._el("apply", self._cid(n), head + "".join(self.cont(c) for c in n.kids))
            parts = [self.cont(n.kids[0])]
            for i, (op, kid) in enumerate(zip(n.ops, n.kids[1:])):
                parts.append(self._head(op, n, f"op{i}"))
                parts.append(self.cont(kid))
            head = self._el("csymbol", ' cd="ambiguous"', "multirelation")
            return self._el("apply", self._cid(n), head + "".join(parts))
        if k == "neg":
            return self._el("apply", self._cid(n), self._empty("minus", n, "op") + self.cont(n.kids[0]))
        if k == "prefix":
            return self._el("apply", self._cid(n), self._head(n.text, n, "op") + self.cont(n.kids[0]))
        if k in ("sub", "sup"):
            role = "subscript" if k == "sub" else "superscript"
            if k == "sup" and n.kids[1].kind == "cn" and n.kids[0].kind == "ci":
                return self._el(
                    "apply", self._cid(n), self._empty("power", None) + self.cont(n.kids[0]) + self.cont(n.kids[1])
                )
            return self._el(
                "apply", self._cid(n), self._csym(role, "ambiguous") + self.cont(n.kids[0]) + self.cont(n.kids[1])
            )
        if k == "subsup":
            inner = self._el(
                "apply", "", self._csym("subscript", "ambiguous") + self.cont(n.kids[0]) + self.cont(n.kids[1])
            )
            return self._el(
                "apply", self._cid(n), self._csym("superscript", "ambiguous") + inner + self.cont(n.kids[2])
            )
        if k == "prime":
            return self._el(
                "apply",
                self._cid(n),
                self._csym("superscript", "ambiguous") + self.cont(n.kids[0]) + self._el("ci", self._cid(n, "op"), "′"),
            )
        if k == "factorial":
            return self._el("apply", self._cid(n), self._empty("factorial", n, "op") + self.cont(n.kids[0]))
        if k == "restrict":
            return self._el(
                "apply",
                self._cid(n),
                self._el("csymbol", ' cd="latexml"' + self._cid(n, "op"), "restriction")
                + self.cont(n.kids[0])
                + self.cont(n.kids[1]),
            )
        if k == "call":
            return self._el("apply", self._cid(n), self.cont(n.kids[0]) + "".join(self.cont(a) for a in n.arg or []))
        if k == "fence":
            return self._fence_content(n)
        if k == "list":
            return self._el("list", self._cid(n), "".join(self.cont(c) for c in n.kids))
        if k == "frac":
            return self._el(
                "apply", self._cid(n), self._empty("divide", None) + self.cont(n.kids[0]) + self.cont(n.kids[1])
            )
        if k == "binom":
            return self._el(
                "apply", self._cid(n), self._csym("binomial", "latexml") + self.cont(n.kids[0]) + self.cont(n.kids[1])
            )
        if k == "sqrt":
            return self._el("apply", self._cid(n), self._empty("root", None) + self.cont(n.kids[0]))
        if k == "accent":
            return self._el(
                "apply", self._cid(n), self._el("ci", self._cid(n, "op"), xml_escape(n.text)) + self.cont(n.kids[0])
            )
        if k == "fn":
            return self._fn_content(n)
        if k == "big":
            elem = BIG_OPERATORS[n.text][1]
            head = self._empty(elem, n, "op")
            if n.sub is not None:
                head = self._el("apply", "", self._csym("subscript", "ambiguous") + head + self.cont(n.sub))
            if n.sup is not None:
                head = self._el("apply", "", self._csym("superscript", "ambiguous") + head + self.cont(n.sup))
            return self._el("apply", self._cid(n), head + self.cont(n.kids[0]))
        raise ValueError(f"cannot render node kind {k!r}")

    def _ci_text(self, n: Node) -> str:
        if n.variant in ("bold", "double-struck", "script", "fraktur"):
            return math_alphabet(n.text, n.variant)
        if self.latexml and n.variant is None and len(n.text) == 1:
            return _italic(n.text)
        return n.text

    def _empty(self, tag: str, node: Node | None, key: str | None = None) -> str:
        return f"<{self.p}{tag}{self._cid(node, key) if node is not None else ''}/>"

    def _csym(self, name: str, cd: str) -> str:
        return self._el("csymbol", f' cd="{cd}"', name)

    def _head(self, op: str, node: Node | None, key: str | None) -> str:
        char, head, _ = OPERATORS[op]
        if head == "@ci":
            return self._el("ci", self._cid(node, key) if node is not None else "", xml_escape(char))
        if head.startswith("@"):
            return self._el("csymbol", ' cd="latexml"' + (self._cid(node, key) if node is not None else ""), head[1:])
        return self._empty(head, node, key)

    def _fence_content(self, n: Node) -> str:
        inner = n.kids[0]
        items = inner.kids if inner.kind == "list" else [inner]
        body = "".join(self.cont(c) for c in items)
        if n.open == "|":
            return self._el("apply", self._cid(n), self._empty("abs", None) + body)
        if n.open == "\\|":
            return self._el("apply", self._cid(n), self._csym("norm", "latexml") + body)
        if n.open == "\\langle":
            return self._el("apply", self._cid(n), self._csym("inner-product", "latexml") + body)
        if n.open == "\\{":
            return self._el("set", self._cid(n), body)
        if inner.kind != "list":
            return self.cont(inner)  # grouping parentheses: no content of their own
        if len(items) == 2:
            closure = {("(", ")"): "open", ("[", "]"): "closed", ("[", ")"): "closed-open", ("(", "]"): "open-closed"}
            return self._el("interval", f' closure="{closure.get((n.open, n.close), "open")}"' + self._cid(n), body)
        return self._el("vector", self._cid(n), body)

    def _fn_content(self, n: Node) -> str:
        name = n.text
        head = (
            self._empty(name, n, "head")
            if name in CONTENT_FUNCTIONS
            else self._el("ci", self._cid(n, "head"), xml_escape(name))
        )
        if n.sub is not None:
            head = self._el("apply", "", self._csym("subscript", "ambiguous") + head + self.cont(n.sub))
        if n.sup is not None:
            head = self._el("apply", "", self._csym("superscript", "ambiguous") + head + self.cont(n.sup))
        if not n.arg:
            return head
        return self._el("apply", self._cid(n), head + "".join(self.cont(a) for a in n.arg))


def _one_head(n: Node) -> bool:
    """Whether an infix chain is one Content MathML application (a + b + c, a = b)."""
    return len(n.ops) == 1 or (len(set(n.ops)) == 1 and n.ops[0] in ASSOCIATIVE)


#: arXMLiv formula forms and their per-mille thresholds (the rest is parallel markup).
ARXMLIV_FORMS = (("content_first", 80), ("content_annotation", 120), ("pure_content", 200))


def arxmliv_form(math_id: str, article_id: str) -> str:
    """Which of the arXMLiv math forms a formula gets: a pure function of its id."""
    r = zlib.crc32(f"{article_id}/{math_id}".encode()) % 1000
    for form, threshold in ARXMLIV_FORMS:
        if r < threshold:
            return form
    return "parallel"


_ID_SLOT = "\x00"  # stands for the formula id in cached renderings (never in TeX or text)


def render_math(tex: str, math_id: str, dialect: str, display: bool, form: str = "parallel") -> str:
    """One ``<math>`` element for ``tex`` (LaTeXML or arXMLiv markup) with id ``math_id``."""
    return _render_math(tex, dialect, display, form).replace(_ID_SLOT, math_id)


@lru_cache(maxsize=16384)
def _render_math(tex: str, dialect: str, display: bool, form: str) -> str:
    """The rendering with a placeholder id: articles repeat formulas, so each is built once."""
    math_id = _ID_SLOT
    tree = parse_tex(tex)
    w = MathWriter(dialect, math_id)
    mode = "block" if display else "inline"
    if dialect == "latexml":
        pres = w.pres(tree)
        cont = w.cont(tree)
        # LaTeXML 0.8.7 drops the TeX annotation when the TeX is exactly "0" (alttext stays).
        tex_ann = (
            "" if tex.strip() == "0" else f'<annotation encoding="application/x-tex">{xml_escape(tex)}</annotation>'
        )
        return (
            f'<math xmlns="http://www.w3.org/1998/Math/MathML" id="{math_id}" class="ltx_Math" '
            f'alttext="{attr_escape(tex)}" display="{mode}"><semantics>{pres}'
            f'<annotation-xml encoding="MathML-Content">{cont}</annotation-xml>{tex_ann}</semantics></math>'
        )
    head = f'<m:math display="{mode}" id="{math_id}">'
    if form == "pure_content":
        return f"{head}{w.cont(tree)}</m:math>"
    if form == "content_annotation":
        return f'{head}<m:semantics><m:annotation-xml encoding="MathML-Content">{w.cont(tree)}</m:annotation-xml></m:semantics></m:math>'
    if form == "content_first":
        return (
            f'{head}<m:semantics>{w.cont(tree)}<m:annotation-xml encoding="MathML-Presentation">'
            f"{w.pres(tree)}</m:annotation-xml></m:semantics></m:math>"
        )
    return (
        f'{head}<m:semantics>{w.pres(tree)}<m:annotation-xml encoding="MathML-Content">'
        f"{w.cont(tree)}</m:annotation-xml></m:semantics></m:math>"
    )


# ============================================================================================
# templates


@lru_cache(maxsize=None)
def load_language(lang: str) -> dict[str, Any]:
    """The templates of one language (``demo_data/<lang>.yaml``), roles resolved from English."""
    if lang not in LANGUAGES:
        raise ValueError(f"no demo templates for language {lang!r}; have {LANGUAGES}")
    text = resources.files("proofmatch").joinpath("demo_data", f"{lang}.yaml").read_text(encoding="utf-8")
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
        # The first articles fix the mix for small corpora: both dialects, both file kinds.
        dialect = DIALECTS[index % 2] if index < 4 else ("arxmliv" if rng.random() < 0.35 else "latexml")
        gz = index in (0, 3) or (index >= 4 and rng.random() < 0.5)
        specs.append(
            Spec(
                index=index,
                article_id=f"demo-{index + 1:04d}",
                lang=lang,
                primary=primary,
                categories=categories,
                dialect=dialect,
                gz=gz,
                named_entities=dialect == "arxmliv" and rng.random() < 0.25,
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
        elif self.spec.dialect == "arxmliv":
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
    """Markup of one planned article in its dialect; ids follow LaTeXML's scheme."""

    def __init__(self, article: Article) -> None:
        self.a = article
        self.spec = article.spec
        self.latexml = article.spec.dialect == "latexml"
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
                f"<title>{title}</title>\n<!--Generated by proofmatch.demo in the markup of LaTeXML 0.8.-->\n\n"
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
                '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:m="http://www.w3.org/1998/Math/MathML" '
                f'xmlns:arxmliv="http://arxmliv.kwarc.info/ns/" xml:lang="{spec.lang}">\n'
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
