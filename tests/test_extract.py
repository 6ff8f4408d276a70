"""Pair extraction: both markup dialects, pairing rules, and every kind of bad input file."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pandas as pd
import pytest
from lxml import etree

from proofmatch import cli
from proofmatch.data import corpus, extract, statements, xmlsafe

XHTML = "http://www.w3.org/1999/xhtml"
MATHML = "http://www.w3.org/1998/Math/MathML"


def latexml_doc(body: str, doctype: bool = True) -> bytes:
    """A LaTeXML 0.8.7-style XHTML article (default XHTML namespace, MathML with xmlns on math)."""
    head = '<?xml version="1.0" encoding="utf-8"?>\n' + (
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1 plus MathML 2.0//EN" '
        '"http://www.w3.org/Math/DTD/mathml2/xhtml-math11-f.dtd">\n'
        if doctype
        else ""
    )
    return (
        head + f'<html xmlns="{XHTML}"><head><title>T</title></head><body>{body}</body></html>'
    ).encode()


def lx_thm(env: str, id_: str | None, text: str = "Statement.") -> str:
    idattr = f' id="{id_}"' if id_ else ""
    return (
        f'<div{idattr} class="ltx_theorem ltx_theorem_{env}">'
        f'<h6 class="ltx_title ltx_runin ltx_title_theorem"><span class="ltx_tag ltx_tag_theorem">{env} 1</span></h6>'
        f'<div class="ltx_para"><p class="ltx_p">{text} <math xmlns="{MATHML}" alttext="x"><semantics><mi>x</mi>'
        f'<annotation encoding="application/x-tex">x</annotation></semantics></math></p></div></div>'
    )


def lx_proof(text: str = "Proof text.") -> str:
    return f'<div class="ltx_proof"><h6 class="ltx_title ltx_title_proof">Proof.</h6><div class="ltx_para"><p class="ltx_p">{text} ∎</p></div></div>'


def arxmliv_doc(body: str) -> bytes:
    """2011 arXMLiv/MREC style: no ltx_ prefixes, prefixed m: MathML, arXMLiv namespace declared."""
    return (
        f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="{XHTML}" xmlns:m="{MATHML}" '
        f'xmlns:arxmliv="http://arxmliv.kwarc.info/ns/"><body>{body}</body></html>'
    ).encode()


def ax_thm(env: str, id_: str | None, text: str = "Let") -> str:
    idattr = f' id="{id_}"' if id_ else ""
    return (
        f'<div class="theorem {env}"{idattr}><h6 class="title">{env.title()} 1.</h6>'
        f'<p>{text} <m:math display="inline"><m:semantics><m:mi>f</m:mi>'
        f'<m:annotation-xml encoding="MathML-Content"><m:ci>f</m:ci></m:annotation-xml></m:semantics></m:math></p></div>'
    )


AX_PROOF = '<div class="proof"><h6 class="title">Proof.</h6><p>Obvious from <m:math><m:mi>f</m:mi></m:math>.</p></div>'

STANDALONE = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)


def _pairs(data: bytes, **kw: object) -> tuple[list[dict], statements.ArticleResult]:
    res = extract.extract_bytes(data, "art", **kw)
    return res.pairs, res


def _reason(data: bytes, **kw: object) -> str:
    with pytest.raises(xmlsafe.SkipFile) as err:
        extract.extract_bytes(data, "art", **kw)
    return err.value.reason


# ------------------------------------------------------------------------------------------
# pairing rules


def test_latexml_pairs_ids_kinds_positions() -> None:
    body = (
        lx_thm("lemma", "S1.SS1")
        + "\n"
        + lx_proof("First.")
        + lx_thm("definition", "S1.SS2")  # no proof follows
        + '<div class="ltx_para"><p>Definition text.</p></div>'
        + lx_thm("theorem", "S1.SS3")
        + '<div class="ltx_para"><p>Commentary instead of a proof.</p></div>'  # proof not immediate
        + lx_proof("Orphan.")
        + lx_thm("proposition", "S1.SS4")
        + "<!-- a comment --><?pi x?>\n  "
        + lx_proof("After comment.")
        + lx_thm("lemma", None)
        + lx_proof("No id.")
    )
    pairs, res = _pairs(latexml_doc(body))
    assert [(p["statement_id"], p["kind"], p["position"]) for p in pairs] == [
        ("S1.SS1", "lemma", 0),
        ("S1.SS4", "proposition", 3),
        ("p4", "lemma", 4),
    ]
    # titles/tags with "theorem" in their class are not theorem-like; 5 statements in all
    assert sum(res.theorem_like_kinds.values()) == 5
    assert res.theorem_like_kinds == {"lemma": 2, "definition": 1, "theorem": 1, "proposition": 1}
    assert "First." in pairs[0]["proof_xml"] and "After comment." in pairs[1]["proof_xml"]
    assert pairs[0]["article_id"] == "art" and res.parser == "xml"


def test_fragments_keep_namespaces_and_reparse() -> None:
    pairs, _ = _pairs(latexml_doc(lx_thm("lemma", "L1") + "\n tail text \n" + lx_proof() + "after"))
    assert pairs[0]["statement_xml"].endswith("</div>") and pairs[0]["proof_xml"].endswith("</div>")
    stmt = etree.fromstring(pairs[0]["statement_xml"].encode(), STANDALONE)
    assert stmt.tag == f"{{{XHTML}}}div" and stmt.get("id") == "L1"
    assert stmt.find(f".//{{{MATHML}}}mi").text == "x"
    proof = etree.fromstring(pairs[0]["proof_xml"].encode(), STANDALONE)
    assert proof.get("class") == "ltx_proof"


def test_arxmliv_dialect_prefixed_mathml() -> None:
    body = (
        ax_thm("lemma", "Thm1")
        + AX_PROOF
        + ax_thm("remark", None)
        + ax_thm("theorem", None)
        + AX_PROOF
    )
    body += '<div class="theorem">bare</div>' + AX_PROOF
    pairs, res = _pairs(arxmliv_doc(body))
    assert [(p["statement_id"], p["kind"], p["position"]) for p in pairs] == [
        ("Thm1", "lemma", 0),
        ("p2", "theorem", 2),
        ("p3", "theorem", 3),
    ]
    assert res.theorem_like_kinds["remark"] == 1
    frag = pairs[0]["statement_xml"]
    assert f'xmlns:m="{MATHML}"' in frag and "<m:mi>f</m:mi>" in frag
    root = etree.fromstring(frag.encode(), STANDALONE)
    assert root.find(f".//{{{MATHML}}}ci").text == "f"


def test_no_namespace_markup() -> None:
    doc = b'<root><div class="ltx_theorem ltx_theorem_corollary" id="c1"><p>S</p></div><div class="ltx_proof"><p>P</p></div></root>'
    pairs, _ = _pairs(doc)
    assert [(p["statement_id"], p["kind"]) for p in pairs] == [("c1", "corollary")]
    assert pairs[0]["statement_xml"].startswith('<div class="ltx_theorem')


@pytest.mark.parametrize(
    "cls, kind",
    [
        ("ltx_theorem ltx_theorem_lemma", "lemma"),
        ("ltx_theorem_lemma ltx_theorem", "lemma"),
        ("ltx_theorem", "theorem"),
        ("theorem lemma", "lemma"),
        ("theorem Proposition", "proposition"),
        ("theorem", "theorem"),
        ("ltx_title ltx_runin ltx_title_theorem", None),
        ("ltx_tag ltx_tag_theorem", None),
        ("theorems", None),
        ("ltx_proof", None),
        ("", None),
        (None, None),
    ],
)
def test_theorem_kind(cls: str | None, kind: str | None) -> None:
    assert statements.theorem_kind(cls) == kind


def ltx_thm_doc(body: str) -> bytes:
    """2011 arXMLiv as real articles have it: no ``m:`` prefix (MathML as a default namespace)."""
    return (
        f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="{XHTML}" '
        f'xmlns:arxmliv="http://arxmliv.kwarc.info/ns/"><body>{body}</body></html>'
    ).encode()


LTX_PROOF = (
    f'<div class="proof"><h6 class="title proof-title">Proof.</h6><p>Obvious from <math xmlns="{MATHML}">'
    "<semantics><mi>f</mi><annotation encoding='application/x-tex'>f</annotation></semantics></math>.</p></div>"
)


def ltx_thm(title: str | None, id_: str | None = None, math: str = "") -> str:
    """A statement ``div class="theorem ltx_thm"``: only its title says which kind it is."""
    idattr = f' id="{id_}"' if id_ else ""
    head = f'<h6 class="title bold theorem-title">{title}</h6>' if title is not None else ""
    return f'<div class="theorem ltx_thm"{idattr}>{head}<div class="para"><p class="p">Let {math}.</p></div></div>'


@pytest.mark.parametrize(
    "title, kind, unknown_word",
    [
        ("Theorem 2.1.", "theorem", None),
        ("Lemma 3.2.", "lemma", None),
        ("Proposition 1.", "proposition", None),
        ("Corollary 4.3 (Zorn).", "corollary", None),
        ("Definition.", "definition", None),
        ("Main Theorem.", "theorem", None),
        ("2.4. Remark.", "remark", None),
        ("Prop. 5", "proposition", None),
        ("Théorème 2.1.", statements.UNKNOWN_KIND, "théorème"),
        ("Hauptsatz 1.", statements.UNKNOWN_KIND, "hauptsatz"),
        ("", statements.UNKNOWN_KIND, "(empty title)"),
        (None, statements.UNKNOWN_KIND, "(no title)"),
    ],
)
def test_ltx_thm_kind_from_title(title: str | None, kind: str, unknown_word: str | None) -> None:
    pairs, res = _pairs(ltx_thm_doc(ltx_thm(title, "S2.Thm1") + LTX_PROOF))
    assert [(p["statement_id"], p["kind"]) for p in pairs] == [("S2.Thm1", kind)]
    if unknown_word is None:
        assert res.kind_sources == {"title": 1} and not res.unknown_kind_titles
    else:
        assert res.kind_sources == {"unknown": 1} and res.unknown_kind_titles == {unknown_word: 1}


def test_kind_from_class_wins_and_bare_class_without_title_stays_theorem() -> None:
    lemma_titled_theorem = (
        '<div class="theorem lemma"><h6 class="title">Theorem 1.</h6><p>x</p></div>'
    )
    bare = '<div class="theorem"><p>x</p></div>'
    bare_titled = '<div class="theorem"><h6 class="title">Claim 2.</h6><p>x</p></div>'
    latexml_abbrev = lx_thm("thm", "T").replace(
        ">thm 1<", ">Theorem 1<"
    )  # \newtheorem{thm}{Theorem}
    body = "".join(x + AX_PROOF for x in (lemma_titled_theorem, bare, bare_titled, latexml_abbrev))
    pairs, res = _pairs(arxmliv_doc(body))
    assert [p["kind"] for p in pairs] == ["lemma", "theorem", "claim", "theorem"]
    assert res.kind_sources == {"class": 2, "title": 2}


def test_title_formulas_are_not_kind_words() -> None:
    title = f'<math xmlns="{MATHML}"><mi>Lemma</mi></math>-adic Theorem 1.'
    pairs, _ = _pairs(ltx_thm_doc(ltx_thm(title) + LTX_PROOF))
    assert pairs[0]["kind"] == "theorem"


def test_ltx_thm_markup_extracts_and_linearizes_like_the_other_markups() -> None:
    """The same statement in the three markups: same kind, same tokens (formulas included)."""
    from proofmatch.data import linearize
    from proofmatch.texmath.convert import render_math

    tex = r"\mathbb{P}(|X_{n}| > \varepsilon) \le \frac{E|X|}{\varepsilon}, \mathcal{F} \subseteq \mathbf{A}"
    sentence = "Let {m} hold. Then we are done."
    lx = extract.extract_bytes(
        latexml_doc(
            '<div id="L" class="ltx_theorem ltx_theorem_lemma"><h6 class="ltx_title ltx_runin ltx_title_theorem">'
            '<span class="ltx_tag ltx_tag_theorem"><span class="ltx_text ltx_font_bold">Lemma 3.2</span></span>'
            '<span class="ltx_text ltx_font_bold">.</span></h6><div class="ltx_para"><p class="ltx_p">'
            + sentence.format(m=render_math(tex, "L.m1", "latexml", False))
            + "</p></div></div>"
            + lx_proof()
        ),
        "a",
    ).pairs[0]
    ax = extract.extract_bytes(
        arxmliv_doc(
            '<div class="theorem lemma" id="L"><h6 class="title theorem-title">Lemma 3.2.</h6><div class="para"><p class="p">'
            + sentence.format(m=render_math(tex, "L.m1", "arxmliv", False))
            + "</p></div></div>"
            + AX_PROOF
        ),
        "a",
    ).pairs[0]
    math = render_math(tex, "L.m1", "arxmliv_ltx", False)
    assert math.startswith(f'<math xmlns="{MATHML}"') and "<semantics>" in math
    assert (
        '<annotation-xml encoding="MathML-Content">' in math
        and 'encoding="application/x-tex"' in math
    )
    real = extract.extract_bytes(
        ltx_thm_doc(
            '<div class="theorem ltx_thm" id="L"><h6 class="title bold theorem-title">Lemma 3.2.</h6>'
            f'<div class="para"><p class="p">{sentence.format(m=math)}</p></div></div>' + LTX_PROOF
        ),
        "a",
    )
    got = real.pairs[0]
    assert "m:" not in got["statement_xml"] and f'xmlns="{MATHML}"' in got["statement_xml"]
    assert lx["kind"] == ax["kind"] == got["kind"] == "lemma" and real.kind_sources == {"title": 1}
    tokens = [linearize.fragment_tokens(p["statement_xml"]) for p in (lx, ax, got)]
    assert tokens[0] == tokens[1] == tokens[2], tokens
    toks, n_title = tokens[2]
    assert toks[:5] == ["Lemma", "3", ".", "2", "."] and n_title == 5
    assert (
        "$P~double-struck" in toks
        and "$F~script" in toks
        and "$A~bold" in toks
        and "$/" not in toks
    )
    assert not any(
        "varepsilon" in t or "mathbb" in t for t in toks
    )  # the TeX annotation is never read


def test_proof_class_tokens_not_substrings() -> None:
    doc = latexml_doc(
        lx_thm("lemma", "a")
        + '<div class="ltx_proofsketch"><p>x</p></div>'
        + lx_thm("lemma", "b")
        + '<div class="x proof y">p</div>'
    )
    pairs, _ = _pairs(doc)
    assert [p["statement_id"] for p in pairs] == ["b"]
    assert res_near(doc) == {"proof": 1}


def res_near(doc: bytes) -> dict[str, int]:
    return dict(_pairs(doc)[1].near_misses)


def test_near_misses_counted_not_paired() -> None:
    """Appendix A's rule by substring: elements placed as a pair whose class holds "theorem" or
    "proof" only inside another word are counted by side; real pairs and run-in titles are not."""
    real = lx_thm("lemma", "R1") + lx_proof() + ax_thm("lemma", "R2") + AX_PROOF
    body = (
        real
        + '<div class="mytheorem" id="N1"><p>S</p></div>'
        + lx_proof()  # statement side misses
        + lx_thm("theorem", "N2")
        + '<div class="proofsketch"><p>P</p></div>'  # proof side misses
        + '<div class="mytheorem"><p>S</p></div><!-- c -->\n<div class="proofsketch"><p>P</p></div>'  # both
        + '<div class="mytheorem"><p>S</p></div><div class="ltx_para">no proof</div>'  # no proof placed
        + '<div class="ltx_para">x</div><div class="proofsketch"><p>P</p></div>'  # no theorem placed
    )
    pairs, res = _pairs(arxmliv_doc(body))  # declares the m: prefix of the 2011 pair
    assert [p["statement_id"] for p in pairs] == ["R1", "R2"]
    assert dict(res.near_misses) == {"statement": 1, "proof": 1, "both": 1}
    assert dict(res.near_miss_classes) == {
        "mytheorem -> ltx_proof": 1,
        "ltx_theorem ltx_theorem_theorem -> proofsketch": 1,
        "mytheorem -> proofsketch": 1,
    }
    # the same pairs without the near misses: identical pairs, nothing counted (the run-in titles
    # ltx_title_theorem / ltx_tag_theorem / ltx_title_proof inside them are not near misses)
    clean, clean_res = _pairs(arxmliv_doc(real))
    assert clean == pairs and not clean_res.near_misses and not clean_res.near_miss_classes


def test_near_misses_in_reports_and_merge(tmp_path: Path) -> None:
    (tmp_path / "a.xhtml").write_bytes(
        latexml_doc(
            '<div class="mytheorem"><p>S</p></div>' + lx_proof() + lx_thm("lemma", "L") + lx_proof()
        )
    )
    (tmp_path / "b.xhtml").write_bytes(
        latexml_doc(lx_thm("lemma", "L") + '<div class="proofsketch">p</div>')
    )
    (tmp_path / "c.xhtml").write_bytes(latexml_doc(lx_thm("lemma", "L") + lx_proof()))
    reports = [extract.extract_files([(n, str(tmp_path / f"{n}.xhtml"))])[1] for n in "abc"]
    assert [r["near_misses"] for r in reports] == [1, 1, 0] and reports[2]["near_miss_sides"] == {}
    merged = extract.merge_reports(reports)
    assert merged["pairs"] == 2 and merged["near_misses"] == 2
    assert merged["near_miss_sides"] == {"proof": 1, "statement": 1}
    assert merged["near_miss_classes"] == {
        "ltx_theorem ltx_theorem_lemma -> proofsketch": 1,
        "mytheorem -> ltx_proof": 1,
    }
    old = {
        k: v for k, v in reports[2].items() if not k.startswith("near_miss")
    }  # a report from before the count
    assert extract.merge_reports([old, reports[0]])["near_misses"] == 1


def test_duplicate_ids_stay_unique() -> None:
    pairs, res = _pairs(
        latexml_doc((lx_thm("lemma", "S1") + lx_proof()) * 2 + lx_thm("lemma", None) + lx_proof())
    )
    assert [p["statement_id"] for p in pairs] == ["S1", "S1#p1", "p2"] and res.duplicate_ids == 1


# ------------------------------------------------------------------------------------------
# entities, DTDs, HTML


def test_named_html_entities_replaced_textually() -> None:
    for doctype in (True, False):
        body = lx_thm("lemma", "e", "a&nbsp;b&InvisibleTimes;c &amp; &lt; d&Aacute;") + lx_proof()
        pairs, res = _pairs(latexml_doc(body, doctype=doctype))
        assert res.entities_replaced == 3 and res.unresolved_entities == 0
        text = "".join(etree.fromstring(pairs[0]["statement_xml"].encode(), STANDALONE).itertext())
        assert "a\u00a0b\u2062c & < d\u00c1" in text


def test_billion_laughs_not_expanded() -> None:
    decls = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
        for i in range(1, 10)
    )
    doc = f'<?xml version="1.0"?><!DOCTYPE html [{decls}]><html><div class="theorem lemma">&lol9;</div><div class="proof">p</div></html>'
    tracemalloc.start()
    try:
        outcome = extract.extract_bytes(doc.encode(), "bomb")
    except xmlsafe.SkipFile as skip:
        outcome = skip
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20 * 2**20
    if isinstance(outcome, xmlsafe.SkipFile):
        assert outcome.reason == "entity_expansion"
    else:  # parsed without expansion: the reference is kept as literal text
        assert "&lol9;" in "".join(etree.fromstring(outcome.pairs[0]["statement_xml"]).itertext())


def test_external_entities_and_dtd_never_loaded(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    dtd = tmp_path / "ents.dtd"
    dtd.write_text('<!ENTITY fromdtd "DTDVALUE">')
    doc = (
        f'<?xml version="1.0"?><!DOCTYPE html SYSTEM "{dtd.as_uri()}" [<!ENTITY ext SYSTEM "{secret.as_uri()}">'
        '<!ENTITY net SYSTEM "http://127.0.0.1:9/x"><!ENTITY small "SMALL">]>'
        f'<html xmlns="{XHTML}"><div class="ltx_theorem ltx_theorem_lemma" id="t">a &ext; b &net; c &small; d &fromdtd; e</div>'
        '<div class="ltx_proof">p</div></html>'
    )
    pairs, res = _pairs(doc.encode())
    stmt = pairs[0]["statement_xml"]
    assert "TOPSECRET" not in stmt and "DTDVALUE" not in stmt and "SMALL" not in stmt
    assert res.unresolved_entities == 4
    text = "".join(etree.fromstring(stmt.encode(), STANDALONE).itertext())
    assert text == "a &ext; b &net; c &small; d &fromdtd; e"


def test_html5_file_uses_html_parser(tmp_path: Path) -> None:
    html5 = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>t</title></head><body>'
        '<div class="ltx_theorem ltx_theorem_lemma" id="Thmlemma1"><p>Caf\u00e9<br>x&nbsp;y '
        f'<math xmlns="{MATHML}" alttext="x"><mi>x</mi></math></p></div>\n'
        '<div class="ltx_proof"><p>pf<img src="a.png"></p></div></body></html>'
    ).encode()
    path = tmp_path / "a.html.gz"
    path.write_bytes(gzip.compress(html5))
    res = extract.extract_file(path, "a")
    assert res.parser == "html" and [p["statement_id"] for p in res.pairs] == ["Thmlemma1"]
    stmt = etree.fromstring(res.pairs[0]["statement_xml"].encode(), STANDALONE)
    assert "Caf\u00e9" in "".join(stmt.itertext())
    assert stmt.find(f".//{{{MATHML}}}mi") is not None  # xmlns attribute re-read as a namespace
    # the same bytes as .xhtml must be well-formed XML: skipped
    xpath = tmp_path / "a.xhtml"
    xpath.write_bytes(html5)
    with pytest.raises(xmlsafe.SkipFile) as err:
        extract.extract_file(xpath, "a")
    assert err.value.reason == "malformed"


# ------------------------------------------------------------------------------------------
# bad files


GOOD = latexml_doc(lx_thm("lemma", "S1") + lx_proof() + lx_thm("lemma", "S2") + lx_proof())


@pytest.mark.parametrize(
    "data, reason",
    [
        (GOOD[: len(GOOD) // 2], "truncated"),
        (GOOD[:-3], "truncated"),
        (b"", "empty"),
        (b"  \n\t ", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4, "binary"),
        (bytes(range(1, 9)) * 200, "binary"),
        (GOOD.replace(b"Statement.", b"Statem\xff\xfent."), "bad_encoding"),
        (GOOD.replace(b'encoding="utf-8"', b'encoding="no-such-codec"'), "bad_encoding"),
        (b"<a>" * 300 + b"</a>" * 300, "too_deep"),
        (b"just some text, not markup", "malformed"),
        (GOOD.replace(b"</h6>", b"</h5>", 1), "malformed"),
        (b'<a class="x">&undefinedname;</a>', "malformed"),
        (b"<a/><b/>", "malformed"),
    ],
    ids=[
        "truncated-half",
        "truncated-end",
        "empty",
        "whitespace",
        "png",
        "control",
        "bad-utf8",
        "unknown-encoding",
        "deep-libxml2",
        "text",
        "mismatch",
        "undefined-entity",
        "two-roots",
    ],
)
def test_bad_bytes_are_classified(data: bytes, reason: str) -> None:
    assert _reason(data) == reason


def test_max_depth_bound() -> None:
    nested = lambda n: b"<a>" * n + b"x" + b"</a>" * n  # noqa: E731
    assert _reason(nested(33), max_depth=32) == "too_deep"
    extract.extract_bytes(nested(32), "ok", max_depth=32)
    extract.extract_bytes(nested(256), "ok", max_depth=256)
    assert _reason(nested(257), max_depth=256) == "too_deep"
    html_deep = b"<html><body>" + b"<div>" * 40 + b"x" + b"</div>" * 39 + b"<br></body></html>"
    with pytest.raises(xmlsafe.SkipFile) as err:
        extract.extract_bytes(html_deep, "h", max_depth=32, allow_html=True)
    assert err.value.reason == "too_deep"


def test_latin1_declared_encoding_is_fine() -> None:
    doc = '<?xml version="1.0" encoding="iso-8859-1"?><r><div class="theorem lemma">caf\u00e9</div><div class="proof">p</div></r>'
    pairs, _ = _pairs(doc.encode("latin-1"))
    assert "caf\u00e9" in pairs[0]["statement_xml"]


def test_gzip_problems(tmp_path: Path) -> None:
    notgz = tmp_path / "a.xhtml.gz"
    notgz.write_bytes(GOOD)
    cut = tmp_path / "b.xhtml.gz"
    cut.write_bytes(gzip.compress(GOOD)[:-30])
    corrupt = tmp_path / "c.xhtml.gz"
    blob = bytearray(gzip.compress(GOOD))
    blob[-6] ^= 0xFF  # CRC/length trailer
    corrupt.write_bytes(bytes(blob))
    for path in (notgz, cut, corrupt):
        with pytest.raises(xmlsafe.SkipFile) as err:
            extract.extract_file(path, "x")
        assert err.value.reason == "bad_gzip", path


def test_gzip_members_padding_and_empty(tmp_path: Path) -> None:
    half = len(GOOD) // 2
    multi = tmp_path / "m.xhtml.gz"
    multi.write_bytes(
        gzip.compress(GOOD[:half]) + b"\x00" * 8 + gzip.compress(GOOD[half:]) + b"\x00" * 512
    )
    assert [p["statement_id"] for p in extract.extract_file(multi, "m").pairs] == ["S1", "S2"]
    assert xmlsafe.read_bounded(multi, 2**20) == GOOD
    trailing = tmp_path / "t.xhtml.gz"
    trailing.write_bytes(gzip.compress(GOOD) + b"garbage")
    empty = tmp_path / "e.xhtml.gz"
    empty.write_bytes(b"")
    for path, reason in ((trailing, "bad_gzip"), (empty, "empty")):
        with pytest.raises(xmlsafe.SkipFile) as err:
            extract.extract_file(path, "x")
        assert err.value.reason == reason


def test_too_large_plain_and_gzip_bomb(tmp_path: Path) -> None:
    big = tmp_path / "big.xhtml"
    big.write_bytes(GOOD + b" " * 20_000)
    with pytest.raises(xmlsafe.SkipFile) as err:
        extract.extract_file(big, "big", max_file_mb=0.01)
    assert err.value.reason == "too_large"
    bomb = tmp_path / "bomb.xhtml.gz"
    bomb.write_bytes(gzip.compress(b"<a>" + b" " * (64 * 2**20) + b"</a>", compresslevel=9))
    assert bomb.stat().st_size < 200_000
    tracemalloc.start()
    with pytest.raises(xmlsafe.SkipFile) as err:
        extract.extract_file(bomb, "bomb", max_file_mb=2)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert err.value.reason == "too_large" and "decompressed" in err.value.detail
    assert peak < 8 * 2**20  # read incrementally: never the whole 64 MB


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(xmlsafe.SkipFile) as err:
        extract.extract_file(tmp_path / "gone.xhtml", "gone")
    assert err.value.reason == "unreadable"


# ------------------------------------------------------------------------------------------
# many files: report, shards, CLI


def _mixed_corpus(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "good1.xhtml").write_bytes(GOOD)
    (root / "sub").mkdir()
    (root / "sub" / "good2.xhtml.gz").write_bytes(
        gzip.compress(arxmliv_doc(ax_thm("lemma", "A") + AX_PROOF))
    )
    (root / "good3.html").write_bytes(latexml_doc(lx_thm("theorem", None) + lx_proof()))
    (root / "nopairs.xhtml").write_bytes(latexml_doc(lx_thm("definition", "D")))
    (root / "empty.xhtml").write_bytes(b"")
    (root / "trunc.xhtml").write_bytes(GOOD[:200])
    (root / "badgz.xhtml.gz").write_bytes(b"not gzip")
    (root / "bin.xhtml").write_bytes(bytes(range(256)))
    return root


def test_extract_dir_report_and_cli(tmp_path: Path) -> None:
    root = _mixed_corpus(tmp_path / "c")
    out = tmp_path / "o" / "pairs.parquet"
    assert cli.main(["extract", str(root), "--out", str(out)]) == 0
    report = json.loads((tmp_path / "o" / "pairs.report.json").read_text())
    assert report["files_seen"] == 8 and report["files_ok"] == 4
    assert report["files_skipped"] == {"bad_gzip": 1, "binary": 1, "empty": 1, "truncated": 1}
    assert sorted(Path(s["path"]).name for s in report["skipped_files"]) == [
        "badgz.xhtml.gz",
        "bin.xhtml",
        "empty.xhtml",
        "trunc.xhtml",
    ]
    assert all(s["detail"] for s in report["skipped_files"])
    assert (
        report["pairs"] == 4 and report["articles_with_pairs"] == 3 and report["theorem_like"] == 5
    )
    assert report["kinds"] == {"lemma": 3, "theorem": 1}
    assert report["kind_sources"] == {"class": 5} and report["unknown_kind_titles"] == {}
    pairs = pd.read_parquet(out)
    assert list(pairs.columns) == extract.PAIR_COLUMNS
    assert sorted(zip(pairs["article_id"], pairs["statement_id"])) == [
        ("good1", "S1"),
        ("good1", "S2"),
        ("good2", "A"),
        ("good3", "p0"),
    ]


def test_kind_counts_merge_across_shards(tmp_path: Path) -> None:
    (tmp_path / "a.xhtml").write_bytes(
        ltx_thm_doc(ltx_thm("Théorème 1.") + LTX_PROOF + ltx_thm("Lemma 2.") + LTX_PROOF)
    )
    (tmp_path / "b.xhtml").write_bytes(
        ltx_thm_doc(ltx_thm("Théorème 3.") + LTX_PROOF + ltx_thm("Remark 4."))
    )
    reports = [extract.extract_files([(n, str(tmp_path / f"{n}.xhtml"))])[1] for n in ("a", "b")]
    merged = extract.merge_reports(reports)
    assert merged["kind_sources"] == {"title": 2, "unknown": 2}
    assert merged["unknown_kind_titles"] == {"théorème": 2}
    assert merged["kinds"] == {"unknown": 2, "lemma": 1}
    assert merged["theorem_like_kinds"] == {"unknown": 2, "lemma": 1, "remark": 1}


def test_cli_errors(tmp_path: Path) -> None:
    out = str(tmp_path / "p.parquet")
    assert cli.main(["extract", str(tmp_path / "missing"), "--out", out]) == 2
    (tmp_path / "emptydir").mkdir()
    assert cli.main(["extract", str(tmp_path / "emptydir"), "--out", out]) == 2
    assert cli.main(["extract", "--manifest", "m.parquet", "--out", out]) == 2
    assert (
        cli.main(
            ["extract", str(tmp_path), "--manifest", "m.parquet", "--shard", "0", "--out", out]
        )
        == 2
    )


def test_shards_union_equals_whole_and_empty_shard(tmp_path: Path) -> None:
    root = _mixed_corpus(tmp_path / "c")
    whole = tmp_path / "whole.parquet"
    whole_report = extract.extract_dir(root, whole)
    manifest, articles = tmp_path / "m.parquet", tmp_path / "a.parquet"
    corpus.write_manifest(root, 10, None, manifest, articles)  # 8 files: 2 empty shards
    reports, frames = [], []
    for k in range(10):
        out = tmp_path / f"shard-{k}.parquet"
        reports.append(extract.extract_shard(manifest, k, out, tmp_path / f"shard-{k}.report.json"))
        frames.append(pd.read_parquet(out))
    assert sum(len(f) == 0 for f in frames) >= 2
    assert all(list(f.columns) == extract.PAIR_COLUMNS for f in frames)
    union = pd.concat(frames).sort_values(["article_id", "position"], ignore_index=True)
    expected = pd.read_parquet(whole).sort_values(["article_id", "position"], ignore_index=True)
    pd.testing.assert_frame_equal(union, expected)
    merged = extract.merge_reports(reports)
    for key in (
        "files_seen",
        "files_ok",
        "files_skipped",
        "pairs",
        "theorem_like",
        "kinds",
        "kind_sources",
        "articles_with_pairs",
    ):
        assert merged[key] == whole_report[key], key
    # cli shard mode writes the same as the function
    assert (
        cli.main(
            [
                "extract",
                "--manifest",
                str(manifest),
                "--shard",
                "3",
                "--out",
                str(tmp_path / "cli.parquet"),
            ]
        )
        == 0
    )
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cli.parquet"), frames[3])
    assert (tmp_path / "cli.report.json").is_file()
    with pytest.raises(corpus.CorpusError, match="out of range"):
        extract.extract_shard(manifest, 10, tmp_path / "x.parquet", tmp_path / "x.json")


def test_internal_error_is_counted_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.xhtml").write_bytes(GOOD)
    (tmp_path / "b.xhtml").write_bytes(GOOD)
    real = statements.find_pairs

    def flaky(root, article_id, **kw):  # type: ignore[no-untyped-def]
        if article_id == "a":
            raise RuntimeError("boom")
        return real(root, article_id, **kw)

    monkeypatch.setattr(extract, "find_pairs", flaky)
    report = extract.extract_dir(tmp_path, tmp_path / "out.parquet")
    assert report["files_skipped"] == {"internal_error": 1} and report["pairs"] == 2
    assert report["skipped_files"][0]["detail"] == "RuntimeError: boom"


def test_cli_limits_from_config(tmp_path: Path, repo: Path) -> None:
    import yaml

    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    cfg["extract"] = {"max_file_mb": 0.001, "max_depth": 64}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.xhtml").write_bytes(GOOD + b" " * 2000)
    out = tmp_path / "p.parquet"
    assert (
        cli.main(
            [
                "extract",
                "--config",
                str(tmp_path / "cfg.yaml"),
                str(tmp_path / "c"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "p.report.json").read_text())
    assert report["files_skipped"] == {"too_large": 1} and report["max_depth"] == 64
    # an explicit flag wins over the config
    assert (
        cli.main(
            [
                "extract",
                str(tmp_path / "c"),
                "--config",
                str(tmp_path / "cfg.yaml"),
                "--max-file-mb",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "p.report.json").read_text())["pairs"] == 2


def test_html_unknown_charset_is_bad_encoding() -> None:
    doc = b'<html><head><meta charset="no-such-charset"><br></head><body><div class="theorem">x</div></body></html>'
    assert _reason(doc, allow_html=True) == "bad_encoding"


def test_statements_inside_formulas_are_not_searched() -> None:
    inner = f'<math xmlns="{MATHML}"><mtext><div class="ltx_theorem">in math</div><div class="ltx_proof">p</div></mtext></math>'
    pairs, res = _pairs(latexml_doc(f"<p>{inner}</p>" + lx_thm("lemma", "L") + lx_proof()))
    assert [p["statement_id"] for p in pairs] == ["L"] and sum(res.theorem_like_kinds.values()) == 1
