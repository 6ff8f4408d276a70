"""MathML -> typed tokens: presentation selection, content conversion, fonts, normalisation."""

from __future__ import annotations

from lxml import etree

from proofmatch.data.mathml import (
    content_to_presentation,
    math_tokens,
    presentation,
    single_char_identifiers,
    tokens_of_presentation,
)
from proofmatch.data.mathml_names import ALPHANUMERIC, local_name, split_alphanumeric
from proofmatch.data.views import is_math

MML = "http://www.w3.org/1998/Math/MathML"

# A hand-written formula in the style of LaTeXML 0.8.7 output (parallel markup, ids, xrefs,
# mathematical-italic code points in the content tree, TeX annotation and alttext).
LATEXML_MATH = f"""<math xmlns="{MML}" id="S1.p1.m1" class="ltx_Math" alttext="x_{{i}}+1\\leq n" display="inline">
<semantics><mrow id="S1.p1.m1.5" xref="S1.p1.m1.5.cmml"><mrow id="S1.p1.m1.4" xref="S1.p1.m1.4.cmml">
<msub id="S1.p1.m1.3" xref="S1.p1.m1.3.cmml"><mi id="S1.p1.m1.1" xref="S1.p1.m1.1.cmml">x</mi>
<mi id="S1.p1.m1.2" xref="S1.p1.m1.2.cmml">i</mi></msub><mo id="S1.p1.m1.6" xref="S1.p1.m1.6.cmml">+</mo>
<mn id="S1.p1.m1.7" xref="S1.p1.m1.7.cmml">1</mn></mrow><mo id="S1.p1.m1.8" xref="S1.p1.m1.8.cmml">≤</mo>
<mi id="S1.p1.m1.9" xref="S1.p1.m1.9.cmml">n</mi></mrow>
<annotation-xml encoding="MathML-Content"><apply id="S1.p1.m1.5.cmml" xref="S1.p1.m1.5"><leq/>
<apply><plus/><apply><csymbol cd="ambiguous">subscript</csymbol><ci>𝑥</ci><ci>𝑖</ci></apply><cn type="integer">1</cn></apply>
<ci>𝑛</ci></apply></annotation-xml>
<annotation encoding="application/x-tex">x_{{i}}+1\\leq n</annotation></semantics></math>"""


def parse(xml: str) -> etree._Element:
    return etree.fromstring(xml)


def content_math(body: str) -> etree._Element:
    return parse(f'<math xmlns="{MML}">{body}</math>')


def toks(el: etree._Element) -> str:
    return " ".join(math_tokens(el))


# --- presentation selection and leakage ---------------------------------------------------------


def test_latexml_parallel_markup_gives_only_presentation_tokens():
    tokens = math_tokens(parse(LATEXML_MATH))
    assert tokens == ["$x", "$i", "$+", "$1", "$≤", "$n"]
    joined = " ".join(tokens)
    for leak in ("subscript", "leq", "\\", "𝑥", "cmml", "{"):
        assert leak not in joined


def test_presentation_is_a_copy_without_annotations():
    original = parse(LATEXML_MATH)
    before = etree.tostring(original)
    pres = presentation(original)
    names = {local_name(e) for e in pres.iter()}
    assert not names & {"annotation", "annotation-xml", "semantics", "apply", "ci", "csymbol"}
    assert pres.get("alttext") is None
    assert etree.tostring(original) == before  # input untouched
    assert etree.tostring(presentation(pres)) == etree.tostring(pres)  # idempotent


def test_namespace_forms_give_the_same_tokens():
    body = (
        "<semantics><mrow><mi>a</mi><mo>=</mo><mi mathvariant='bold'>b</mi></mrow>"
        "<annotation encoding='application/x-tex'>a=\\mathbf{b}</annotation></semantics>"
    )
    default = parse(f'<math xmlns="{MML}">{body}</math>')
    prefixed = parse(
        f'<m:math xmlns:m="{MML}">' + body.replace("<", "<m:").replace("<m:/", "</m:") + "</m:math>"
    )
    plain = parse(f"<math>{body}</math>")
    assert (
        math_tokens(default)
        == math_tokens(prefixed)
        == math_tokens(plain)
        == ["$a", "$=", "$b~bold"]
    )


