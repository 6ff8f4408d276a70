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
