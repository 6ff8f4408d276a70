"""The TeX subset -> an expression tree (:func:`parse_tex`).

Recursive descent over the tokens of :func:`proofmatch.texmath.lexer.tokenize_tex` into
:class:`Node` trees, which :mod:`proofmatch.texmath.writer` renders as MathML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from proofmatch.texmath.lexer import ASSOCIATIVE, LIMIT_LIKE, OPERATORS, TexError, tokenize_tex


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
    kids: list[Node] = field(default_factory=list)
    variant: str | None = None
    ops: list[str] = field(default_factory=list)
    open: str = ""
    close: str = ""
    sub: Node | None = None
    sup: Node | None = None
    arg: list[Node] | None = None
    delim: bool = False


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
            left = (
                Node("neg", kids=[operand])
                if op == "-"
                else Node("prefix", text=op, kids=[operand])
            )
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
