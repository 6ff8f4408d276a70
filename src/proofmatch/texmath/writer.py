"""An expression tree of :mod:`proofmatch.texmath.parse` -> presentation and Content MathML.

:func:`proofmatch.texmath.convert.render_math` puts the two in the ``<math>`` element of each dialect.
"""

from __future__ import annotations

from proofmatch.texmath.dialects import MathMarkup, math_alphabet, math_italic, xml_escape
from proofmatch.texmath.lexer import ASSOCIATIVE, BIG_OPERATORS, CONTENT_FUNCTIONS, FENCE_CHARS, LIMIT_LIKE, OPERATORS
from proofmatch.texmath.parse import Node


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
            self._mo(FENCE_CHARS[open_], ' stretchy="false"')
            + self._joined(items)
            + self._mo(FENCE_CHARS[close], ' stretchy="false"')
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
            return math_italic(n.text)
        return n.text

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