def test_annotation_outside_semantics_is_dropped():
    m = parse(
        f"<math xmlns='{MML}'><mrow><mi>x</mi></mrow><annotation encoding='application/x-tex'>\\xi</annotation>"
        "<annotation-xml encoding='MathML-Content'><ci>y</ci></annotation-xml></math>"
    )
    assert math_tokens(m) == ["$x"]


def test_presentation_annotation_used_when_content_is_primary():
    m = content_math(
        "<semantics><apply><eq/><ci>a</ci><cn>2</cn></apply>"
        "<annotation-xml encoding='MathML-Presentation'><mi>a</mi><mo>:=</mo><mn>2</mn></annotation-xml>"
        "<annotation encoding='application/x-tex'>a:=2</annotation></semantics>"
    )
    assert toks(m) == "$a $:= $2"  # the author's presentation, not a rendering of <eq/>


def test_content_only_semantics_is_converted_and_tex_dropped():
    m = content_math(
        "<semantics><apply><eq/><ci>a</ci><cn>2</cn></apply>"
        "<annotation encoding='application/x-tex'>a=2</annotation></semantics>"
    )
    assert toks(m) == "$a $= $2"


# --- content MathML -> presentation ------------------------------------------------------------


def test_content_leaves_and_latexml_scripts():
    m = content_math(
        "<apply><in/><apply><csymbol cd='ambiguous'>subscript</csymbol><ci>𝑉</ci><ci>𝛼</ci></apply>"
        "<apply><csymbol cd='ambiguous'>superscript</csymbol><reals/><cn>2</cn></apply></apply>"
    )
    pres = presentation(m)
    assert [local_name(e) for e in pres.iter()][:5] == ["math", "mrow", "msub", "mi", "mi"]
    assert "msup" in {local_name(e) for e in pres.iter()}
    assert toks(m) == "$V $α $∈ $R~double-struck $2"  # 𝑉 -> plain V, ℝ -> R + font


def test_content_arithmetic_rules():
    cases = {
        "<apply><plus/><ci>a</ci><ci>b</ci><ci>c</ci></apply>": "$a $+ $b $+ $c",
        "<apply><minus/><ci>a</ci><ci>b</ci></apply>": "$a $− $b",
        "<apply><minus/><ci>a</ci></apply>": "$− $a",
        "<apply><times/><apply><plus/><ci>a</ci><ci>b</ci></apply><ci>c</ci></apply>": "$( $a $+ $b $) $c",
        "<apply><minus/><ci>a</ci><apply><minus/><ci>b</ci><ci>c</ci></apply></apply>": "$a $− $( $b $− $c $)",
        "<apply><power/><apply><plus/><ci>x</ci><cn>1</cn></apply><cn>2</cn></apply>": "$( $x $+ $1 $) $2",
        "<apply><root/><degree><cn>3</cn></degree><ci>x</ci></apply>": "$x $3",
        "<apply><root/><ci>x</ci></apply>": "$x",
        "<apply><abs/><ci>x</ci></apply>": "$| $x $|",
        "<apply><factorial/><ci>n</ci></apply>": "$n $!",
        "<apply><not/><ci>p</ci></apply>": "$¬ $p",
        "<apply><ci>f</ci><ci>x</ci><ci>y</ci></apply>": "$f $( $x $, $y $)",
        "<apply><sin/><ci>x</ci></apply>": "$sin $( $x $)",
        "<cn type='rational'>1<sep/>2</cn>": "$1 $/ $2",
    }
    for body, expected in cases.items():
        assert toks(content_math(body)) == expected, body
    # divide is a slash, as in the reference pipeline's ctop.xsl (binary "/", precedence of times)
    assert toks(content_math("<apply><divide/><ci>a</ci><ci>b</ci></apply>")) == "$a $/ $b"
    assert (
        toks(
            content_math(
                "<apply><divide/><apply><plus/><ci>a</ci><ci>b</ci></apply><apply><times/><ci>c</ci><ci>d</ci></apply></apply>"
            )
        )
        == "$( $a $+ $b $) $/ $( $c $d $)"
    )
    sqrt = presentation(content_math("<apply><root/><ci>x</ci></apply>"))
    assert "msqrt" in {local_name(e) for e in sqrt.iter()}


