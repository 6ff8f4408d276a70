"""A planned demo article as one XHTML document in its markup dialect (:func:`render_article`).

``latexml`` writes LaTeXML 0.8 / ar5iv markup, ``arxmliv`` the 2011 arXMLiv markup as inferred
from LaTeXML's source of the period, ``arxmliv_ltx`` the 2011 arXMLiv markup as real articles of
that era have it (module docstring of :mod:`proofmatch.demo.generate`); formulas come from
:func:`proofmatch.demo.texmath.render_math`.
"""

from __future__ import annotations

import zlib

from proofmatch.demo.article import Article, Block, Section
from proofmatch.demo.mathmarkup import attr_escape, xml_escape
from proofmatch.demo.templates import load_language, split_pieces
from proofmatch.demo.texmath import arxmliv_form, render_math


class Renderer:
    """Markup of one planned article in its dialect; ids follow LaTeXML's scheme.

    ``arxmliv_ltx`` shares the ``arxmliv`` markup except for statements (``theorem ltx_thm``
    with a bold title), formulas (:func:`proofmatch.demo.texmath.render_math`) and the root element
    (no ``m:`` prefix declared).
    """

    def __init__(self, article: Article) -> None:
        self.a = article
        self.spec = article.spec
        self.latexml = article.spec.dialect == "latexml"
        self.ltx_thm = article.spec.dialect == "arxmliv_ltx"
        self.labels = {key: label for key, label, _ in article.bib}
        self.eq_count: dict[int, int] = {}
        self.ex_count: dict[int, int] = {}
        self.para_count: dict[int, int] = {}

    def c(self, latexml: str, arxmliv: str) -> str:
        """A class attribute value in the article's dialect."""
        return latexml if self.latexml else arxmliv

    # -- inline content -------------------------------------------------------------------------
    def inline(self, pieces: list[tuple[str, ...]], para_id: str, counter: list[int]) -> str:
        out: list[str] = []
        for piece in pieces:
            kind = piece[0]
            if kind == "text":
                out.append(xml_escape(piece[1]))
            elif kind == "math":
                counter[0] += 1
                mid = f"{para_id}.m{counter[0]}"
                out.append(
                    render_math(piece[1], mid, self.spec.dialect, False, arxmliv_form(mid, self.spec.article_id))
                )
            elif kind == "ref":
                word, number = self.a.anchors[piece[1]]
                if self.latexml:
                    out.append(
                        f'<a href="#{piece[1]}" title="{attr_escape(word)} {number}" class="ltx_ref">'
                        f'<span class="ltx_text ltx_ref_tag">{number}</span></a>'
                    )
                else:
                    out.append(f'<a href="#{piece[1]}" class="ref">{number}</a>')
            elif kind == "cite":
                label = self.labels[piece[1]]
                extra = f", {xml_escape(piece[2])}" if piece[2] else ""
                key = f"bib.{piece[1]}" if self.latexml else piece[1]
                link = f'<a href="#{key}" class="{self.c("ltx_ref", "ref")}">{xml_escape(label)}</a>'
                out.append(f'<cite class="{self.c("ltx_cite ltx_citemacro_cite", "cite")}">[{link}{extra}]</cite>')
        return "".join(out)

    def equation(self, tex: str, section: int, numbered: bool) -> str:
        if numbered:
            self.eq_count[section] = self.eq_count.get(section, 0) + 1
            eid, tag = f"S{section}.E{self.eq_count[section]}", f"({section}.{self.eq_count[section]})"
        else:
            self.ex_count[section] = self.ex_count.get(section, 0) + 1
            eid, tag = f"S{section}.Ex{self.ex_count[section]}", None
        mid = f"{eid}.m1"
        math = render_math(tex, mid, self.spec.dialect, True, arxmliv_form(mid, self.spec.article_id))
        if self.latexml:
            eqno = (
                (
                    f'\n<td rowspan="1" class="ltx_eqn_cell ltx_eqn_eqno ltx_align_middle ltx_align_right">'
                    f'<span class="ltx_tag ltx_tag_equation ltx_align_right">{tag}</span></td>'
                )
                if tag
                else ""
            )
            return (
                f'<table id="{eid}" class="ltx_equation ltx_eqn_table">\n<tbody><tr class="ltx_equation ltx_eqn_row ltx_align_baseline">\n'
                f'<td class="ltx_eqn_cell ltx_eqn_center_padleft"/>\n<td class="ltx_eqn_cell ltx_align_center">{math}</td>\n'
                f'<td class="ltx_eqn_cell ltx_eqn_center_padright"/>{eqno}</tr></tbody>\n</table>'
            )
        eqno = f'<td class="eqno">{tag}</td>' if tag else ""
        return f'<table class="equation" id="{eid}"><tr><td class="eqpad"/><td class="eq">{math}</td><td class="eqpad"/>{eqno}</tr></table>'

    def para(self, text: str, para_id: str, section: int, italic: bool = False, qed: bool = False) -> str:
        """One ``div.ltx_para``: ``p`` runs with display equations between them."""
        pieces = split_pieces(text)
        counter = [0]
        runs: list[list[tuple[str, ...]]] = [[]]
        parts: list[str] = []

        def flush() -> None:
            body = self.inline(runs[-1], para_id, counter).strip()
            if body:
                if italic:
                    body = f'<span class="{self.c("ltx_text ltx_font_italic", "text italic")}">{body}</span>'
                parts.append(f'<p class="{self.c("ltx_p", "p")}">{body}</p>')
            runs[-1] = []

        for piece in pieces:
            if piece[0] == "display":
                flush()
                parts.append(self.equation(piece[1], section, zlib.crc32(piece[1].encode()) % 3 == 0))
            else:
                runs[-1].append(piece)
        if qed:
            runs[-1].append(("text", "\n∎" if self.latexml else " □"))
        flush()
        return f'<div id="{para_id}" class="{self.c("ltx_para", "para")}">\n' + "\n".join(parts) + "\n</div>"

    def next_para_id(self, section: int) -> str:
        self.para_count[section] = self.para_count.get(section, 0) + 1
        return f"S{section}.p{self.para_count[section]}"

    # -- blocks ----------------------------------------------------------------------------------
    def theorem(self, b: Block, section: int) -> str:
        word = self.a.anchors[b.anchor][0]
        name = f" ({xml_escape(b.name)})" if b.name else ""
        italic = b.kind not in ("definition", "remark", "example")
        paras = "\n".join(self.para(t, f"{b.anchor}.p{i}", section, italic=italic) for i, t in enumerate(b.body, 1))
        if self.latexml:
            title = (
                f'<h6 class="ltx_title ltx_runin ltx_title_theorem"><span class="ltx_tag ltx_tag_theorem">'
                f'<span class="ltx_text ltx_font_bold">{xml_escape(word)} {b.number}</span></span>{name}'
                f'<span class="ltx_text ltx_font_bold">.</span></h6>'
            )
            head = f'<div id="{b.anchor}" class="ltx_theorem ltx_theorem_{b.kind}">'
        elif self.ltx_thm:  # every kind is "ltx_thm": only the title says theorem, lemma, ...
            title = f'<h6 class="title bold theorem-title">{xml_escape(word)} {b.number}{name}.</h6>'
            head = f'<div class="theorem ltx_thm" id="{b.anchor}">'
        else:
            title = f'<h6 class="title theorem-title">{xml_escape(word)} {b.number}{name}.</h6>'
            head = f'<div class="theorem {b.kind}" id="{b.anchor}">'
        return "\n".join(x for x in (head, title, paras, "</div>") if x)

    def proof(self, b: Block, section: int) -> str:
        paras = b.proof or [""]
        body = "\n".join(
            self.para(t, self.next_para_id(section), section, qed=i == len(paras)) for i, t in enumerate(paras, 1)
        )
        if self.latexml:
            title = f'<h6 class="ltx_title ltx_runin ltx_font_italic ltx_title_proof">{xml_escape(b.proof_title)}</h6>'
            return f'<div class="ltx_proof">\n{title}\n{body}\n</div>'
        return f'<div class="proof">\n<h6 class="title proof-title">{xml_escape(b.proof_title)}</h6>\n{body}\n</div>'

    def section(self, sec: Section) -> str:
        out = []
        if self.latexml:
            out.append(
                f'<div id="S{sec.number}" class="ltx_section">\n<h2 class="ltx_title ltx_title_section">'
                f'<span class="ltx_tag ltx_tag_section">{sec.number} </span>{xml_escape(sec.title)}</h2>'
            )
        else:
            out.append(
                f'<div class="section" id="S{sec.number}">\n<h2 class="title section-title">{sec.number} {xml_escape(sec.title)}</h2>'
            )
        for b in sec.blocks:
            if b.kind == "para":
                out.extend(self.para(t, self.next_para_id(sec.number), sec.number) for t in b.body)
            elif b.kind == "proof":
                out.append(self.proof(b, sec.number))
            else:
                out.append(self.theorem(b, sec.number))
                if b.proof is not None:
                    out.append(self.proof(b, sec.number))
        out.append("</div>")
        return "\n".join(out)

    # -- the document ----------------------------------------------------------------------------
    def document(self) -> str:
        a, spec = self.a, self.spec
        title = xml_escape(a.title)
        authors = xml_escape(", ".join(a.authors))
        sections = "\n".join(self.section(s) for s in a.sections)
        abstract = self.inline(split_pieces(a.abstract), "abstract", [0])
        lang = load_language(spec.lang)
        if self.latexml:
            bib = "\n".join(
                f'<li id="bib.{key}" class="ltx_bibitem"><span class="ltx_tag ltx_role_refnum ltx_tag_bibitem">[{xml_escape(label)}]</span>\n'
                f'<span class="ltx_bibblock">{xml_escape(entry)}</span></li>'
                for key, label, entry in a.bib
            )
            text = (
                '<?xml version="1.0" encoding="utf-8"?>\n'
                '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1 plus MathML 2.0//EN" "http://www.w3.org/Math/DTD/mathml2/xhtml-math11-f.dtd">\n'
                f'<html xmlns="http://www.w3.org/1999/xhtml" lang="{spec.lang}">\n<head>\n'
                '<meta http-equiv="content-type" content="application/xhtml+xml; charset=UTF-8"/>\n'
                f"<title>{title}</title>\n<!--Generated by proofmatch.demo.generate in the markup of LaTeXML 0.8.-->\n\n"
                '<link rel="stylesheet" href="LaTeXML.css" type="text/css"/>\n<link rel="stylesheet" href="ltx-article.css" type="text/css"/>\n'
                '</head>\n<body>\n<div class="ltx_page_main">\n<div class="ltx_page_content">\n'
                '<div class="ltx_document ltx_authors_1line">\n'
                f'<h1 class="ltx_title ltx_title_document">{title}</h1>\n'
                f'<div class="ltx_authors"><span class="ltx_creator ltx_role_author"><span class="ltx_personname">{authors}</span></span></div>\n'
                f'<div class="ltx_abstract"><h6 class="ltx_title ltx_title_abstract">{xml_escape(lang["abstract_title"])}</h6>\n'
                f'<p class="ltx_p">{abstract}</p>\n</div>\n{sections}\n'
                f'<div id="bib" class="ltx_bibliography">\n<h2 class="ltx_title ltx_title_bibliography">{xml_escape(lang["references_title"])}</h2>\n'
                f'<ul class="ltx_biblist">\n{bib}\n</ul>\n</div>\n</div>\n</div>\n</div>\n</body>\n</html>\n'
            )
        else:
            bib = "\n".join(
                f'<li class="bibitem" id="{key}"><span class="bibtag">[{xml_escape(label)}]</span> {xml_escape(entry)}</li>'
                for key, label, entry in a.bib
            )
            text = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1 plus MathML 2.0//EN" "http://www.w3.org/Math/DTD/mathml2/xhtml-math11-f.dtd">\n'
                '<html xmlns="http://www.w3.org/1999/xhtml" '
                + ("" if self.ltx_thm else 'xmlns:m="http://www.w3.org/1998/Math/MathML" ')
                + f'xmlns:arxmliv="http://arxmliv.kwarc.info/ns/" xml:lang="{spec.lang}">\n'
                f'<head><title>{title}</title><link rel="stylesheet" type="text/css" href="core.css"/></head>\n'
                '<body><div class="main"><div class="content"><div class="document">\n'
                f'<h1 class="title document-title">{title}</h1>\n'
                f'<div class="creator author"><div class="personname">{authors}</div></div>\n'
                f'<div class="abstract"><h6 class="title abstract-title">{xml_escape(lang["abstract_title"])}</h6><p class="p">{abstract}</p></div>\n'
                f"{sections}\n"
                f'<div class="bibliography" id="bib"><h2 class="title bibliography-title">{xml_escape(lang["references_title"])}</h2>\n'
                f'<ul class="biblist">\n{bib}\n</ul></div>\n</div></div></div></body>\n</html>\n'
            )
        if spec.named_entities:
            # Older XHTML relied on the MathML DTD's named entities (never loaded by a safe parser).
            text = (
                text.replace("\u00a0", "&nbsp;")
                .replace("\u2062", "&InvisibleTimes;")
                .replace("\u2061", "&ApplyFunction;")
            )
        return text


def render_article(article: Article) -> str:
    """The article as one XHTML document (text)."""
    return Renderer(article).document()
