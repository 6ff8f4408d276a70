"""A small TeX subset turned into the MathML that LaTeXML and arXMLiv wrote.

:func:`render_math` parses one formula (:func:`proofmatch.texmath.parse.parse_tex`, a
:class:`~proofmatch.texmath.lexer.TexError` for anything outside the subset), writes its
presentation and Content MathML (:class:`proofmatch.texmath.writer.MathWriter`) and puts them in
the ``<math>`` element of one of three dialects: ``latexml`` (presentation MathML in
``semantics`` with Content MathML and TeX annotations, Unicode math alphabets), ``arxmliv``
(``m:``-prefixed, ``mathvariant`` attributes, no TeX, some formulas in Content MathML first or
only: the ``form`` argument) and ``arxmliv_ltx`` (the 2011 arXMLiv markup as real articles of that
era have it: ``<math xmlns=MathML>`` with a default namespace, ``semantics`` holding presentation
MathML, ``annotation-xml encoding="MathML-Content"`` and a TeX annotation; fonts as
``mathvariant`` attributes, no inner ids). It exists so that the extraction and linearization
stages meet the markup variety of real converters without a LaTeX installation: the demo
generator (:mod:`proofmatch.demo.generate`) writes its formulas as TeX in templates and renders
them here, and search (:mod:`proofmatch.search.query`) turns the formulas of a query into the
LaTeXML dialect. That is why this package is a library of its own below both.
"""

from __future__ import annotations

from functools import lru_cache

from proofmatch.texmath.dialects import attr_escape, xml_escape
from proofmatch.texmath.parse import parse_tex
from proofmatch.texmath.writer import MathWriter

_ID_SLOT = "\x00"  # stands for the formula id in cached renderings (never in TeX or text)


def render_math(tex: str, math_id: str, dialect: str, display: bool, form: str = "parallel") -> str:
    """One ``<math>`` element for ``tex`` in ``dialect`` (:data:`~proofmatch.texmath.dialects.DIALECTS`) with id ``math_id``;
    ``form`` (``parallel``, ``content_first``, ``content_annotation`` or ``pure_content``; the demo
    corpus draws it per formula, :func:`proofmatch.demo.markup.arxmliv_form`) applies to the
    ``arxmliv`` dialect only."""
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
            ""
            if tex.strip() == "0"
            else f'<annotation encoding="application/x-tex">{xml_escape(tex)}</annotation>'
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


def render_query_math(tex: str, math_id: str, display: bool) -> tuple[str, str, list[str]]:
    """``(math element, reader, unknown commands)`` for a query formula, in the LaTeXML dialect.

    The strict subset first (``reader`` ``texmath``: the markup the demo corpus has); what it
    refuses is read by :func:`proofmatch.texmath.tolerant.tolerant_presentation` (``reader``
    ``texmath-tolerant``: presentation MathML and the TeX annotation, as LaTeXML's
    ``ltx_math_unparsed`` formulas have), which keeps an unknown command as an identifier and
    lists it. Raises :class:`~proofmatch.texmath.lexer.TexError` never; ``RecursionError`` on a
    formula nested past :data:`~proofmatch.texmath.tolerant.MAX_DEPTH`.
    """
    from proofmatch.texmath.lexer import TexError
    from proofmatch.texmath.tolerant import tolerant_presentation

    try:
        return render_math(tex, math_id, "latexml", display), "texmath", []
    except (TexError, ValueError, IndexError, KeyError):
        pass
    reading = tolerant_presentation(tex)
    mode = "block" if display else "inline"
    xml = (
        f'<math xmlns="http://www.w3.org/1998/Math/MathML" id="{attr_escape(math_id)}" class="ltx_Math" '
        f'alttext="{attr_escape(tex)}" display="{mode}"><semantics>{reading.mathml}'
        f'<annotation encoding="application/x-tex">{xml_escape(tex)}</annotation></semantics></math>'
    )
    return xml, "texmath-tolerant", list(dict.fromkeys(reading.unknown))