def test_content_relations_logic_and_sets():
    cases = {
        "<apply><leq/><ci>a</ci><ci>b</ci></apply>": "$a $≤ $b",
        "<apply><neq/><ci>a</ci><ci>b</ci></apply>": "$a $≠ $b",
        "<apply><notin/><ci>a</ci><ci>B</ci></apply>": "$a $∉ $B",
        "<apply><prsubset/><ci>A</ci><ci>B</ci></apply>": "$A $⊂ $B",
        "<apply><union/><ci>A</ci><ci>B</ci></apply>": "$A $∪ $B",
        "<apply><setdiff/><ci>A</ci><ci>B</ci></apply>": "$A $∖ $B",
        "<apply><implies/><apply><and/><ci>p</ci><ci>q</ci></apply><ci>r</ci></apply>": "$p $∧ $q $⇒ $r",
        "<apply><compose/><ci>f</ci><ci>g</ci></apply>": "$f $∘ $g",
        "<set><ci>a</ci><ci>b</ci></set>": "${ $a $, $b $}",
        "<list><ci>a</ci><ci>b</ci></list>": "$[ $a $, $b $]",
        "<vector><cn>1</cn><cn>2</cn></vector>": "$( $1 $, $2 $)",
        "<interval closure='open-closed'><cn>0</cn><cn>1</cn></interval>": "$( $0 $, $1 $]",
        "<set><bvar><ci>x</ci></bvar><condition><apply><gt/><ci>x</ci><cn>0</cn></apply></condition>"
        "<ci>x</ci></set>": "${ $x $| $x $> $0 $}",
        "<apply><eq/><pi/><infinity/><emptyset/><integers/></apply>": "$π $= $∞ $= $∅ $= $Z~double-struck",
    }
    for body, expected in cases.items():
        assert toks(content_math(body)) == expected, body


def test_content_binders():
    forall = (
        "<apply><forall/><bvar><ci>x</ci></bvar><apply><implies/><apply><in/><ci>x</ci><reals/></apply>"
        "<apply><geq/><apply><power/><ci>x</ci><cn>2</cn></apply><cn>0</cn></apply></apply></apply>"
    )
    assert toks(content_math(forall)) == "$∀ $x $. $x $∈ $R~double-struck $⇒ $x $2 $≥ $0"
    exists = "<apply><exists/><bvar><ci>y</ci></bvar><condition><apply><in/><ci>y</ci><ci>S</ci></apply></condition><ci>P</ci></apply>"
    assert toks(content_math(exists)) == "$∃ $y $: $y $∈ $S $. $P"
    total = (
        "<apply><sum/><bvar><ci>i</ci></bvar><lowlimit><cn>1</cn></lowlimit><uplimit><ci>n</ci></uplimit>"
        "<apply><ci>a</ci><ci>i</ci></apply></apply>"
    )
    pres = presentation(content_math(total))
    assert "munderover" in {local_name(e) for e in pres.iter()}
    assert tokens_of_presentation(pres) == ["$∑", "$i", "$=", "$1", "$n", "$a", "$(", "$i", "$)"]
    integral = (
        "<apply><int/><bvar><ci>x</ci></bvar><lowlimit><cn>0</cn></lowlimit><uplimit><cn>1</cn></uplimit>"
        "<apply><ci>f</ci><ci>x</ci></apply></apply>"
    )
    assert toks(content_math(integral)) == "$∫ $0 $1 $f $( $x $) $d $x"
    limit = "<apply><limit/><bvar><ci>n</ci></bvar><lowlimit><infinity/></lowlimit><apply><ci>a</ci><ci>n</ci></apply></apply>"
    assert toks(content_math(limit)) == "$lim $n $→ $∞ $a $( $n $)"


