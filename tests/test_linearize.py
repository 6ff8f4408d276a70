"""Fragment linearization: reading order, titles, dropped markup, errors, shard I/O and CLI."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

from proofmatch import cli
from proofmatch.data.linearize import (
    FragmentError,
    fragment_tokens,
    linearize_fragment,
    linearize_pair,
    linearize_shard,
    parse_fragment,
)

XHTML = "http://www.w3.org/1999/xhtml"
MML = "http://www.w3.org/1998/Math/MathML"
SVG = "http://www.w3.org/2000/svg"


def lx_math(pres: str, content: str, tex: str) -> str:
    """A formula as LaTeXML writes it: presentation, content annotation, TeX annotation, alttext."""
    return (
        f'<math xmlns="{MML}" class="ltx_Math" alttext="{tex}" display="inline"><semantics>{pres}'
        f'<annotation-xml encoding="MathML-Content">{content}</annotation-xml>'
        f'<annotation encoding="application/x-tex">{tex}</annotation></semantics></math>'
    )


M_SUB = lx_math(
    "<msub><mi>V</mi><mi>α</mi></msub>",
    "<apply><csymbol cd='ambiguous'>subscript</csymbol><ci>𝑉</ci><ci>𝛼</ci></apply>",
    "V_{\\alpha}",
)
M_ALPHA = lx_math("<mi>α</mi>", "<ci>𝛼</ci>", "\\alpha")

STATEMENT = (
    f'<div xmlns="{XHTML}" id="S5.SS1" class="ltx_theorem ltx_theorem_lemma">'
    '<h6 class="ltx_title ltx_runin ltx_title_theorem"><span class="ltx_tag ltx_tag_theorem">'
    '<span class="ltx_text ltx_font_bold">Lemma 5.1</span></span><span class="ltx_text ltx_font_bold">.</span></h6>'
    '<div id="S5.SS1.p1" class="ltx_para"><p class="ltx_p"><span class="ltx_text ltx_font_italic">'
    f"Every set is an element of {M_SUB} for some ordinal {M_ALPHA}.</span></p></div></div>"
)
PROOF = (
    f'<div xmlns="{XHTML}" class="ltx_proof"><h6 class="ltx_title ltx_runin ltx_font_italic ltx_title_proof">Proof.</h6>'
    '<div class="ltx_para"><p class="ltx_p">See <cite class="ltx_cite">[<a href="#b" class="ltx_ref">2</a>, Lemma 6.3]</cite>.'
    "<script>var x = 1;</script><style>p {color: red}</style>\n∎</p></div></div>"
)


def test_latexml_statement_reading_order_and_title():
    tokens, n_title = fragment_tokens(STATEMENT)
    assert tokens == [
        "Lemma",
        "5",
        ".",
        "1",
        ".",
        "Every",
        "set",
        "is",
        "an",
        "element",
        "of",
        "$V",
        "$α",
        "for",
        "some",
        "ordinal",
        "$α",
        ".",
    ]
    assert n_title == 5  # "Lemma 5 . 1 ." comes from the h6 title
    assert not any("\\" in t or "subscript" in t or "𝑉" in t for t in tokens)


def test_proof_title_kept_and_script_style_dropped():
    tokens, n_title = fragment_tokens(PROOF)
    assert tokens == ["Proof", ".", "See", "[", "2", ",", "Lemma", "6", ".", "3", "]", ".", "∎"]
    assert n_title == 2


def test_arxmliv_2011_fragment_with_prefixed_content_first_math():
    statement = (
        f'<div xmlns="{XHTML}" xmlns:m="{MML}" class="theorem lemma" id="Thm1"><h6 class="title">Lemma 1.</h6>'
        '<p>If <m:math display="inline"><m:semantics><m:apply><m:lt/><m:ci>x</m:ci><m:ci>y</m:ci></m:apply>'
        '<m:annotation-xml encoding="MathML-Presentation"><m:mi>x</m:mi><m:mo>&lt;</m:mo><m:mi>y</m:mi>'
        "</m:annotation-xml></m:semantics></m:math> then done.</p></div>"
    )
    tokens, n_title = fragment_tokens(statement)
    assert tokens == ["Lemma", "1", ".", "If", "$x", "$<", "$y", "then", "done", "."]
    assert n_title == 3


def test_svg_dropped_except_math_in_foreign_object():
    frag = (
        f'<div xmlns="{XHTML}" class="ltx_proof"><p>Consider</p><svg xmlns="{SVG}"><text>label A</text>'
        f'<foreignObject><p xmlns="{XHTML}">node <math xmlns="{MML}"><mi>f</mi></math></p></foreignObject></svg>'
        "<p>done</p></div>"
    )
    assert linearize_fragment(frag) == ["Consider", "$f", "done"]


def test_undeclared_prefix_from_html_parser_is_read():
    frag = '<div class="ltx_proof"><p>Take <m:math><m:mi mathvariant="bold">v</m:mi></m:math>.</p></div>'
    assert linearize_fragment(frag) == ["Take", "$v~bold", "."]


def test_malformed_fragment_raises_fragment_error():
    with pytest.raises(FragmentError, match="not well-formed"):
        parse_fragment("<div><p>unclosed</div>")
    with pytest.raises(FragmentError, match="empty"):
        parse_fragment("   ")
    with pytest.raises(FragmentError):
        parse_fragment(None)


def test_linearize_pair_records_error_instead_of_failing():
    row = {
        "article_id": "a1",
        "statement_id": "S1",
        "statement_xml": STATEMENT,
        "proof_xml": "<div><p>oops</div>",
    }
    out = linearize_pair(row)
    assert out["pair_id"] == "a1/S1"
    assert out["statement_tokens"][0] == "Lemma" and out["proof_tokens"] == []
    assert out["proof_title_tokens"] == 0
    assert out["linearize_error"].startswith("proof: not well-formed XML")
    assert out["statement_xml"] == STATEMENT  # input columns kept


def test_title_only_statement_is_detectable():
    title_only = (
        f'<div xmlns="{XHTML}" class="ltx_theorem"><h6 class="ltx_title">Theorem 2.</h6></div>'
    )
    tokens, n_title = fragment_tokens(title_only)
    assert len(tokens) == n_title == 3


def _extracted(tmp_path):
    df = pd.DataFrame(
        {
            "article_id": ["sets", "sets", "other"],
            "statement_id": ["S5.SS1", "S6.SS1", "T1"],
            "kind": ["lemma", "lemma", "theorem"],
            "position": [0, 1, 0],
            "statement_xml": [STATEMENT, STATEMENT, STATEMENT],
            "proof_xml": [PROOF, "<div><b>broken</div>", PROOF],
        }
    )
    path = tmp_path / "extract.parquet"
    df.to_parquet(path, index=False)
    return df, path


def test_linearize_shard_keeps_columns_and_counts_errors(tmp_path):
    df, src = _extracted(tmp_path)
    out_path = tmp_path / "lin.parquet"
    linearize_shard(src, out_path)
    out = pd.read_parquet(out_path)
    assert list(out.columns[: len(df.columns)]) == list(df.columns)
    assert list(out["pair_id"]) == ["sets/S5.SS1", "sets/S6.SS1", "other/T1"]
    assert list(out["linearize_error"] != "") == [False, True, False]
    assert list(out.loc[1, "proof_tokens"]) == []
    assert list(out.loc[0, "proof_tokens"]) == linearize_fragment(PROOF)
    assert list(out["statement_title_tokens"]) == [5, 5, 5]
    schema = pq.read_schema(out_path)
    assert str(schema.field("proof_tokens").type) == "list<element: string>"
    assert str(schema.field("statement_title_tokens").type) == "int64"


def test_linearize_shard_types_columns_of_an_empty_shard(tmp_path):
    empty = pd.DataFrame(
        {
            c: pd.Series([], dtype=object)
            for c in ("article_id", "statement_id", "statement_xml", "proof_xml")
        }
    )
    src = tmp_path / "empty.parquet"
    empty.to_parquet(src, index=False)
    linearize_shard(src, tmp_path / "out.parquet")
    schema = pq.read_schema(tmp_path / "out.parquet")
    assert str(schema.field("statement_tokens").type) == "list<element: string>"
    assert str(schema.field("linearize_error").type) == "string"


def test_missing_columns_are_a_clear_error(tmp_path):
    src = tmp_path / "bad.parquet"
    pd.DataFrame({"article_id": ["a"]}).to_parquet(src, index=False)
    with pytest.raises(ValueError, match="statement_id"):
        linearize_shard(src, tmp_path / "out.parquet")


def test_cli_linearize(tmp_path):
    _, src = _extracted(tmp_path)
    out_path = tmp_path / "cli.parquet"
    assert cli.main(["linearize", str(src), "--out", str(out_path)]) == 0
    assert len(pd.read_parquet(out_path)) == 3
