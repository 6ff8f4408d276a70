"""Content MathML to presentation MathML: what a reader sees for a formula given only as content.

:func:`proofmatch.data.mathml.presentation` calls :class:`Converter` where a formula has no
presentation tree (the reference pipeline runs its ctop stylesheet there). It implements about
thirty conversion rules for content-only math (2011 arXMLiv / canonical MathML): leaves (``ci→mi``,
``cn→mn``, ``csymbol→mi``, constants such as ``reals→ℝ``), LaTeXML's ``csymbol`` heads
(``subscript``/``superscript`` → ``msub``/``msup``, ``multirelation`` → ``a ≤ b < c``,
``restriction``, ``norm``, ``delimited-[]``, ``tensor-product``...), scripted big operators applied
to a body (``∑_{i}^{n} a_i``), n-ary infix operators with precedence-driven parentheses,
unary/binary minus, ``divide`` as a slash (as ctop writes it), ``power→msup``,
``root→msqrt/mroot``, fences (abs, floor, ceiling), factorial, not, binders with
``bvar``/``lowlimit``/``uplimit``/``condition`` (forall, exists, sum, product, int, limit, diff),
containers (set, list, interval, vector, matrix, piecewise), and ``head(args)`` for every other
head. It is written from the MathML specification, not taken from ctop.xsl. Where ctop would turn a
LaTeXML symbol name into a token (``subscript x i``, ``multirelation ...``) it gives what the
reader sees instead. The symbol tables live in :mod:`proofmatch.data.content_symbols`.
"""

from __future__ import annotations

from collections.abc import Callable

from lxml import etree

from proofmatch.data.content_symbols import (
    BIG_OPERATORS,
    CONSTANTS,
    CONTENT_ELEMENTS,
    CSYMBOL_INFIX,
    FENCE_HEADS,
    INFIX,
    INTERVALS,
    NON_ASSOCIATIVE,
    QUALIFIERS,
    QUANTIFIERS,
    SYMBOL_PRECEDENCE,
    bare_symbol,
    infix_of,
    is_big_operator,
    is_operator_symbol,
    text_of,
)
from proofmatch.data.mathml_names import (
    MATHML_NS,
    PRESENTATION_ELEMENTS,
    element_children,
    local_name,
    mathml_tag,
    split_alphanumeric,
)

# ---------------------------------------------------------------------------------------------
# building presentation elements


def _new(
    name: str, *children: etree._Element | None, text: str | None = None, **attrib: str
) -> etree._Element:
    el = etree.Element(mathml_tag(name), nsmap={None: MATHML_NS})
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


def _identifier(text: str, variant: str | None = None) -> etree._Element:
    """An ``mi`` for a content leaf; math alphanumeric code points become letter + font.

    LaTeXML also names some content symbols ``<font>-<char>`` (``italic-ϕ``, ``normal-Γ``).
    """
    split = split_alphanumeric(text)
    if split is not None:
        text, variant = split
    elif bare_symbol(text) != text:
        text, variant = bare_symbol(text), text.partition("-")[0]
    if variant == "italic" and len(text) == 1:
        variant = None
    return _mi(text, variant)


