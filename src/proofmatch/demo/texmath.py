"""A small TeX subset turned into the MathML that LaTeXML and arXMLiv wrote (for the demo corpus).

The demo generator (:mod:`proofmatch.demo.generate`) writes its formulas as TeX in templates; this module
parses that subset (:func:`parse_tex`, :class:`TexError` for anything outside it) into an
expression tree and renders it in one of three dialects (:func:`render_math`): ``latexml``
(presentation MathML in ``semantics`` with Content MathML and TeX annotations, Unicode math
alphabets), ``arxmliv`` (``m:``-prefixed, ``mathvariant`` attributes, no TeX, some formulas in
Content MathML first or only: :func:`arxmliv_form`) and ``arxmliv_ltx`` (the 2011 arXMLiv markup as
real articles of that era have it: ``<math xmlns=MathML>`` with a default namespace, ``semantics``
holding presentation MathML, ``annotation-xml encoding="MathML-Content"`` and a TeX annotation;
fonts as ``mathvariant`` attributes, no inner ids). It exists so that the extraction and
linearization stages meet the markup variety of real converters without a LaTeX installation.
"""

from __future__ import annotations
import re
import zlib
from dataclasses import dataclass, field
from functools import lru_cache

DIALECTS = ("latexml", "arxmliv", "arxmliv_ltx")

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
    ``mathvariant`` attributes on plain letters. arXMLiv-ltx: as arXMLiv without the prefix.
    """

    def __init__(self, dialect: str, math_id: str) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"unknown dialect {dialect!r}")
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
    """One ``<math>`` element for ``tex`` in ``dialect`` (:data:`DIALECTS`) with id ``math_id``;
    ``form`` (:func:`arxmliv_form`) applies to the ``arxmliv`` dialect only."""
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
    if dialect == "arxmliv_ltx":
        return (
            f'<math xmlns="http://www.w3.org/1998/Math/MathML" display="{mode}" id="{math_id}"><semantics>'
            f'{w.pres(tree)}<annotation-xml encoding="MathML-Content">{w.cont(tree)}</annotation-xml>'
            f'<annotation encoding="application/x-tex">{xml_escape(tex)}</annotation></semantics></math>'
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
