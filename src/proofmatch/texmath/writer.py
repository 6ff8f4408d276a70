"""An expression tree of :mod:`proofmatch.texmath.parse` -> presentation and Content MathML.

:func:`proofmatch.texmath.convert.render_math` puts the two in the ``<math>`` element of each dialect.
Each node kind has one presentation and one content method (``_pres_<kind>``, ``_cont_<kind>``);
:data:`_PRESENTATION` and :data:`_CONTENT` map the kinds to them. The methods keep the order in
which they ask for ids: LaTeXML's ids are numbered in that order, and the demo corpus and search
queries must not change when this module does.
"""

from __future__ import annotations

from collections.abc import Callable

from proofmatch.texmath.dialects import MathMarkup, math_alphabet, math_italic, xml_escape
from proofmatch.texmath.lexer import (
    ASSOCIATIVE,
    BIG_OPERATORS,
    CONTENT_FUNCTIONS,
    FENCE_CHARS,
    LIMIT_LIKE,
    OPERATORS,
)
from proofmatch.texmath.parse import Node

_SCRIPT_TAGS = {"sub": "msub", "sup": "msup", "subsup": "msubsup"}
_INTERVAL_CLOSURES = {
    ("(", ")"): "open",
    ("[", "]"): "closed",
    ("[", ")"): "closed-open",
    ("(", "]"): "open-closed",
}