class Converter:
    """Content to presentation conversion of one content tree.

    ``present`` gives the presentation nodes of a presentation or ``semantics`` island inside the
    content (:mod:`proofmatch.data.mathml` passes its own reader, so the two recurse into each
    other); ``root`` is where ``share`` targets are looked up.
    """

    def __init__(
        self, present: Callable[[etree._Element], list[etree._Element]], root: etree._Element
    ) -> None:
        self._present = present  # handles semantics / presentation islands inside content
        self._root = root
        self._sharing: set[str] = set()  # share targets being expanded (a cycle is not followed)

    def convert(self, el: etree._Element) -> etree._Element:
        name = local_name(el)
        if name in PRESENTATION_ELEMENTS or name == "semantics":
            return _row(self._present(el) or [_new("mrow")])
        if name == "ci":
            kids = element_children(el)
            if kids:  # MathML 2 allows presentation markup inside ci
                return _row([n for k in kids for n in self._present(k)] or [_new("mrow")])
            return _identifier(text_of(el))
        if name == "cn":
            return self._number(el)
        if name == "csymbol":
            text = text_of(el)
            if text in CSYMBOL_INFIX:  # an operator used as a value, e.g. the base of ⊗_R
                return _mo(CSYMBOL_INFIX[text][0])
            return _new("mrow") if text == "absent" else _identifier(text)
        if name == "share":
            return self._share(el)
        if name in ("cs", "cbytes"):
            return _new("ms" if name == "cs" else "mtext", text=text_of(el))
        if name in CONSTANTS:
            symbol, variant = CONSTANTS[name]
            return _identifier(symbol, variant)
        if name in ("apply", "bind"):
            return self._apply(el)
        if name == "lambda":
            bvars, _, args = self._split(element_children(el))
            return _new(
                "mrow", _mo("λ"), *self._bvars(bvars), _mo("."), *[self.convert(a) for a in args]
            )
        if name in ("set", "list", "vector"):
            return self._container(el, name)
        if name == "interval":
            open_, close = INTERVALS.get(el.get("closure", "closed"), ("[", "]"))
            return _fenced(open_, [self.convert(c) for c in element_children(el)], close)
        if name == "matrix":
            return _fenced(
                "(", [_new("mtable", *[self.convert(r) for r in element_children(el)])], ")"
            )
        if name == "matrixrow":
            return _new("mtr", *[_new("mtd", self.convert(c)) for c in element_children(el)])
        if name == "piecewise":
            rows = [self.convert(p) for p in element_children(el)]
            return _new("mrow", _mo("{"), _new("mtable", *rows))
        if name in ("piece", "otherwise"):
            return _new("mtr", *[_new("mtd", self.convert(c)) for c in element_children(el)])
        if name in ("declare", "sep") or name in QUALIFIERS:
            return _new("mrow", *[self.convert(c) for c in element_children(el)])
        if name == "cerror":
            return _new("merror", *[self.convert(c) for c in element_children(el)])
        kids = element_children(el)
        if kids:  # unknown container: keep its children in order
            return _new("mrow", *[self.convert(c) for c in kids])
        if name in BIG_OPERATORS:  # the base of a scripted big operator: ∑ in sum_{i}^{n}
            return _mo(BIG_OPERATORS[name])
        if name in QUANTIFIERS:
            return _mo(QUANTIFIERS[name])
        if name in INFIX:  # an operator used as a value, e.g. <in/> alone
            return _mo(INFIX[name][0])
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
        for sep in element_children(el):
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
            elif n in QUALIFIERS:
                quals[n] = k
            else:
                args.append(k)
        return bvars, quals, args

    def _bvars(self, bvars: list[etree._Element]) -> list[etree._Element]:
        nodes: list[etree._Element] = []
        for i, b in enumerate(bvars):
            if i:
                nodes.append(_mo(","))
            inner = [self.convert(c) for c in element_children(b) if local_name(c) != "degree"]
            nodes.extend(inner)
        return nodes

    def _qual(self, quals: dict[str, etree._Element], name: str) -> etree._Element | None:
        q = quals.get(name)
        return (
            None
            if q is None
            else _row([self.convert(c) for c in element_children(q)] or [_new("mrow")])
        )

    def _operand(
        self, arg: etree._Element, parent: str, prec: int, position: int
    ) -> etree._Element:
        """An operand of an infix operator, in parentheses where precedence requires them."""
        node = self.convert(arg)
        child = infix_of(arg)
        if child is not None:
            cname, cprec = child
            same_level = cprec == prec and (cname != parent or parent in NON_ASSOCIATIVE)
            if cprec < prec or (
                same_level and (position > 0 or prec == 4)
            ):  # relations never chain
                return _fenced("(", [node], ")")
        return node

    def _apply(self, el: etree._Element) -> etree._Element:
        kids = element_children(el)
        if not kids:
            return _new("mrow")
        head, rest = kids[0], kids[1:]
        hname = local_name(head)
        bvars, quals, args = self._split(rest)
        conv = self.convert
        if hname == "csymbol":
            symbol = text_of(head)
            special = self._csymbol_apply(symbol, args)
            if special is not None:
                return special
            if symbol in CONTENT_ELEMENTS:  # strict content MathML: <csymbol>plus</csymbol>
                hname = symbol
        if hname in ("ci", "mo") and len(args) >= 2 and is_operator_symbol(text_of(head)):
            symbol = bare_symbol(text_of(head))
            return self._infix(
                "symbol", symbol, SYMBOL_PRECEDENCE.get(symbol, 4), args
            )  # f : X → S
        if hname == "apply" and is_big_operator(head):  # LaTeXML: sum_{i=1}^{n} a_i, int_U f dx
            return _new("mrow", conv(head), *[conv(a) for a in args])
        if hname in INFIX and not (hname == "minus" and len(args) == 1):
            op, prec = INFIX[hname]
            return self._infix(hname, op, prec, args)
        if hname in ("minus", "not"):
            sign = "−" if hname == "minus" else "¬"
            return (
                _new("mrow", _mo(sign), self._operand(args[0], hname, 7, 0)) if args else _mo(sign)
            )
        if hname == "power" and len(args) == 2:
            return _new("msup", _script_base(conv(args[0]), args[0]), conv(args[1]))
        if hname == "root" and args:
            degree = self._qual(quals, "degree")
            return (
                _new("mroot", conv(args[0]), degree)
                if degree is not None
                else _new("msqrt", conv(args[0]))
            )
        if hname in FENCE_HEADS and args:
            open_, close = FENCE_HEADS[hname]
            return _fenced(open_, [conv(a) for a in args], close)
        if hname == "factorial" and args:
            return _new("mrow", _script_base(conv(args[0]), args[0]), _mo("!"))
        if hname in QUANTIFIERS:
            nodes = [_mo(QUANTIFIERS[hname]), *self._bvars(bvars)]
            cond = self._qual(quals, "condition")
            if cond is not None:
                nodes += [_mo(":"), cond]
            nodes += [_mo("."), *[conv(a) for a in args]]
            return _new("mrow", *nodes)
        if hname in BIG_OPERATORS:
            return self._big(hname, bvars, quals, args)
        if hname in ("diff", "partialdiff"):
            return self._derivative(hname, bvars, args)
        if hname == "log" and "logbase" in quals:
            head_node = _new("msub", _mi("log", "normal"), self._qual(quals, "logbase"))
        elif (
            hname in ("apply", "bind", "ci", "csymbol", "lambda", "semantics")
            or hname in PRESENTATION_ELEMENTS
        ):
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
            return _new(
                "msub" if symbol == "subscript" else "msup",
                _script_base(conv(args[0]), args[0]),
                script,
            )
        if symbol == "multirelation" and len(args) >= 3:  # LaTeXML: a ≤ b < c as (a, ≤, b, <, c)
            nodes = [
                self._operand(a, symbol, 4, 1) if i % 2 == 0 else self._relation(a)
                for i, a in enumerate(args)
            ]
            return _new("mrow", *nodes)
        if symbol == "restriction" and len(args) == 2:  # F|_U
            return _new(
                "msub", _new("mrow", _script_base(conv(args[0]), args[0]), _mo("|")), conv(args[1])
            )
        if symbol in ("norm", "inner-product") and args:
            open_, close = ("‖", "‖") if symbol == "norm" else ("⟨", "⟩")
            return _fenced(open_, [conv(a) for a in args], close)
        if symbol.startswith("delimited-") and len(symbol) > len("delimited-"):
            fence = symbol[len("delimited-") :]
            return _fenced(fence[0], [conv(a) for a in args], fence[1:])
        if symbol == "conditional-set" and len(args) == 2:
            return _new("mrow", _mo("{"), conv(args[0]), _mo("|"), conv(args[1]), _mo("}"))
        if symbol in CSYMBOL_INFIX:
            op, prec = CSYMBOL_INFIX[symbol]
            return self._infix(symbol, op, prec, args)
        return None

    def _relation(self, el: etree._Element) -> etree._Element:
        """The operator of a ``multirelation`` (``<leq/>``, ``<ci>→</ci>``, a LaTeXML csymbol)."""
        name = local_name(el)
        if name in INFIX and not element_children(el):
            return _mo(INFIX[name][0])
        if name == "csymbol" and text_of(el) in CSYMBOL_INFIX:
            return _mo(CSYMBOL_INFIX[text_of(el)][0])
        if name in ("ci", "mo") and is_operator_symbol(text_of(el)):
            return _mo(bare_symbol(text_of(el)))
        return self.convert(el)

    def _derivative(
        self, name: str, bvars: list[etree._Element], args: list[etree._Element]
    ) -> etree._Element:
        """d/dx f (or ∂/∂x f); f′ without a bound variable."""
        body = [self.convert(a) for a in args]
        if not bvars:
            return _new("msup", _row(body or [_new("mrow")]), _mo("′"))
        d = (lambda: _mi("d", "normal")) if name == "diff" else (lambda: _mo("∂"))
        den: list[etree._Element] = []
        for b in bvars:
            for c in element_children(b):
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
        op = _mo(BIG_OPERATORS[name])
        low, up = self._qual(quals, "lowlimit"), self._qual(quals, "uplimit")
        cond = self._qual(quals, "condition") or self._qual(quals, "domainofapplication")
        body = [self.convert(a) for a in args]
        interval = next((a for a in args if local_name(a) == "interval"), None)
        if name == "int" and interval is not None and low is None:  # ∫ over <interval> a b
            body = [self.convert(a) for a in args if a is not interval]
            ends = [self.convert(c) for c in element_children(interval)]
            if len(ends) == 2:
                low, up = ends
        bv = self._bvars(bvars)
        if name == "limit":
            under = (
                cond
                if cond is not None
                else (_new("mrow", *bv, _mo("→"), low) if low is not None else None)
            )
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
            head = (
                _new("munderover", op, under, up) if up is not None else _new("munder", op, under)
            )
        elif cond is not None:
            head = _new("munder", op, cond)
        elif bv:
            head = _new("munder", op, _row(bv))
        else:
            head = op
        return _new("mrow", head, *body)

    def _container(self, el: etree._Element, name: str) -> etree._Element:
        open_, close = {"set": ("{", "}"), "list": ("[", "]"), "vector": ("(", ")")}[name]
        bvars, quals, args = self._split(element_children(el))
        cond = self._qual(quals, "condition")
        items = [self.convert(a) for a in args]
        if cond is not None:  # {x | condition}
            subject = items or self._bvars(bvars)
            return _new("mrow", _mo(open_), *subject, _mo("|"), cond, _mo(close))
        return _fenced(open_, items, close)


def _script_base(node: etree._Element, source: etree._Element) -> etree._Element:
    """Parenthesise a compound base of a script (``(a+b)^2``, not ``a+b^2``)."""
    if infix_of(source) is not None:
        return _fenced("(", [node], ")")
    return node
