"""The vocabulary of the TeX subset and its tokenizer (:func:`tokenize_tex`).

The demo templates write their formulas in a small TeX subset, and search queries may too. One table per kind of command says
what it is (an identifier, an operator of some precedence class, a named function, a font...) and
what :mod:`proofmatch.texmath.writer` writes for it; anything else is a :class:`TexError`.
"""

from __future__ import annotations

import re

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
#: A fence as written in the tree -> the character of its ``<mo>``.
FENCE_CHARS = {
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

_TEX_TOKEN = re.compile(r"\\[A-Za-z]+|\\[{}|,;! #]|:=|[A-Za-z]|[0-9]+(?:\.[0-9]+)?|\S")


class TexError(ValueError):
    """A formula outside the supported TeX subset: in a demo template a bug in demo_data; in a
    search query, a formula that :mod:`proofmatch.search.query` hands to LaTeXML or rejects."""


def _font_argument(tex: str, i: int) -> tuple[str, int]:
    """The raw text of a ``{...}`` font argument starting at ``tex[i]`` and the index after it."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i >= len(tex) or tex[i] != "{":
        raise TexError(f"font command without braced argument in {tex!r}")
    j = tex.index("}", i)
    return tex[i + 1 : j].strip(), j + 1


#: One token: ``(type, value, variant)``, ``variant`` a font of :data:`FONTS` or ``None``.
Token = tuple[str, str, str | None]


def tokenize_tex(tex: str) -> list[Token]:
    """Tokens ``(type, value, variant)``; types: id num op open close big fn frac binom sqrt accent
    ``^ _ ' ! { } , |`` norm restrict."""
    out: list[Token] = []
    i = 0
    while i < len(tex):
        m = _TEX_TOKEN.match(tex, i)
        if m is None:
            i += 1  # whitespace
            continue
        tok, i = m.group(0), m.end()
        token: Token | None
        if tok.startswith("\\") and len(tok) > 1 and tok[1:].isalpha():
            token, i = _command_token(tok[1:], tex, i)
        else:
            token = _symbol_token(tok, tex, i)
        if token is not None:
            out.append(token)
    return out


def _command_token(name: str, tex: str, i: int) -> tuple[Token | None, int]:
    """The token of the command ``\\name`` (``None`` for spacing and sizing commands) and the index
    after it: a font command also reads its braced argument."""
    if name in FONTS or name == "operatorname":
        return _font_token(name, tex, i)
    if name in GREEK:
        ch = GREEK[name]
        return ("id", ch, "normal" if ch.isupper() else None), i
    if name in UPRIGHT_SYMBOLS:
        return ("id", UPRIGHT_SYMBOLS[name], "normal"), i
    if name in OPERATORS:
        return ("op", name, None), i
    if name in BIG_OPERATORS:
        return ("big", name, None), i
    if name in FUNCTIONS:
        return ("fn", name, None), i
    if name in ("frac", "binom", "sqrt"):
        return (name, name, None), i
    if name in ACCENTS:
        return ("accent", ACCENTS[name], None), i
    if name == "langle":
        return ("open", "\\langle", None), i
    if name == "rangle":
        return ("close", "\\rangle", None), i
    if name == "prime":
        return ("'", "'", None), i
    if name in IGNORED:
        return None, i
    raise TexError(f"unsupported TeX command \\{name} in {tex!r}")


def _font_token(name: str, tex: str, i: int) -> tuple[Token, int]:
    """``\\operatorname{..}`` or a font command with a word (a named function) or with one letter or
    Greek letter (an identifier in that font), and the index after its argument."""
    arg, i = _font_argument(tex, i)
    if name == "operatorname" or (len(arg) > 1 and not arg.startswith("\\")):
        return ("fn", arg, None), i
    ch = GREEK.get(arg[1:], None) if arg.startswith("\\") else arg
    if ch is None:
        raise TexError(f"unsupported font argument {arg!r} in {tex!r}")
    return ("id", ch, FONTS[name]), i


def _symbol_token(tok: str, tex: str, i: int) -> Token | None:
    """The token of a character or an escaped symbol ``tok`` that ends just before ``tex[i]``
    (``None`` for spacing such as ``\\,``); a ``|`` followed by ``_`` is a restriction (f|_U)."""
    if tok in ("\\{",):
        return ("open", "\\{", None)
    if tok in ("\\}",):
        return ("close", "\\}", None)
    if tok == "\\|":
        return ("norm", "\\|", None)
    if tok == "\\#":
        return ("id", "#", "normal")
    if tok.startswith("\\"):
        return None  # \, \; \! and friends: spacing
    if tok.isalpha():
        return ("id", tok, None)
    if tok[0].isdigit():
        return ("num", tok, None)
    if tok in ("(", "["):
        return ("open", tok, None)
    if tok in (")", "]"):
        return ("close", tok, None)
    if tok == "|":
        return ("restrict", "|", None) if tex[i : i + 1] == "_" else ("|", "|", None)
    if tok in ("^", "_", "'", "!", "{", "}", ","):
        return (tok, tok, None)
    if tok in OPERATORS:
        return ("op", tok, None)
    raise TexError(f"unsupported character {tok!r} in {tex!r}")