class MathWriter(MathMarkup):
    """Render one formula tree as MathML in one dialect (the element conventions of
    :class:`~proofmatch.texmath.dialects.MathMarkup`).

    LaTeXML: identifiers in Unicode math alphabets (𝐱, ℝ, 𝒜 + ``ltx_font_mathcaligraphic``),
    upright symbols ``mathvariant="normal"``. arXMLiv: fonts as ``mathvariant`` attributes on
    plain letters.
    """

    # -- presentation -----------------------------------------------------------------------
    def pres(self, n: Node) -> str:
        saved = self.owner
        try:
            return self._pres(n)
        finally:
            self.owner = saved

    def _pres(self, n: Node) -> str:
        render = _PRESENTATION.get(n.kind)
        if render is None:
            raise ValueError(f"cannot render node kind {n.kind!r}")
        return render(self, n)

    def _pres_cn(self, n: Node) -> str:
        return self._el("mn", self._pid(n), xml_escape(n.text))

    def _pres_mo(self, n: Node) -> str:
        return self._mo(OPERATORS[n.text][0], node=n)

    def _pres_infix(self, n: Node) -> str:
        attrs = self._pid(n)
        parts = [self.pres(n.kids[0])]
        for i, (op, kid) in enumerate(zip(n.ops, n.kids[1:])):
            if i and _one_head(n) and self.latexml:
                # a + b + c has one <plus/>: every '+' points at it, as in LaTeXML
                twin = self.ids[(id(n), "op0")]
                parts.append(
                    self._el(
                        "mo",
                        f' id="{self._new_id()}" xref="{twin}.cmml"',
                        xml_escape(OPERATORS[op][0]),
                    )
                )
            else:
                parts.append(self._mo(OPERATORS[op][0], node=n, key=f"op{i}"))
            parts.append(self.pres(kid))
        return self._el("mrow", attrs, "".join(parts))

    def _pres_prefix(self, n: Node) -> str:
        """``neg`` (a minus sign) and ``prefix`` (an operator such as ±)."""
        attrs = self._pid(n)
        op = "−" if n.kind == "neg" else OPERATORS[n.text][0]
        return self._el("mrow", attrs, self._mo(op, node=n, key="op") + self.pres(n.kids[0]))

    def _pres_scripted(self, n: Node) -> str:
        """``sub``, ``sup`` and ``subsup``: the base and its scripts in order."""
        attrs = self._pid(n)
        return self._el(_SCRIPT_TAGS[n.kind], attrs, "".join(self.pres(c) for c in n.kids))

    def _pres_prime(self, n: Node) -> str:
        attrs = self._pid(n)
        return self._el("msup", attrs, self.pres(n.kids[0]) + self._mo("′", node=n, key="op"))

    def _pres_factorial(self, n: Node) -> str:
        attrs = self._pid(n)
        return self._el("mrow", attrs, self.pres(n.kids[0]) + self._mo("!", node=n, key="op"))

    def _pres_restrict(self, n: Node) -> str:
        attrs = self._pid(n)
        inner = self._el(
            "mrow", "", self.pres(n.kids[0]) + self._mo("|", ' fence="false"', node=n, key="op")
        )
        return self._el("msub", attrs, inner + self.pres(n.kids[1]))

    def _pres_call(self, n: Node) -> str:
        attrs = self._pid(n)
        return self._el(
            "mrow",
            attrs,
            self.pres(n.kids[0]) + self._mo("\u2061") + self._args(n.arg, n.open, n.close),
        )

    def _pres_fence(self, n: Node) -> str:
        inner = n.kids[0]
        grouping = n.open in ("(", "[") and inner.kind != "list"
        attrs = self._aux() if grouping else self._pid(n)
        items = inner.kids if inner.kind == "list" else [inner]
        return self._el("mrow", attrs, self._fenced(items, n.open, n.close))

    def _pres_list(self, n: Node) -> str:
        attrs = self._pid(n)
        return self._el("mrow", attrs, self._joined(n.kids))

    def _pres_frac(self, n: Node) -> str:
        return self._el("mfrac", self._pid(n), self.pres(n.kids[0]) + self.pres(n.kids[1]))

    def _pres_binom(self, n: Node) -> str:
        attrs = self._pid(n)
        inner = self._el(
            "mfrac", ' linethickness="0pt"', self.pres(n.kids[0]) + self.pres(n.kids[1])
        )
        return self._el("mrow", attrs, self._mo("(") + inner + self._mo(")"))

    def _pres_sqrt(self, n: Node) -> str:
        return self._el("msqrt", self._pid(n), self.pres(n.kids[0]))

    def _pres_accent(self, n: Node) -> str:
        attrs = self._pid(n)
        return self._el(
            "mover",
            ' accent="true"' + attrs,
            self.pres(n.kids[0]) + self._mo(n.text, node=n, key="op"),
        )

    def _pres_big(self, n: Node) -> str:
        attrs = self._pid(n)
        op = self._el(
            "mo", ' largeop="true" symmetric="true"' + self._pid(n, "op"), BIG_OPERATORS[n.text][0]
        )
        if n.sub is not None or n.sup is not None:
            op = self._scripts(
                op,
                n.sub,
                n.sup,
                "munderover" if n.sub is not None and n.sup is not None else "munder",
            )
        return self._el("mrow", attrs, op + self.pres(n.kids[0]))

    def _mi(self, n: Node) -> str:
        ch, variant = n.text, n.variant
        if self.latexml:
            if variant in ("bold", "double-struck", "script", "fraktur"):
                cls = ' class="ltx_font_mathcaligraphic"' if variant == "script" else ""
                return self._el("mi", cls + self._pid(n), xml_escape(math_alphabet(ch, variant)))
            normal = ' mathvariant="normal"' if variant == "normal" and len(ch) == 1 else ""
            return self._el("mi", normal + self._pid(n), xml_escape(ch))
        mv = (
            f' mathvariant="{variant}"'
            if variant and not (variant == "normal" and len(ch) > 1)
            else ""
        )
        return self._el("mi", mv, xml_escape(ch))

    def _scripts(self, base: str, sub: Node | None, sup: Node | None, tag: str) -> str:
        if sub is not None and sup is not None:
            return self._el(
                tag if tag.startswith("munder") else "msubsup",
                "",
                base + self.pres(sub) + self.pres(sup),
            )
        if sub is not None:
            return self._el(
                "munder" if tag.startswith("munder") else "msub", "", base + self.pres(sub)
            )
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
            self._mo(FENCE_CHARS[open_], ' stretchy="false"')
            + self._joined(items)
            + self._mo(FENCE_CHARS[close], ' stretchy="false"')
        )

    def _args(self, args: list[Node] | None, open_: str = "(", close: str = ")") -> str:
        return self._el("mrow", "", self._fenced(args or [], open_, close))

    def _fn(self, n: Node) -> str:
        attrs = self._pid(n) if n.arg else ""
        head = self._el(
            "mi",
            self._pid(n, "head"),
            xml_escape(n.text.replace("limsup", "lim sup").replace("liminf", "lim inf")),
        )
        if n.sub is not None or n.sup is not None:
            head = self._scripts(
                head, n.sub, n.sup, "munderover" if n.text in LIMIT_LIKE else "msubsup"
            )
        if not n.arg:
            return head
        body = self._args(n.arg) if n.delim else self.pres(n.arg[0])
        return self._el("mrow", attrs, head + self._mo("\u2061") + body)

    # -- content ------------------------------------------------------------------------------
    def cont(self, n: Node) -> str:
        render = _CONTENT.get(n.kind)
        if render is None:
            raise ValueError(f"cannot render node kind {n.kind!r}")
        return render(self, n)

    def _apply(self, n: Node, body: str) -> str:
        """``<apply>`` for node ``n`` (the twin of its presentation element)."""
        return self._el("apply", self._cid(n), body)

    def _scripted_head(self, head: str, n: Node) -> str:
        """``head`` with the sub- and superscript of ``n`` applied to it (a big operator's or a named function's)."""
        if n.sub is not None:
            head = self._el(
                "apply", "", self._csym("subscript", "ambiguous") + head + self.cont(n.sub)
            )
        if n.sup is not None:
            head = self._el(
                "apply", "", self._csym("superscript", "ambiguous") + head + self.cont(n.sup)
            )
        return head

    def _cont_ci(self, n: Node) -> str:
        return self._el("ci", self._cid(n), xml_escape(self._ci_text(n)))

    def _cont_cn(self, n: Node) -> str:
        kind = "float" if "." in n.text else "integer"
        return self._el("cn", f' type="{kind}"' + self._cid(n), xml_escape(n.text))

    def _cont_mo(self, n: Node) -> str:
        return self._head(n.text, n, None)

    def _cont_infix(self, n: Node) -> str:
        if _one_head(n):
            head = self._head(n.ops[0], n, "op0")
            return self._apply(n, head + "".join(self.cont(c) for c in n.kids))
        parts = [self.cont(n.kids[0])]
        for i, (op, kid) in enumerate(zip(n.ops, n.kids[1:])):
            parts.append(self._head(op, n, f"op{i}"))
            parts.append(self.cont(kid))
        head = self._el("csymbol", ' cd="ambiguous"', "multirelation")
        return self._apply(n, head + "".join(parts))

    def _cont_neg(self, n: Node) -> str:
        return self._apply(n, self._empty("minus", n, "op") + self.cont(n.kids[0]))

    def _cont_prefix(self, n: Node) -> str:
        return self._apply(n, self._head(n.text, n, "op") + self.cont(n.kids[0]))

    def _cont_sub_or_sup(self, n: Node) -> str:
        """A one-script node: a power when a number raises an identifier, else LaTeXML's ambiguous script."""
        if n.kind == "sup" and n.kids[1].kind == "cn" and n.kids[0].kind == "ci":
            return self._apply(
                n, self._empty("power", None) + self.cont(n.kids[0]) + self.cont(n.kids[1])
            )
        role = "subscript" if n.kind == "sub" else "superscript"
        return self._apply(
            n, self._csym(role, "ambiguous") + self.cont(n.kids[0]) + self.cont(n.kids[1])
        )

    def _cont_subsup(self, n: Node) -> str:
        base = self.cont(n.kids[0]) + self.cont(n.kids[1])
        inner = self._el("apply", "", self._csym("subscript", "ambiguous") + base)
        return self._apply(n, self._csym("superscript", "ambiguous") + inner + self.cont(n.kids[2]))

    def _cont_prime(self, n: Node) -> str:
        return self._apply(
            n,
            self._csym("superscript", "ambiguous")
            + self.cont(n.kids[0])
            + self._el("ci", self._cid(n, "op"), "′"),
        )

    def _cont_factorial(self, n: Node) -> str:
        return self._apply(n, self._empty("factorial", n, "op") + self.cont(n.kids[0]))

    def _cont_restrict(self, n: Node) -> str:
        head = self._el("csymbol", ' cd="latexml"' + self._cid(n, "op"), "restriction")
        return self._apply(n, head + self.cont(n.kids[0]) + self.cont(n.kids[1]))

    def _cont_call(self, n: Node) -> str:
        return self._apply(n, self.cont(n.kids[0]) + "".join(self.cont(a) for a in n.arg or []))

    def _cont_list(self, n: Node) -> str:
        return self._el("list", self._cid(n), "".join(self.cont(c) for c in n.kids))

    def _cont_frac(self, n: Node) -> str:
        return self._apply(
            n, self._empty("divide", None) + self.cont(n.kids[0]) + self.cont(n.kids[1])
        )

    def _cont_binom(self, n: Node) -> str:
        return self._apply(
            n, self._csym("binomial", "latexml") + self.cont(n.kids[0]) + self.cont(n.kids[1])
        )

    def _cont_sqrt(self, n: Node) -> str:
        return self._apply(n, self._empty("root", None) + self.cont(n.kids[0]))

    def _cont_accent(self, n: Node) -> str:
        return self._apply(
            n, self._el("ci", self._cid(n, "op"), xml_escape(n.text)) + self.cont(n.kids[0])
        )

    def _cont_big(self, n: Node) -> str:
        head = self._scripted_head(self._empty(BIG_OPERATORS[n.text][1], n, "op"), n)
        return self._apply(n, head + self.cont(n.kids[0]))

    def _ci_text(self, n: Node) -> str:
        if n.variant in ("bold", "double-struck", "script", "fraktur"):
            return math_alphabet(n.text, n.variant)
        if self.latexml and n.variant is None and len(n.text) == 1:
            return math_italic(n.text)
        return n.text

    def _head(self, op: str, node: Node | None, key: str | None) -> str:
        char, head, _ = OPERATORS[op]
        if head == "@ci":
            return self._el(
                "ci", self._cid(node, key) if node is not None else "", xml_escape(char)
            )
        if head.startswith("@"):
            return self._el(
                "csymbol",
                ' cd="latexml"' + (self._cid(node, key) if node is not None else ""),
                head[1:],
            )
        return self._empty(head, node, key)

    def _fence_content(self, n: Node) -> str:
        inner = n.kids[0]
        items = inner.kids if inner.kind == "list" else [inner]
        body = "".join(self.cont(c) for c in items)
        if n.open == "|":
            return self._apply(n, self._empty("abs", None) + body)
        if n.open == "\\|":
            return self._apply(n, self._csym("norm", "latexml") + body)
        if n.open == "\\langle":
            return self._apply(n, self._csym("inner-product", "latexml") + body)
        if n.open == "\\{":
            return self._el("set", self._cid(n), body)
        if inner.kind != "list":
            return self.cont(inner)  # grouping parentheses: no content of their own
        if len(items) == 2:
            closure = _INTERVAL_CLOSURES.get((n.open, n.close), "open")
            return self._el("interval", f' closure="{closure}"' + self._cid(n), body)
        return self._el("vector", self._cid(n), body)

    def _fn_content(self, n: Node) -> str:
        name = n.text
        head = (
            self._empty(name, n, "head")
            if name in CONTENT_FUNCTIONS
            else self._el("ci", self._cid(n, "head"), xml_escape(name))
        )
        head = self._scripted_head(head, n)
        if not n.arg:
            return head
        return self._apply(n, head + "".join(self.cont(a) for a in n.arg))


