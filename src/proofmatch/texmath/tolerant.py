"""A tolerant TeX reader for search queries: presentation MathML of any formula, never an error.

The strict subset (:mod:`proofmatch.texmath.parse`) builds an expression tree and both MathML
trees, and refuses what it does not know; the demo corpus is written with it. A query, though, is
TeX as people write it and as LaTeXML keeps it in the ``application/x-tex`` annotations of real
articles: ``\\textstyle``, ``\\mathop{\\rm Spec}``, ``\\text{...}``, ``\\otimes_R``,
``\\bigoplus``, ``\\xrightarrow{}``, environments, half formulas such as ``\\leq n``.
:func:`tolerant_presentation` reads such TeX as a sequence of atoms with scripts (no operator
precedence: the tokens of a query do not need it) and writes the presentation MathML LaTeXML
writes for it, symbol for symbol, which is what the linearizer reads
(:func:`proofmatch.data.mathml.math_tokens`). A command it does not know is kept as one
identifier ``\\name`` (its braced arguments follow as groups) and reported, so that a query
degrades instead of failing.

Coverage on the TeX annotations of the Stacks corpus's statements:
:mod:`proofmatch.texmath.coverage` (docs/search.md gives the figures).

why this is long: most of it is the command tables (symbols, operators, fonts, accents, one entry a
line), and the reader that dispatches on them is one class; splitting the tables from the reader
would leave each half unreadable alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from proofmatch.texmath.dialects import xml_escape
from proofmatch.texmath.lexer import GREEK, UPRIGHT_SYMBOLS

# fmt: off
#: Commands written as one ``<mo>`` (relations, binary operators, arrows, delimiters, punctuation).
SYMBOLS = {
    # relations
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "leqslant": "⩽",
    "geqslant": "⩾", "in": "∈", "ni": "∋", "notin": "∉", "subset": "⊂", "supset": "⊃",
    "subseteq": "⊆", "supseteq": "⊇", "subsetneq": "⊊", "supsetneq": "⊋", "sqsubset": "⊏",
    "approx": "≈", "sim": "∼", "simeq": "≃", "cong": "≅", "equiv": "≡", "propto": "∝",
    "mid": "∣", "nmid": "∤", "parallel": "∥", "perp": "⟂", "ll": "≪", "gg": "≫", "prec": "≺",
    "succ": "≻", "preceq": "⪯", "succeq": "⪰", "models": "⊧", "vdash": "⊢", "dashv": "⊣",
    "lhd": "⊲", "unlhd": "⊴", "triangleleft": "◁", "asymp": "≍", "doteq": "≐",
    # arrows
    "to": "→", "rightarrow": "→", "gets": "←", "leftarrow": "←", "leftrightarrow": "↔",
    "Rightarrow": "⇒", "Leftarrow": "⇐", "Leftrightarrow": "⇔", "iff": "⇔", "implies": "⟹",
    "impliedby": "⟸", "longrightarrow": "⟶", "longleftarrow": "⟵", "longleftrightarrow": "⟷",
    "Longrightarrow": "⟹", "Longleftarrow": "⟸", "Longleftrightarrow": "⟺", "mapsto": "↦",
    "longmapsto": "⟼", "hookrightarrow": "↪", "hookleftarrow": "↩", "twoheadrightarrow": "↠",
    "twoheadleftarrow": "↞", "rightarrowtail": "↣", "leadsto": "↝", "uparrow": "↑",
    "downarrow": "↓", "updownarrow": "↕", "Uparrow": "⇑", "Downarrow": "⇓", "nearrow": "↗",
    "searrow": "↘", "swarrow": "↙", "nwarrow": "↖", "rightrightarrows": "⇉",
    "leftleftarrows": "⇇", "rightleftarrows": "⇄", "leftrightarrows": "⇆", "rightsquigarrow": "⇝",
    "dashrightarrow": "⇢", "dashleftarrow": "⇠", "curvearrowright": "↷", "circlearrowleft": "↺",
    "leftrightharpoons": "⇋", "rightleftharpoons": "⇌", "rightharpoonup": "⇀",
    # binary operators
    "pm": "±", "mp": "∓", "times": "×", "div": "÷", "cdot": "⋅", "circ": "∘", "bullet": "∙",
    "ast": "∗", "star": "⋆", "otimes": "⊗", "oplus": "⊕", "ominus": "⊖", "odot": "⊙",
    "oslash": "⊘", "cup": "∪", "cap": "∩", "sqcup": "⊔", "sqcap": "⊓", "uplus": "⊎",
    "setminus": "∖", "smallsetminus": "∖", "wedge": "∧", "land": "∧", "vee": "∨", "lor": "∨",
    "amalg": "∐", "dagger": "†", "ddagger": "‡", "wr": "≀", "diamond": "⋄", "triangle": "△",
    "bigtriangleup": "△", "bigtriangledown": "▽", "rtimes": "⋊", "ltimes": "⋉", "boxtimes": "⊠",
    # logic, misc
    "neg": "¬", "lnot": "¬", "forall": "∀", "exists": "∃", "nexists": "∄", "colon": ":",
    "vert": "|", "Vert": "‖", "lvert": "|", "rvert": "|", "lVert": "‖", "rVert": "‖",
    "langle": "⟨", "rangle": "⟩", "lbrace": "{", "rbrace": "}", "lbrack": "[", "rbrack": "]",
    "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "ulcorner": "⌜", "urcorner": "⌝",
    "backslash": "∖", "slash": "/", "|": "‖", "{": "{", "}": "}",
    "dots": "…", "ldots": "…", "cdots": "⋯", "vdots": "⋮", "ddots": "⋱", "dotsc": "…",
    "dotsb": "⋯", "dotsm": "⋯", "dotso": "…", "dotsi": "⋯", "cdotp": "⋅", "ldotp": ".",
    "prime": "′", "natural": "♮", "flat": "♭", "checkmark": "✓", "Box": "□", "square": "□",
    "blacksquare": "■", "qed": "∎", "S": "§", "mathsection": "§", "P": "¶", "angle": "∠", "top": "⊤",
    "bot": "⊥", "surd": "√",
}
#: Commands written as one ``<mi>`` (beyond Greek and the strict subset's upright symbols).
IDENTIFIERS = {
    "aleph": "ℵ", "beth": "ℶ", "hbar": "ℏ", "imath": "ı", "jmath": "ȷ", "wp": "℘", "Re": "ℜ",
    "Im": "ℑ", "varnothing": "∅", "sharp": "♯", "heartsuit": "♡", "clubsuit": "♣",
    "spadesuit": "♠", "diamondsuit": "♢", "Upsilon": "ϒ", "varpi": "ϖ", "varrho": "ϱ",
    "varsigma": "ς", "vartheta": "ϑ", "varkappa": "ϰ", "digamma": "ϝ", "omicron": "ο",
    "dag": "†", "ddag": "‡", "circledast": "⊛", "mho": "℧", "eth": "ð", "Finv": "Ⅎ",
    "complement": "∁", "infty": "∞", "infinity": "∞",
}
#: Large operators (``<mo largeop>``, limits under and over in display).
BIG = {
    "sum": "∑", "prod": "∏", "coprod": "∐", "bigoplus": "⨁", "bigotimes": "⨂", "bigodot": "⨀",
    "bigcup": "⋃", "bigcap": "⋂", "bigsqcup": "⨆", "biguplus": "⨄", "bigwedge": "⋀",
    "bigvee": "⋁", "int": "∫", "iint": "∬", "iiint": "∭", "oint": "∮", "intop": "∫",
    "smallint": "∫",
}
#: Named operators written as an upright ``<mi>`` word.
NAMED = {
    "log", "ln", "lg", "exp", "sin", "cos", "tan", "cot", "sec", "csc", "sinh", "cosh", "tanh",
    "coth", "arcsin", "arccos", "arctan", "arg", "dim", "deg", "ker", "det", "hom", "max", "min",
    "sup", "inf", "lim", "limsup", "liminf", "gcd", "lcm", "Pr", "bmod", "injlim", "projlim",
    "varinjlim", "varprojlim", "varliminf", "varlimsup",
}
#: Accents: the ``<mo>`` written over (or under) the argument.
ACCENTS = {
    "hat": "^", "widehat": "^", "tilde": "~", "widetilde": "~", "bar": "¯", "overline": "¯",
    "check": "ˇ", "widecheck": "ˇ", "acute": "´", "grave": "`", "dot": "˙", "ddot": "¨",
    "dddot": "⃛", "breve": "˘", "vec": "→", "mathring": "˚", "overrightarrow": "→",
    "overleftarrow": "←", "overbrace": "⏞",
}
UNDER_ACCENTS = {"underline": "¯", "underbrace": "⏟", "underrightarrow": "→", "underleftarrow": "←"}
#: Font commands with one argument -> mathvariant (``normal`` upright).
FONT_COMMANDS = {
    "mathbb": "double-struck", "mathbf": "bold", "boldsymbol": "bold", "bm": "bold",
    "mathcal": "script", "mathscr": "script", "mathfrak": "fraktur", "mathrm": "normal",
    "mathit": "italic", "mathsf": "sans-serif", "mathtt": "monospace", "mathnormal": None,
    "mathsfit": "sans-serif-italic", "pmb": "bold",
}
#: Old-style font switches (``{\\rm Spec}``): the rest of the group.
FONT_SWITCHES = {
    "rm": "normal", "it": "italic", "bf": "bold", "sf": "sans-serif", "tt": "monospace",
    "cal": "script", "mit": None, "frak": "fraktur", "Bbb": "double-struck", "bold": "bold",
    "sl": "italic", "em": "italic", "upshape": "normal", "rmfamily": "normal",
    "itshape": "italic", "bfseries": "bold", "normalfont": "normal", "mathversion": None,
}
#: Text commands: the argument is text (``<mtext>``).
TEXT_COMMANDS = {"text", "textrm", "textit", "textbf", "textsf", "texttt", "textup", "textsl",
                 "textnormal", "mbox", "hbox", "emph", "textmd", "fbox", "textsc", "mathrm*"}
#: Commands that change nothing a reader's tokens see (sizes, styles, spacing, limits).
NOTHING = {
    "textstyle", "displaystyle", "scriptstyle", "scriptscriptstyle", "limits", "nolimits",
    "left", "right", "middle", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr",
    "biggl", "biggr", "Biggl", "Biggr", "bigm", "Bigm", "biggm", "quad", "qquad", "enspace",
    "thinspace", "medspace", "thickspace", "negthinspace", "negmedspace", "nonumber", "notag",
    "allowbreak", "nobreak", "relax", "displaybreak", "strut", "hfill", "hfil", "vfill",
    "centering", "noindent", "newline", "linebreak", "cr", "crcr", "hline", "small", "tiny",
    "large", "Large", "normalsize", "footnotesize", "scriptsize", "huge", "Huge", "protect",
    "nulldelimiterspace", "mathstrut", "smash", "ensuremath", "null", "empty", "displaylimits",
    "lefteqn", "ignorespaces", "mathclap", "mathllap", "mathrlap", "rlap", "llap", "clap",
}
#: Commands whose arguments are dropped with them (labels, colours, spacing of a given size).
DROP_ARGS = {"label": 1, "tag": 1, "phantom": 1, "hphantom": 1, "vphantom": 1, "color": 1,
             "hspace": 1, "vspace": 1, "hskip": 0, "kern": 0, "mkern": 0, "mskip": 0,
             "textcolor": 1, "eqref": 1, "ref": 1, "cite": 1, "raisebox": 1, "index": 1,
             "hypertarget": 1, "footnote": 1, "intertext": 1}
#: Class wrappers: the argument as it is.
WRAPPERS = {"mathop", "mathrel", "mathbin", "mathord", "mathpunct", "mathinner", "mathopen",
            "mathclose", "operatorname", "operatornamewithlimits", "displaystyle", "boxed",
            "mathchoice", "substack", "cramped", "ensuremath", "underset*", "mathsurround"}
FRACTIONS = {"frac", "dfrac", "tfrac", "cfrac", "binom", "dbinom", "tbinom", "genfrac"}
EXT_ARROWS = {"xrightarrow": "→", "xleftarrow": "←", "xlongrightarrow": "⟶", "xhookrightarrow": "↪",
              "xmapsto": "↦", "xtwoheadrightarrow": "↠", "xleftrightarrow": "↔", "xRightarrow": "⇒",
              "xLeftarrow": "⇐", "xLeftrightarrow": "⇔", "xrightleftharpoons": "⇌"}
#: ``\\not`` before these -> the negated relation LaTeXML writes.
NEGATED = {"=": "≠", "\\in": "∉", "\\subset": "⊄", "\\supset": "⊅", "\\subseteq": "⊈",
           "\\supseteq": "⊉", "\\equiv": "≢", "\\sim": "≁", "\\cong": "≇", "\\mid": "∤",
           "<": "≮", ">": "≯", "\\le": "≰", "\\leq": "≰", "\\ge": "≱", "\\geq": "≱",
           "\\simeq": "≄", "\\approx": "≉", "\\parallel": "∦", "\\exists": "∄"}
#: Environments whose rows are a matrix, and the fences around it.
MATRIX_FENCES = {"pmatrix": ("(", ")"), "bmatrix": ("[", "]"), "Bmatrix": ("{", "}"),
                 "vmatrix": ("|", "|"), "Vmatrix": ("‖", "‖"), "cases": ("{", ""),
                 "dcases": ("{", ""), "rcases": ("", "}")}
# fmt: on

#: Characters LaTeXML writes as another code point.
_CHARACTERS = {"-": "−"}
#: Text commands in a font of their own.
_TEXT_FONTS = {
    "textit": "italic",
    "textbf": "bold",
    "textsl": "italic",
    "emph": "italic",
    "textsf": "sans-serif",
    "texttt": "monospace",
}

_TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|%[^\n]*|[0-9]+(?:\.[0-9]+)?|\s+|.", re.DOTALL)
MAX_DEPTH = 60


@dataclass
class Reading:
    """The presentation MathML of a formula and the commands it did not know."""

    mathml: str
    unknown: list[str] = field(default_factory=list)


def _tokens(tex: str) -> list[str]:
    out = []
    for m in _TOKEN.finditer(tex):
        tok = m.group(0)
        if tok.startswith("%"):
            continue
        out.append(" " if tok.isspace() else tok)
    return out


class _Reader:
    def __init__(self, tex: str) -> None:
        self.toks = _tokens(tex)
        self.i = 0
        self.unknown: list[str] = []
        self.depth = 0

    # -- tokens ------------------------------------------------------------------------------
    def peek(self, skip_space: bool = True) -> str | None:
        j = self.i
        while skip_space and j < len(self.toks) and self.toks[j] == " ":
            j += 1
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> str | None:
        while self.i < len(self.toks) and self.toks[self.i] == " ":
            self.i += 1
        if self.i >= len(self.toks):
            return None
        self.i += 1
        return self.toks[self.i - 1]

    def raw_group(self) -> str:
        """The raw text of the next braced group (or the next token), braces removed."""
        tok = self.take()
        if tok != "{":
            return tok or ""
        return self._until("}")

    def optional(self) -> str | None:
        """The raw text of ``[...]`` when it comes next."""
        if self.peek() != "[":
            return None
        self.take()
        return self._until("]")

    def _until(self, closer: str) -> str:
        """The raw text up to ``closer`` at brace depth 0 (consumed, not kept) or the end."""
        depth, parts = 0, []
        while self.i < len(self.toks):
            tok = self.toks[self.i]
            self.i += 1
            if tok == closer and depth == 0:
                break
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
            parts.append(tok)
        return "".join(parts)

    # -- structure ---------------------------------------------------------------------------
    def sequence(self, stop: frozenset[str], variant: str | None = None) -> list[str]:
        """Atoms up to a token of ``stop`` (not consumed) or the end; a font switch
        (``\\rm``) sets ``variant`` for the rest."""
        items: list[str] = []
        while True:
            tok = self.peek()
            if tok is None or tok in stop:
                return items
            if tok in ("^", "_"):
                base = items.pop() if items else "<mrow></mrow>"
                items.append(self.scripts(base))
                continue
            if tok == "'":
                self.take()
                primes = "′"
                while self.peek(False) == "'":
                    self.take()
                    primes += "′"
                base = items.pop() if items else "<mrow></mrow>"
                items.append(self.scripts(base, prime=primes))
                continue
            if tok[1:] in FONT_SWITCHES and tok.startswith("\\"):
                self.take()
                variant = FONT_SWITCHES[tok[1:]]
                continue
            atom = self.atom(variant)
            if atom:
                if items and _mergeable(items[-1], atom, variant):
                    items[-1] = _mi(_mi_text(items[-1]) + _mi_text(atom), variant)
                else:
                    items.append(atom)

    def scripts(self, base: str, prime: str = "") -> str:
        sub = sup = None
        if prime:
            sup = f"<mo>{prime}</mo>"
        while self.peek() in ("^", "_"):
            which = self.take()
            arg = self.script_arg()
            if which == "_" and sub is None:
                sub = arg
            elif which == "^" and sup is None:
                sup = arg
            elif which == "^":
                sup = f"<mrow>{sup}{arg}</mrow>"
            else:
                sub = f"<mrow>{sub}{arg}</mrow>"
        big = 'largeop="true"' in base or "movablelimits" in base
        if sub is not None and sup is not None:
            tag = "munderover" if big else "msubsup"
            return f"<{tag}>{base}{sub}{sup}</{tag}>"
        if sub is not None:
            return f"<munder>{base}{sub}</munder>" if big else f"<msub>{base}{sub}</msub>"
        return f"<msup>{base}{sup}</msup>"

    def script_arg(self) -> str:
        tok = self.peek()
        if tok == "{":
            return self.atom(None) or "<mrow></mrow>"
        if tok is not None and tok.startswith("\\") and tok[1:] == "prime":
            self.take()
            return "<mo>′</mo>"
        if tok is not None and len(tok) > 1 and tok[0].isdigit():  # x^23 is x^2 3
            self.take()
            self.toks.insert(self.i, tok[1:])
            return f"<mn>{tok[0]}</mn>"
        return self.atom(None) or "<mrow></mrow>"

    def group(self, variant: str | None = None) -> str:
        """The next argument: a braced group, or one atom."""
        if self.peek() == "{":
            self.take()
            body = self.nested(frozenset({"}"}), variant)
            if self.peek() == "}":
                self.take()
            return body
        return self.atom(variant) or "<mrow></mrow>"

    def nested(self, stop: frozenset[str], variant: str | None = None) -> str:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise RecursionError("formula nested too deeply")
        try:
            items = self.sequence(stop, variant)
        finally:
            self.depth -= 1
        return items[0] if len(items) == 1 else f"<mrow>{''.join(items)}</mrow>"

    def atom(self, variant: str | None) -> str:
        tok = self.take()
        if tok is None:
            return ""
        if tok == "{":
            body = self.nested(frozenset({"}"}), variant)
            if self.peek() == "}":
                self.take()
            return body
        if tok == "}":
            return ""  # a stray closing brace
        if tok.startswith("\\") and len(tok) > 1 and (tok[1:].rstrip("*").isalpha()):
            return self.command(tok[1:], variant)
        if tok.startswith("\\"):
            return self.escaped(tok[1])
        if tok.isalpha() and len(tok) == 1:
            return _mi(tok, variant)
        if tok[0].isdigit():
            return _mn(tok, variant)
        if tok in ("&", "~"):
            return ""
        return f"<mo>{xml_escape(_CHARACTERS.get(tok, tok))}</mo>"

    def escaped(self, ch: str) -> str:
        if ch in ",;:! >\n\\":
            return ""  # spacing, and \\ (a new row)
        if ch in "{}":
            return f'<mo stretchy="false">{ch}</mo>'
        if ch == "|":
            return "<mo>‖</mo>"
        if ch in "#$%&_":
            return f"<mi>{xml_escape(ch)}</mi>"
        return f"<mo>{xml_escape(ch)}</mo>"

    def command(self, name: str, variant: str | None) -> str:  # noqa: C901 (one table per kind)
        """One command as MathML: one branch per kind of command (spacing, delimiters, fonts, accents,
        fractions, roots, environments, unknown), each dispatching on its table above.
        why this is long: the branches are the kinds, read top to bottom."""
        base = name.rstrip("*")
        if base in NOTHING:
            if base in ("left", "right", "middle") or base.startswith(("big", "Big")):
                if self.peek() == ".":
                    self.take()
            return ""
        if base in GREEK:
            return _mi(
                GREEK[base], "normal" if GREEK[base].isupper() and variant is None else variant
            )
        if base in UPRIGHT_SYMBOLS and base not in ("ldots", "cdots"):
            return f'<mi mathvariant="normal">{xml_escape(UPRIGHT_SYMBOLS[base])}</mi>'
        if base in IDENTIFIERS:
            return f'<mi mathvariant="normal">{IDENTIFIERS[base]}</mi>'
        if base in SYMBOLS:
            return f"<mo>{xml_escape(SYMBOLS[base])}</mo>"
        if base in BIG:
            return f'<mo largeop="true" movablelimits="false" symmetric="true">{BIG[base]}</mo>'
        if base in NAMED:
            word = {
                "limsup": "lim sup",
                "liminf": "lim inf",
                "bmod": "mod",
                "varinjlim": "lim",
                "varprojlim": "lim",
                "injlim": "inj lim",
                "projlim": "proj lim",
            }.get(base, base)
            return (
                f'<mi movablelimits="false">{word}</mi>'
                if base in ("lim", "limsup", "liminf", "max", "min", "sup", "inf")
                else f"<mi>{word}</mi>"
            )
        if base in ("pmod", "pod", "mod"):
            arg = self.group()
            word = "" if base == "pod" else "<mi>mod</mi>"
            if base == "mod":
                return f"<mrow>{word}{arg}</mrow>"
            return f'<mrow><mo stretchy="false">(</mo>{word}{arg}<mo stretchy="false">)</mo></mrow>'
        if base in FONT_COMMANDS:
            return self.group(FONT_COMMANDS[base])
        if base in TEXT_COMMANDS:
            text = self.raw_group()
            font = f' mathvariant="{_TEXT_FONTS[base]}"' if base in _TEXT_FONTS else ""
            return f"<mtext{font}>{xml_escape(_plain_text(text))}</mtext>" if text.strip() else ""
        if base in ("operatorname", "operatornamewithlimits", "mathop") and self.peek() == "{":
            inner = self.group("normal" if base != "mathop" else variant)
            return inner
        if base in WRAPPERS:
            return self.group(variant)
        if base in DROP_ARGS:
            for _ in range(DROP_ARGS[base]):
                self.optional()
                self.raw_group()
            if base in ("hskip", "kern", "mkern", "mskip"):
                while self.peek() is not None and (
                    self.peek()[0].isdigit() or self.peek().isalpha() or self.peek() in ".-"
                ):
                    self.take()
            return ""
        if base == "not":
            nxt = self.peek()
            if nxt in NEGATED:
                self.take()
                return f"<mo>{NEGATED[nxt]}</mo>"
            following = self.atom(variant)
            return (
                following.replace("</mo>", "\u0338</mo>", 1)
                if following.startswith("<mo")
                else following
            )
        if base in FRACTIONS:
            if base == "genfrac":
                for _ in range(4):
                    self.raw_group()
            num, den = self.group(), self.group()
            if base.endswith("binom"):
                return f'<mrow><mo>(</mo><mfrac linethickness="0pt">{num}{den}</mfrac><mo>)</mo></mrow>'
            return f"<mfrac>{num}{den}</mfrac>"
        if base == "sqrt":
            index = self.optional()
            body = self.group()
            if index is not None:
                return f"<mroot>{body}{_Reader(index).read().mathml}</mroot>"
            return f"<msqrt>{body}</msqrt>"
        if base in ACCENTS:
            return f'<mover accent="true">{self.group(variant)}<mo>{ACCENTS[base]}</mo></mover>'
        if base in UNDER_ACCENTS:
            return f'<munder accent="true">{self.group(variant)}<mo>{UNDER_ACCENTS[base]}</mo></munder>'
        if base in ("overset", "stackrel", "underset"):
            over, body = self.group(), self.group()
            tag = "munder" if base == "underset" else "mover"
            return f"<{tag}>{body}{over}</{tag}>"
        if base in EXT_ARROWS:
            below = self.optional()
            above = self.group()
            arrow = f"<mo>{EXT_ARROWS[base]}</mo>"
            if below is not None:
                return f"<munderover>{arrow}{_Reader(below).read().mathml}{above}</munderover>"
            return f"<mover>{arrow}{above}</mover>"
        if base == "begin":
            return self.environment(self.raw_group().strip())
        if base == "end":
            self.raw_group()
            return ""
        if base in ("xymatrix", "xy"):
            return self.xymatrix()
        if base in ("ar", "arrow"):
            self.xy_arrow()
            return ""
        if base in ("over", "atop", "choose"):
            return "<mo>/</mo>" if base == "over" else ""
        if base in ("lim", "varinjlim", "colim"):
            return f"<mi>{base}</mi>"
        self.unknown.append("\\" + base)
        return f"<mi>\\{xml_escape(name)}</mi>"

    def environment(self, env: str) -> str:
        env = env.rstrip("*")
        if env in ("array", "tabular", "subarray", "alignedat", "alignat"):
            self.optional()
            self.raw_group()
        rows: list[list[str]] = [[]]
        stop = frozenset({"&", "\\\\", "\\end", "\\cr"})
        while True:
            cell = self.nested(stop)
            rows[-1].append(cell)
            tok = self.take()
            if tok is None:
                break
            if tok == "\\end":
                self.raw_group()
                break
            if tok in ("\\\\", "\\cr"):
                self.optional()
                rows.append([])
        if rows and rows[-1] == ["<mrow></mrow>"]:
            rows.pop()
        table = (
            "<mtable>"
            + "".join("<mtr>" + "".join(f"<mtd>{c}</mtd>" for c in row) + "</mtr>" for row in rows)
            + "</mtable>"
        )
        fences = MATRIX_FENCES.get(env)
        if fences:
            open_, close = (f"<mo>{xml_escape(f)}</mo>" if f else "" for f in fences)
            return f"<mrow>{open_}{table}{close}</mrow>"
        return table

    def xymatrix(self) -> str:
        """``\\xymatrix{a \\ar[r] & b}``: the objects as a table; arrows and their labels dropped
        (LaTeXML draws a diagram, an SVG picture whose labels are formulas of their own)."""
        while self.peek() is not None and self.peek() != "{":
            self.take()  # @C=1em and friends
        if self.peek() != "{":
            return ""
        inner = self.raw_group()
        reader = _Reader("\\begin{matrix}" + inner + "\\end{matrix}")
        reading = reader.read()
        self.unknown.extend(reading.unknown)
        return reading.mathml

    def xy_arrow(self) -> None:
        while True:
            tok = self.peek()
            if tok == "@":
                self.take()
                if self.peek() in ("{", "/", "<", "^", "_", "("):
                    if self.peek() == "{":
                        self.raw_group()
                    else:
                        self.take()
                        while self.peek() not in (None, "/", ">", ")") and self.peek() != "{":
                            self.take()
                        self.take()
                continue
            if tok == "[":
                self.optional()
                continue
            if tok in ("^", "_", "|"):
                self.take()
                if self.peek() in ("<", ">"):
                    self.take()
                self.raw_group()
                continue
            return

    def read(self) -> Reading:
        items = []
        while self.peek() is not None:
            items.extend(self.sequence(frozenset({"}"})))
            if self.peek() == "}":
                self.take()  # unbalanced closing brace: dropped
        body = items[0] if len(items) == 1 else f"<mrow>{''.join(items)}</mrow>"
        body = body.replace(
            "<mo>′</mo><mo>′</mo>", "<mo>′′</mo>"
        )  # ^{\prime\prime}: LaTeXML's one ″ symbol
        return Reading(body, self.unknown)


def _mi(ch: str, variant: str | None) -> str:
    if variant and variant != "italic":
        return f'<mi mathvariant="{variant}">{xml_escape(ch)}</mi>'
    if variant == "italic" and len(ch) > 1:
        return f'<mi mathvariant="italic">{xml_escape(ch)}</mi>'
    return f"<mi>{xml_escape(ch)}</mi>"


def _mn(num: str, variant: str | None) -> str:
    if variant in ("bold", "double-struck"):
        return f'<mn mathvariant="{variant}">{num}</mn>'
    return f"<mn>{num}</mn>"


def _mi_text(el: str) -> str:
    return el[el.index(">") + 1 : el.rindex("</mi>")]


def _mergeable(prev: str, atom: str, variant: str | None) -> bool:
    """Letters in an upright or italic word font (``\\mathrm{Spec}``) are one identifier."""
    if variant not in ("normal", "italic", "bold", "sans-serif", "monospace"):
        return False
    head = f'<mi mathvariant="{variant}">' if variant != "italic" else "<mi"
    return (
        prev.startswith(head)
        and atom.startswith(head)
        and prev.count("<mi") == 1
        and atom.count("<mi") == 1
        and _mi_text(atom).isalpha()
        and _mi_text(prev).isalpha()
    )


_TEXT_MACRO = re.compile(r"\\([A-Za-z]+)\s*")


def _plain_text(text: str) -> str:
    """Text-mode TeX as a reader sees it: macros dropped, braces and ``$`` removed."""
    text = _TEXT_MACRO.sub(lambda m: "" if m.group(1) not in GREEK else GREEK[m.group(1)], text)
    return re.sub(r"[{}$~]", lambda m: " " if m.group(0) == "~" else "", text)


def tolerant_presentation(tex: str) -> Reading:
    """The presentation MathML of ``tex`` (no ``<math>`` element) and its unknown commands."""
    return _Reader(tex).read()
