"""A search query -> the typed tokens the models were trained on (or a statement of the corpus).

A query is one of

* the **id** of a statement in the index (``article/statement``, as in every artifact): the
  statement's own vectors are used, exactly those that evaluation scores (see
  :mod:`proofmatch.search.index`);
* an **XHTML fragment** (it starts with ``<``): read by the linearizer itself
  (:func:`proofmatch.data.linearize.linearize_element`), as a corpus statement is;
* **LaTeX-flavoured text**: running text with formulas between ``$…$`` (also ``$$…$$``,
  ``\\(…\\)``, ``\\[…\\]``; ``\\$`` is a dollar sign). Text is split by
  :func:`proofmatch.data.views.text_tokens`; each formula is turned into MathML and read by
  :func:`proofmatch.data.mathml.math_tokens`, so ``$x^2 \\le \\mathbb{R}$`` gives the ``$x``, ``$2``,
  ``$≤``, ``$R~double-struck`` tokens that the corpus's LaTeXML markup gives. The MathML comes
  from the project's own TeX converter (:mod:`proofmatch.texmath.convert`, the one that wrote the demo
  corpus, in its LaTeXML dialect). A formula outside its strict subset is read by the tolerant
  reader (:mod:`proofmatch.texmath.tolerant`: presentation MathML as LaTeXML writes it, for what
  the statements of the Stacks project use; docs/search.md gives its coverage). Only a formula
  in which it meets an unknown command goes to LaTeXML's ``latexmlmath`` when that is installed
  (a process of 0.7-1.4 s a formula; on the formulas the tolerant reader reads whole it gave the
  same tokens, docs/measured/pretrained.md#search); without LaTeXML, or when LaTeXML does not know
  the command either, the tolerant reading keeps an unknown command as one symbol ``\\name``
  and names it in :attr:`Query.warnings`, so the query still runs.

Empty, oversized (:data:`MAX_QUERY_CHARS`), unbalanced-``$`` and unparseable queries raise
:class:`QueryError` whose message says what to change.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from lxml import etree

from proofmatch.data.linearize import FragmentError, linearize_element, parse_fragment
from proofmatch.data.mathml import math_tokens
from proofmatch.data.mathml_names import local_name
from proofmatch.data.views import text_tokens
from proofmatch.texmath.convert import render_query_math

MAX_QUERY_CHARS = 8000
MAX_FORMULAS = 64
LATEXML_TIMEOUT_S = 20

# $$..$$ before $..$; \$ is an escaped dollar (kept as text)
_MATH = re.compile(
    r"\$\$(?P<d>.+?)\$\$|(?<!\\)\$(?P<i>.+?)(?<!\\)\$|\\\((?P<p>.+?)\\\)|\\\[(?P<b>.+?)\\\]",
    re.DOTALL,
)
_SAFE_PARSER = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


class QueryError(ValueError):
    """A query that cannot be searched; the message is meant for the person who typed it."""


@dataclass
class Query:
    """A parsed query: ``kind`` is id, xhtml or tex; ``tokens`` is empty for an id query."""

    kind: str
    text: str
    tokens: list[str] = field(default_factory=list)
    pair_id: str | None = None
    converters: list[str] = field(
        default_factory=list
    )  # per formula: texmath | texmath-tolerant | latexml
    warnings: list[str] = field(
        default_factory=list
    )  # what was degraded (unknown commands), for the person


def check_size(text: str, max_chars: int = MAX_QUERY_CHARS) -> str:
    """The stripped query, or QueryError when it is empty or longer than ``max_chars``."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError(
            "empty query: type a statement (formulas between $...$), paste an XHTML "
            "fragment, or give a statement id"
        )
    if len(text) > max_chars:
        raise QueryError(
            f"query too long: {len(text)} characters (limit {max_chars}); search with the "
            "statement alone"
        )
    return text.strip()


@functools.lru_cache(maxsize=1)
def latexml_available() -> bool:
    return shutil.which("latexmlmath") is not None