def _one_head(n: Node) -> bool:
    """Whether an infix chain is one Content MathML application (a + b + c, a = b)."""
    return len(n.ops) == 1 or (len(set(n.ops)) == 1 and n.ops[0] in ASSOCIATIVE)


_Render = Callable[[MathWriter, Node], str]

#: Node kind -> its presentation MathML.
_PRESENTATION: dict[str, _Render] = {
    "ci": MathWriter._mi,
    "cn": MathWriter._pres_cn,
    "mo": MathWriter._pres_mo,
    "infix": MathWriter._pres_infix,
    "neg": MathWriter._pres_prefix,
    "prefix": MathWriter._pres_prefix,
    "sub": MathWriter._pres_scripted,
    "sup": MathWriter._pres_scripted,
    "subsup": MathWriter._pres_scripted,
    "prime": MathWriter._pres_prime,
    "factorial": MathWriter._pres_factorial,
    "restrict": MathWriter._pres_restrict,
    "call": MathWriter._pres_call,
    "fence": MathWriter._pres_fence,
    "list": MathWriter._pres_list,
    "frac": MathWriter._pres_frac,
    "binom": MathWriter._pres_binom,
    "sqrt": MathWriter._pres_sqrt,
    "accent": MathWriter._pres_accent,
    "fn": MathWriter._fn,
    "big": MathWriter._pres_big,
}

#: Node kind -> its Content MathML.
_CONTENT: dict[str, _Render] = {
    "ci": MathWriter._cont_ci,
    "cn": MathWriter._cont_cn,
    "mo": MathWriter._cont_mo,
    "infix": MathWriter._cont_infix,
    "neg": MathWriter._cont_neg,
    "prefix": MathWriter._cont_prefix,
    "sub": MathWriter._cont_sub_or_sup,
    "sup": MathWriter._cont_sub_or_sup,
    "subsup": MathWriter._cont_subsup,
    "prime": MathWriter._cont_prime,
    "factorial": MathWriter._cont_factorial,
    "restrict": MathWriter._cont_restrict,
    "call": MathWriter._cont_call,
    "fence": MathWriter._fence_content,
    "list": MathWriter._cont_list,
    "frac": MathWriter._cont_frac,
    "binom": MathWriter._cont_binom,
    "sqrt": MathWriter._cont_sqrt,
    "accent": MathWriter._cont_accent,
    "fn": MathWriter._fn_content,
    "big": MathWriter._cont_big,
}