def test_latexml_content_forms():
    """LaTeXML's own content idioms read as the presentation a reader sees."""
    sub = "<csymbol cd='ambiguous'>subscript</csymbol>"
    sup = "<csymbol cd='ambiguous'>superscript</csymbol>"
    cases = {
        # a ≤ b < c: one multirelation with the operators between the operands
        "<apply><csymbol cd='ambiguous'>multirelation</csymbol><cn>1</cn><leq/><ci>q</ci><lt/><infinity/></apply>": "$1 $≤ $q $< $∞",
        # f : X → Y, mixing a latexml csymbol and a ci operator
        "<apply><csymbol cd='ambiguous'>multirelation</csymbol><ci>f</ci><csymbol cd='latexml'>colon</csymbol>"
        "<ci>X</ci><ci>→</ci><ci>Y</ci></apply>": "$f $: $X $→ $Y",
        # ∑_{n=0}^{∞} a_n: a scripted big operator applied to its body (no function parentheses)
        f"<apply><apply>{sup}<apply>{sub}<sum/><apply><eq/><ci>n</ci><cn>0</cn></apply></apply><infinity/></apply>"
        f"<apply>{sub}<ci>a</ci><ci>n</ci></apply></apply>": "$∑ $n $= $0 $∞ $a $n",
        f"<apply><apply>{sub}<int/><ci>U</ci></apply><ci>f</ci></apply>": "$∫ $U $f",
        "<apply><csymbol cd='latexml'>restriction</csymbol><ci>F</ci><ci>U</ci></apply>": "$F $| $U",
        "<apply><csymbol cd='latexml'>norm</csymbol><ci>x</ci></apply>": "$‖ $x $‖",
        "<apply><csymbol cd='latexml'>approximately-equals</csymbol><ci>A</ci><ci>B</ci></apply>": "$A $≅ $B",
        # an operator character as head keeps its binding: C ⋅ C < 0 needs no parentheses
        "<apply><lt/><apply><ci>⋅</ci><ci>C</ci><ci>C</ci></apply><cn>0</cn></apply>": "$C $⋅ $C $< $0",
        "<apply><ci>⋅</ci><apply><plus/><ci>a</ci><ci>b</ci></apply><ci>c</ci></apply>": "$( $a $+ $b $) $⋅ $c",
    }
    for body, expected in cases.items():
        assert toks(content_math(body)) == expected, body


def test_content_only_in_an_annotation_is_converted():
    """``semantics`` whose only tree is a Content MathML annotation (ctop converts its first child)."""
    m = content_math(
        "<semantics><annotation-xml encoding='MathML-Content'><apply><eq/><ci>a</ci><cn>2</cn></apply>"
        "</annotation-xml><annotation encoding='application/x-tex'>a=2</annotation></semantics>"
    )
    assert toks(m) == "$a $= $2"
    tex_only = content_math(
        "<semantics><annotation encoding='application/x-tex'>a=2</annotation></semantics>"
    )
    assert toks(tex_only) == ""  # TeX is never read


def test_content_to_presentation_on_bare_element():
    apply = parse(f"<apply xmlns='{MML}'><plus/><ci>a</ci><cn>1</cn></apply>")
    pres = content_to_presentation(apply)
    assert local_name(pres) == "mrow"
    assert tokens_of_presentation(pres) == ["$a", "$+", "$1"]