def _latexml_math(tex: str, display: bool) -> etree._Element:
    """``latexmlmath``'s presentation MathML of one formula (its ``merror`` marks what it did not know)."""
    args = ["latexmlmath", "--quiet", "--pmml=-", "--", tex]
    try:
        run = subprocess.run(
            args, capture_output=True, text=True, timeout=LATEXML_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise QueryError(f"LaTeXML took longer than {LATEXML_TIMEOUT_S} s on ${tex}$") from exc
    try:
        root = etree.fromstring(run.stdout.encode(), etree.XMLParser(**_SAFE_PARSER))
    except etree.XMLSyntaxError as exc:
        raise QueryError(f"LaTeXML could not convert ${tex}$ (exit {run.returncode})") from exc
    errors = [" ".join(e.itertext()).strip() for e in root.iter() if local_name(e) == "merror"]
    if errors:
        raise QueryError(f"formula ${tex}$: LaTeXML does not know {', '.join(errors)}")
    if display:
        root.set("display", "block")
    return root


def formula_tokens(tex: str, display: bool = False) -> tuple[list[str], str, list[str]]:
    """(math tokens, converter name, unknown commands) of one TeX formula (module docstring)."""
    tex = tex.strip()
    if not tex:
        raise QueryError("empty formula ($$): write the formula between the dollars")
    opened, closed = len(re.findall(r"(?<!\\){", tex)), len(re.findall(r"(?<!\\)}", tex))
    if opened != closed:
        raise QueryError(
            f"formula ${tex}$ could not be read: unbalanced braces ({opened} {{ and {closed} }})"
        )
    try:
        xml, converter, unknown = render_query_math(tex, "q", display)
        el = etree.fromstring(xml.encode(), etree.XMLParser(**_SAFE_PARSER))
    except (ValueError, IndexError, KeyError, RecursionError, etree.XMLSyntaxError) as exc:
        raise QueryError(f"formula ${tex}$ could not be read: {exc}") from exc
    if unknown and latexml_available():  # only what the tolerant reader could not read
        try:
            el, converter, unknown = _latexml_math(tex, display), "latexml", []
        except QueryError:
            pass  # LaTeXML did not know it either: the tolerant reading, with its warning
    toks = math_tokens(el)
    if not toks:
        raise QueryError(f"formula ${tex}$ gives no symbols")
    return toks, converter, unknown


def check_dollars(text: str) -> None:
    """QueryError when the unescaped ``$`` signs (``$$`` pairs aside) do not pair up."""
    bare = re.sub(r"\\\$", "  ", text)
    singles = [
        m.start()
        for m in re.finditer(
            r"(?<!\$)\$(?!\$)",
            re.sub(r"\$\$.+?\$\$", lambda m: " " * len(m.group(0)), bare, flags=re.DOTALL),
        )
    ]
    if len(singles) % 2:
        last = singles[-1]
        where = text[max(0, last - 20) : last + 20].replace("\n", " ")
        raise QueryError(
            f"unbalanced $: the query has {len(singles)} $ signs, an odd number, so one formula "
            f"is not closed (the last $ is at character {last + 1}: …{where}…); every formula "
            "needs an opening and a closing $ (write \\$ for a dollar sign)"
        )


def tex_tokens(text: str) -> tuple[list[str], list[str], list[str]]:
    """(tokens, converter per formula, warnings) of LaTeX-flavoured text (module docstring)."""
    check_dollars(text)
    out: list[str] = []
    converters: list[str] = []
    warnings: list[str] = []
    pos = 0
    matches = list(_MATH.finditer(text))
    if len(matches) > MAX_FORMULAS:
        raise QueryError(f"{len(matches)} formulas; at most {MAX_FORMULAS} per query")
    for m in matches:
        out.extend(_text_part(text[pos : m.start()]))
        display = m.group("d") is not None or m.group("b") is not None
        tex = next(g for g in m.groups() if g is not None)
        toks, conv, unknown = formula_tokens(tex, display)
        if unknown:
            warnings.append(
                f"formula ${tex.strip()}$: unknown TeX command{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(unknown)}, kept as {'symbols' if len(unknown) > 1 else 'a symbol'} "
                "(a proof matches it only if it was written the same way)"
            )
        out.extend(toks)
        converters.append(conv)
        pos = m.end()
    out.extend(_text_part(text[pos:]))
    return out, converters, warnings


def _text_part(text: str) -> list[str]:
    if re.search(r"(?<!\\)\$", text):
        raise QueryError(
            "unbalanced $: every formula needs an opening and a closing $ (write \\$ for a "
            "dollar sign)"
        )
    return text_tokens(text.replace("\\$", "$"))


def parse_query(
    text: str,
    ids: set[str] | dict | None = None,
    kind: str = "auto",
    max_chars: int = MAX_QUERY_CHARS,
) -> Query:
    """Classify and tokenize a query. ``ids`` holds the index's statement ids (``kind='auto'``:
    an exact id wins, then a leading ``<`` means XHTML, else LaTeX-flavoured text)."""
    text = check_size(text, max_chars)
    if kind not in ("auto", "id", "xhtml", "tex"):
        raise QueryError(f"unknown query kind {kind!r}; expected auto, id, xhtml or tex")
    if kind == "id" or (kind == "auto" and ids is not None and text in ids):
        if ids is None or text not in ids:
            raise QueryError(f"no statement with id {text!r} in this index")
        return Query("id", text, pair_id=text)
    if kind == "xhtml" or (kind == "auto" and text.startswith("<")):
        try:
            tokens = linearize_element(parse_fragment(text))[0]
        except FragmentError as exc:
            raise QueryError(f"the XHTML fragment does not parse: {exc}") from exc
        q = Query("xhtml", text, tokens)
    else:
        tokens, converters, warnings = tex_tokens(text)
        q = Query("tex", text, tokens, converters=converters, warnings=warnings)
    if not q.tokens:
        raise QueryError("the query has no words or symbols to match")
    return q