def test_content_identifier_normalisation():
    assert toks(content_math("<ci>𝐱</ci>")) == "$x~bold"
    assert toks(content_math("<ci>𝑀</ci>")) == "$M"
    assert toks(content_math("<ci>italic-ϕ</ci>")) == "$ϕ"  # LaTeXML's font-named content symbol
    assert toks(content_math("<ci>normal-Γ</ci>")) == "$Γ"
    assert toks(content_math("<ci>𝑆𝑐ℎ</ci>")) == "$Sch~italic"


# --- fonts and token typing --------------------------------------------------------------------


def test_fonts_give_distinct_tokens():
    m = parse(
        f"<math xmlns='{MML}'><mrow><mi>x</mi><mi mathvariant='bold'>x</mi><mi mathvariant='italic'>x</mi>"
        "<mi mathvariant='normal'>x</mi><mi>𝐱</mi><mi>𝒪</mi><mi>ℝ</mi><mi mathvariant='double-struck'>R</mi>"
        "<mstyle mathvariant='fraktur'><mi>g</mi></mstyle></mrow></math>"
    )
    assert math_tokens(m) == [
        "$x",
        "$x~bold",
        "$x",
        "$x",
        "$x~bold",
        "$O~script",
        "$R~double-struck",
        "$R~double-struck",
        "$g~fraktur",
    ]


def test_inherited_font_is_pushed_onto_tokens():
    pres = presentation(
        parse(f"<math xmlns='{MML}' mathvariant='bold'><mrow><mi>v</mi><mn>1</mn></mrow></math>")
    )
    assert [e.get("mathvariant") for e in pres.iter() if local_name(e) in ("mi", "mn")] == [
        "bold",
        "bold",
    ]
    assert tokens_of_presentation(pres) == ["$v~bold", "$1~bold"]


def test_math_tokens_are_typed():
    tokens = math_tokens(parse(LATEXML_MATH))
    assert tokens and all(is_math(t) and t.startswith("$") for t in tokens)


def test_mfenced_emits_open_separators_close():
    m = parse(
        f"<math xmlns='{MML}'><mfenced open='[' close=')' separators=';,'><mi>a</mi><mi>b</mi><mi>c</mi></mfenced></math>"
    )
    assert toks(m) == "$[ $a $; $b $, $c $)"
    default = parse(f"<math xmlns='{MML}'><mfenced><mi>a</mi><mi>b</mi></mfenced></math>")
    assert toks(default) == "$( $a $, $b $)"


def test_invisible_operators_and_whitespace():
    m = parse(
        f"<math xmlns='{MML}'><mrow><mi>f</mi><mo>\u2061</mo><mi>a</mi><mo>\u2062</mo><mi>b</mi>"
        "<mtext>for all  x</mtext><mi>sin</mi></mrow></math>"
    )
    assert toks(m) == "$f $a $b $for $all $x $sin"


def test_alphanumeric_table():
    assert split_alphanumeric("𝑀") == ("M", "italic")
    assert split_alphanumeric("𝛼") == ("α", "italic")  # Greek, not Latin alpha ɑ
    assert split_alphanumeric("𝝑") == ("ϑ", "bold-italic")
    assert split_alphanumeric("𝔪") == ("m", "fraktur")
    assert split_alphanumeric("ℎ") == ("h", "italic")
    assert split_alphanumeric("x𝑀") is None and split_alphanumeric("𝐚𝑏") is None
    assert len(ALPHANUMERIC) > 990


def test_single_char_identifiers_are_rewritable():
    pres = presentation(parse(LATEXML_MATH))
    mis = list(single_char_identifiers(pres))
    assert [mi.text for mi in mis] == ["x", "i", "n"]
    mis[0].text = "y"
    assert tokens_of_presentation(pres) == ["$y", "$i", "$+", "$1", "$≤", "$n"]
