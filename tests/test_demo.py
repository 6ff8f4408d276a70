"""Tests of the demo corpus generator: determinism, size, markup, hostile files, difficulty."""

from __future__ import annotations

import csv
import gzip
import random
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from proofmatch import cli
from proofmatch.data import extract, linearize, statements
from proofmatch.data.views import text_tokens
from proofmatch.demo import article, hostile, markup, plan, templates
from proofmatch.demo import generate as demo
from proofmatch.texmath.convert import render_math
from proofmatch.texmath.dialects import DIALECTS
from proofmatch.texmath.lexer import TexError
from proofmatch.texmath.parse import parse_tex

MATHML = "http://www.w3.org/1998/Math/MathML"
XHTML = "http://www.w3.org/1999/xhtml"
SAFE = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
NAMED = {b"&nbsp;": b"&#160;", b"&InvisibleTimes;": b"&#x2062;", b"&ApplyFunction;": b"&#x2061;"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default demo corpus (72 articles, seed 7), generated once for the module."""
    out = tmp_path_factory.mktemp("demo")
    demo.generate(out)
    return out


@pytest.fixture(scope="module")
def parsed(corpus: Path) -> list[tuple[dict[str, str], etree._Element]]:
    """Every regular article, parsed once, without its TeX and Content MathML annotations, so
    that ``itertext`` gives running text with formulas reduced to presentation leaves."""
    out = []
    for row in _regular(corpus):
        root = _parse(_bytes(corpus, row))
        etree.strip_elements(
            root, f"{{{MATHML}}}annotation", f"{{{MATHML}}}annotation-xml", with_tail=False
        )
        out.append((row, root))
    return out


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / "metadata.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _regular(out: Path) -> list[dict[str, str]]:
    return [r for r in _rows(out) if not r["article_id"].startswith("demo-bad-")]


def _bytes(out: Path, row: dict[str, str]) -> bytes:
    data = (out / row["file"]).read_bytes()
    return gzip.decompress(data) if row["file"].endswith(".gz") else data


def _parse(data: bytes) -> etree._Element:
    for name, ref in NAMED.items():  # the few articles that use the MathML DTD's entity names
        data = data.replace(name, ref)
    return etree.fromstring(data, etree.XMLParser(**SAFE))


def _classes(el: etree._Element) -> list[str]:
    return (el.get("class") or "").split()


def _is_statement(el: etree._Element) -> bool:
    cls = _classes(el)
    return "ltx_theorem" in cls or (bool(cls) and cls[0] == "theorem")


def _next_element(el: etree._Element) -> etree._Element | None:
    nxt = el.getnext()
    while nxt is not None and not isinstance(nxt.tag, str):
        nxt = nxt.getnext()
    return nxt


_STATEMENTS = etree.XPath(
    "//*[contains(concat(' ', @class, ' '), ' ltx_theorem ') or starts-with(concat(@class, ' '), 'theorem ')]"
)
_PROOFS = etree.XPath("//*[contains(concat(' ', @class, ' '), ' ltx_proof ') or @class = 'proof']")


def _pairs(root: etree._Element) -> list[tuple[etree._Element, etree._Element]]:
    out = []
    for el in _STATEMENTS(root):
        if _is_statement(el):
            nxt = _next_element(el)
            if nxt is not None and {"ltx_proof", "proof"} & set(_classes(nxt)):
                out.append((el, nxt))
    return out


def _leaves(math_xml: str) -> list[str]:
    """Texts of the presentation leaves (mi/mn/mo) of a rendered formula, annotations dropped."""
    pres = re.sub(r"<(m:)?annotation(-xml)?\b.*?</(m:)?annotation(-xml)?>", "", math_xml)
    return re.findall(r"<(?:m:)?m[ino]\b[^>]*>([^<]*)</(?:m:)?m[ino]>", pres)


# --------------------------------------------------------------------------------------------
# determinism and the CLI


def test_same_seed_gives_identical_bytes(corpus: Path, tmp_path: Path) -> None:
    demo.generate(tmp_path)
    names = sorted(p.name for p in (corpus / "xhtml").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "xhtml").iterdir())
    for name in names:
        assert (corpus / "xhtml" / name).read_bytes() == (tmp_path / "xhtml" / name).read_bytes(), (
            name
        )
    assert (corpus / "metadata.csv").read_bytes() == (tmp_path / "metadata.csv").read_bytes()


def test_other_seed_gives_other_articles(corpus: Path, tmp_path: Path) -> None:
    demo.generate(tmp_path, n_articles=12, seed=8)
    first = _regular(corpus)[0]
    assert _bytes(corpus, first) != _bytes(tmp_path, _regular(tmp_path)[0])


def test_cli_writes_corpus_and_removes_stale_files(tmp_path: Path) -> None:
    demo.generate(tmp_path, n_articles=13, seed=3)
    assert list((tmp_path / "xhtml").glob("demo-0013.*"))
    assert cli.main(["demo", str(tmp_path), "--articles", "12", "--seed", "3"]) == 0
    rows = _rows(tmp_path)
    assert len(rows) == 12 + len(hostile.HOSTILE)
    assert not list((tmp_path / "xhtml").glob("demo-0013.*"))  # from the earlier, larger run
    on_disk = sorted(p.name for p in (tmp_path / "xhtml").iterdir())
    assert on_disk == sorted(Path(r["file"]).name for r in rows)


def test_cli_rejects_too_few_articles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["demo", str(tmp_path / "out"), "--articles", "5"]) == 2
    assert "at least 12" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------
# size and composition


def test_metadata_lists_every_file_once(corpus: Path) -> None:
    rows = _rows(corpus)
    assert list(rows[0]) == list(demo.METADATA_COLUMNS)
    ids = [r["article_id"] for r in rows]
    assert len(ids) == len(set(ids))
    on_disk = sorted(p.name for p in (corpus / "xhtml").iterdir())
    assert on_disk == sorted(Path(r["file"]).name for r in rows)
    for r in rows:
        assert r["file"] == f"xhtml/{Path(r['file']).name}"
        assert r["title"].strip()
        assert r["categories"].split()[0] == r["primary_category"]


def test_articles_and_categories(corpus: Path) -> None:
    regular = _regular(corpus)
    assert len(regular) >= 60
    primaries = Counter(r["primary_category"] for r in regular)
    assert len(primaries) >= 6 and primaries["math.PR"] >= 10, primaries
    assert sum(len(r["categories"].split()) > 1 for r in regular) >= 20  # cross-listed articles


def test_statement_proof_pairs_and_unproved_statements(parsed: list) -> None:
    pairs = 0
    kinds_unproved: Counter = Counter()
    articles_without_pairs = 0
    for _, root in parsed:
        found = _pairs(root)
        pairs += len(found)
        articles_without_pairs += not found
        paired = {id(s) for s, _ in found}
        for el in _STATEMENTS(root):
            if id(el) not in paired:
                kinds_unproved[statements.statement_kind(el)[0]] += 1
    assert pairs >= 1500
    assert articles_without_pairs == 1  # the survey article
    for kind in ("definition", "remark", "example", "lemma"):
        assert kinds_unproved[kind] > 0, kinds_unproved


# --------------------------------------------------------------------------------------------
# markup


def test_three_dialects_and_both_file_kinds(corpus: Path) -> None:
    regular = _regular(corpus)
    assert {Path(r["file"]).suffix for r in regular} == {".xhtml", ".gz"}
    texts = {r["article_id"]: _bytes(corpus, r).decode("utf-8") for r in regular}
    latexml = [t for t in texts.values() if 'class="ltx_theorem ltx_theorem_' in t]
    ltx_thm = [t for t in texts.values() if 'class="theorem ltx_thm"' in t]
    arxmliv = [
        t for t in texts.values() if 'class="theorem ' in t and 'class="theorem ltx_thm"' not in t
    ]
    assert len(latexml) >= 20 and len(arxmliv) >= 10 and len(ltx_thm) >= 10
    joined = "".join(latexml)
    for needle in (
        'class="ltx_title ltx_runin ltx_title_theorem"',
        'class="ltx_tag ltx_tag_theorem"',
        '<div class="ltx_proof">',
        ">Proof.</h6>",
        "∎",
        'alttext="',
        'xref="',
        '<annotation-xml encoding="MathML-Content">',
        '<annotation encoding="application/x-tex">',
        ">ℝ</mi>",
        "ltx_font_mathcaligraphic",
        "𝐀</mi>",
        'class="ltx_equation ltx_eqn_table"',
        'class="ltx_tag ltx_tag_equation',
    ):
        assert needle in joined, needle
    joined = "".join(arxmliv)
    for needle in (
        '<div class="proof">',
        "<m:math ",
        "<m:semantics>",
        'mathvariant="bold"',
        'mathvariant="double-struck"',
        'mathvariant="script"',
        'encoding="MathML-Presentation"',
        "&nbsp;",
        "&InvisibleTimes;",
    ):
        assert needle in joined, needle
    assert "alttext" not in joined and "application/x-tex" not in joined
    # content MathML only: directly under m:math, or alone in m:semantics
    assert re.search(r'<m:math display="\w+" id="[^"]+"><m:(apply|ci|cn)\b', joined)
    assert re.search(r'<m:semantics><m:annotation-xml encoding="MathML-Content">', joined)
    # 2011 arXMLiv as real articles have it: the kind only in the title, MathML in a default
    # namespace with presentation, Content MathML and TeX, every statement "theorem ltx_thm"
    joined = "".join(ltx_thm)
    for needle in (
        '<h6 class="title bold theorem-title">',
        '<div class="proof">',
        '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline" id="',
        '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block" id="',
        "<semantics><mrow>",
        '</mrow><annotation-xml encoding="MathML-Content">',
        '</annotation-xml><annotation encoding="application/x-tex">',
        'mathvariant="double-struck"',
    ):
        assert needle in joined, needle
    assert "<m:" not in joined and "xmlns:m=" not in joined and "alttext" not in joined
    assert not re.search(r'class="theorem (?!ltx_thm")', joined)  # no statement names its kind


def test_ltx_thm_articles_take_their_kinds_from_titles(corpus: Path) -> None:
    rows = [r for r in _regular(corpus) if b'class="theorem ltx_thm"' in _bytes(corpus, r)]
    items = [(r["article_id"], str(corpus / r["file"])) for r in rows]
    pairs, report = extract.extract_files(items)
    assert report["kind_sources"]["title"] == report["theorem_like"] - report["kind_sources"].get(
        "unknown", 0
    )
    assert set(report["theorem_like_kinds"]) >= {
        "lemma",
        "theorem",
        "definition",
        "remark",
        "example",
    }
    # only the non-English articles have titles that name no known kind (Théorème, Lemme...)
    foreign = {f"demo-{i + 1:04d}" for i in article.FOREIGN}
    english = {r["article_id"] for r in rows} - foreign
    frame = pairs.to_pandas()
    assert (
        english
        and (frame.loc[frame["article_id"].isin(english), "kind"] != statements.UNKNOWN_KIND).all()
    )
    words = {
        w.lower()
        for lang in ("fr", "de", "ru")
        for w in templates.load_language(lang)["kinds"].values()
    }
    assert report["kind_sources"]["unknown"] > 0 and set(report["unknown_kind_titles"]) <= words


def test_one_article_reads_the_same_in_every_markup() -> None:
    """The same planned article in LaTeXML and in real 2011 arXMLiv markup: the same pairs, kinds
    and tokens (the proofs end in ∎ and □); the inferred arXMLiv markup gives the same text."""
    base = article.article_specs(12, 7)[article.ARXMLIV_LTX_INDEX]
    assert base.dialect == "arxmliv_ltx" and base.lang == "en"
    read = {}
    for dialect in DIALECTS:
        spec = article.Spec(**{**base.__dict__, "dialect": dialect})
        data = markup.render_article(plan.plan_article(spec, 7)).encode("utf-8")
        res = extract.extract_bytes(data, spec.article_id)
        lin = linearize.linearize_frame(extract.pairs_table(res.pairs).to_pandas())
        read[dialect] = (res, lin)
    (lx, lx_lin), (ltx, ltx_lin), (ax, ax_lin) = (
        read["latexml"],
        read["arxmliv_ltx"],
        read["arxmliv"],
    )
    assert (
        len(lx.pairs) >= 16
        and ltx.theorem_like_kinds == lx.theorem_like_kinds == ax.theorem_like_kinds
    )
    assert [p["kind"] for p in ltx.pairs] == [p["kind"] for p in lx.pairs]
    assert ltx.kind_sources == {"title": sum(ltx.theorem_like_kinds.values())}
    assert list(ltx_lin["statement_tokens"].map(list)) == list(lx_lin["statement_tokens"].map(list))
    qed = {"∎": "□"}
    lx_proofs = [[qed.get(t, t) for t in toks] for toks in lx_lin["proof_tokens"]]
    assert list(ltx_lin["proof_tokens"].map(list)) == lx_proofs
    text_only = [[t for t in toks if not t.startswith("$")] for toks in ax_lin["statement_tokens"]]
    assert text_only == [
        [t for t in toks if not t.startswith("$")] for toks in ltx_lin["statement_tokens"]
    ]


def test_latexml_ids_are_unique_and_xrefs_resolve(corpus: Path) -> None:
    checked = 0
    for row in _regular(corpus)[:10]:
        root = _parse(_bytes(corpus, row))
        if not root.xpath('//*[@class="ltx_page_main"]'):
            continue  # arXMLiv: no inner ids
        checked += 1
        ids = [e.get("id") for e in root.iter(etree.Element) if e.get("id")]
        assert len(ids) == len(set(ids)), row["article_id"]
        known = set(ids)
        refs = [e.get("xref") for e in root.iter(etree.Element) if e.get("xref")]
        assert refs and all(r in known for r in refs), row["article_id"]
    assert checked >= 4


def test_probability_articles_use_protected_symbols(corpus: Path) -> None:
    pr = [r for r in _regular(corpus) if r["primary_category"] == "math.PR"]
    text = "".join(_bytes(corpus, r).decode("utf-8") for r in pr)
    for symbol in ("P", "E", "V", "σ", "ρ"):
        assert re.search(rf"<(m:)?mi\b[^>]*>{symbol}</(m:)?mi>", text), symbol
    # the article's own notation never takes a protected symbol
    roles = templates.load_language("en")["categories"]["math.PR"]["roles"]
    assert not {"P", "E", "V", "\\sigma", "\\rho"} & {c for cands in roles.values() for c in cands}


# --------------------------------------------------------------------------------------------
# work for every filter and every skip counter


def test_material_for_every_pair_filter(parsed: list) -> None:
    langs: Counter = Counter()
    proofs: list[str] = []
    title_only_statements = title_only_proofs = long_proofs = detached_proofs = 0
    for _, root in parsed:
        langs[root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang")] += 1
        for statement, proof in _pairs(root):
            text = " ".join("".join(p.itertext()) for p in proof.iter(f"{{{XHTML}}}p")).strip()
            proofs.append(" ".join(text.split()))
            title_only_statements += all(etree.QName(c).localname == "h6" for c in statement)
            title_only_proofs += text in ("∎", "□")
            long_proofs += len(text_tokens(text)) > 500
        for el in _PROOFS(root):
            prev = el.getprevious()
            detached_proofs += prev is not None and not _is_statement(prev)
    assert langs["en"] >= 60 and min(langs["fr"], langs["de"], langs["ru"]) >= 1, langs
    for phrase in (
        "Omitted.",
        "Trivial.",
        "This is obvious and will be left to the reader.",
        "See Appendix A.",
        "The proof will appear elsewhere.",
        "This follows immediately from",
    ):
        assert any(p.startswith(phrase) for p in proofs), phrase
    assert any(re.match(r"See \[[^\]]+, \w+ \d+\.\d+\]\.", p) for p in proofs)
    assert title_only_statements >= 3 and title_only_proofs >= 1 and detached_proofs >= 3
    assert long_proofs >= 10


def test_hostile_files_fail_as_designed(corpus: Path) -> None:
    rows = {r["article_id"]: r for r in _rows(corpus) if r["article_id"].startswith("demo-bad-")}
    assert set(rows) == {f"demo-bad-{k}" for k in hostile.HOSTILE}
    raw = {k: (corpus / rows[f"demo-bad-{k}"]["file"]).read_bytes() for k in hostile.HOSTILE}
    assert raw["empty"] == b""
    assert b"\x00" in raw["binary"]
    with pytest.raises(EOFError):
        gzip.decompress(raw["truncated-gz"])
    with pytest.raises(gzip.BadGzipFile):
        gzip.decompress(raw["not-gzip"])
    with pytest.raises(UnicodeDecodeError):
        raw["latin1"].decode("utf-8")
    for kind in ("latin1", "truncated", "malformed", "deep", "entity-bomb"):
        with pytest.raises(etree.XMLSyntaxError):
            etree.fromstring(raw[kind], etree.XMLParser(**SAFE))


def test_extraction_counts_every_skip_reason(corpus: Path) -> None:
    from proofmatch.data import extract

    items = sorted(
        (r["article_id"], str(corpus / r["file"]))
        for r in _rows(corpus)
        if r["article_id"].startswith("demo-bad-")
    )
    pairs, report = extract.extract_files(items)
    assert report["files_ok"] == 0 and len(pairs) == 0
    assert report["files_skipped"] == {
        "bad_gzip": 2,
        "bad_encoding": 1,
        "binary": 1,
        "empty": 1,
        "entity_expansion": 1,
        "malformed": 1,
        "too_deep": 1,
        "truncated": 1,
    }


# --------------------------------------------------------------------------------------------
# the TeX subset -> MathML


def test_tex_renders_in_both_dialects() -> None:
    tex = r"E|X| < \infty"
    latexml = render_math(tex, "S1.p1.m1", "latexml", False)
    assert _leaves(latexml) == [
        "E",
        "\u2062",
        "|",
        "X",
        "|",
        "&lt;",
        "∞",
    ]  # E, invisible times, |X|
    assert 'alttext="E|X| &lt; \\infty"' in latexml and "<lt " in latexml and "<abs/>" in latexml
    arx = render_math(tex, "p1.m1", "arxmliv", False)
    assert arx.startswith('<m:math display="inline" id="p1.m1"><m:semantics>') and _leaves(
        arx
    ) == _leaves(latexml)
    assert _leaves(render_math(r"\mathbb{R}^{n}", "m", "latexml", False)) == ["ℝ", "n"]
    assert 'mathvariant="double-struck">R<' in render_math(r"\mathbb{R}", "m", "arxmliv", False)
    pure = render_math(r"\mathbb{R}", "m", "arxmliv", False, "pure_content")
    assert pure == '<m:math display="inline" id="m"><m:ci>ℝ</m:ci></m:math>'
    display = render_math(r"\sum_{i = 1}^{n} a_{i}", "m", "latexml", True)
    assert "<munderover>" in display and 'display="block"' in display
    assert "<annotation encoding" not in render_math("0", "m", "latexml", False)  # LaTeXML quirk
    with pytest.raises(TexError):
        parse_tex(r"\unknowncommand x")


def test_every_template_formula_renders() -> None:
    """Guards edits of demo_data: every formula, in every notation, in every MathML form, is
    well-formed MathML with as many presentation leaves in both dialects and whose
    Content MathML (when the form has it) is non-empty."""
    rng = random.Random(0)
    wrap = f'<r xmlns:m="{MATHML}">{{}}</r>'  # arXMLiv's m: prefix is declared on the article
    checked = 0
    for lang in templates.LANGUAGES:
        for cat in templates.load_language(lang)["categories"].values():
            for key in ("facts", "intros", "steps", "displays"):
                for template in cat[key]:
                    for _ in range(3):
                        notation = {role: rng.choice(cands) for role, cands in cat["roles"].items()}
                        text = templates.substitute_roles(
                            templates.choose_alternatives(template, rng), notation
                        )
                        formulas = [text] if key == "displays" else re.findall(r"\$([^$]+)\$", text)
                        for i, tex in enumerate(formulas):
                            latexml = render_math(tex, f"m{i}", "latexml", False)
                            root = etree.fromstring(latexml)
                            assert root.tag == f"{{{MATHML}}}math" and root.get("id") == f"m{i}", (
                                tex
                            )
                            leaves = _leaves(latexml)
                            assert leaves, tex
                            for form in (
                                "parallel",
                                "content_first",
                                "content_annotation",
                                "pure_content",
                            ):
                                arx = render_math(tex, f"m{i}", "arxmliv", False, form)
                                (math,) = etree.fromstring(wrap.format(arx))
                                assert (
                                    math.tag == f"{{{MATHML}}}math" and math.get("id") == f"m{i}"
                                ), (tex, form)
                                content = math.xpath(
                                    ".//m:ci | .//m:cn | .//m:csymbol", namespaces={"m": MATHML}
                                )
                                assert content, (tex, form)
                                if (
                                    form == "parallel"
                                ):  # the same symbols, up to how a variant is written
                                    assert len(_leaves(arx)) == len(leaves), (tex, form)
                            checked += 1
    assert checked > 500, checked


# --------------------------------------------------------------------------------------------
# difficulty


@pytest.mark.slow
def test_tfidf_baseline_is_hard_but_not_hopeless(corpus: Path) -> None:
    """TF-IDF statement->proof MRR on the kept pairs, 10% held out: real corpora give ~32."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from proofmatch.data import corpus as corpus_mod
    from proofmatch.data import extract, filter_rules, linearize, listing

    paths = listing.list_articles(corpus / "xhtml")
    ids = corpus_mod.assign_article_ids(paths, corpus_mod.read_metadata(corpus / "metadata.csv"))
    pairs, report = extract.extract_files(sorted(zip(ids, map(str, paths))))
    assert report["pairs"] >= 1500
    lin = linearize.linearize_frame(pairs.to_pandas())
    verdict, _ = filter_rules.classify(lin)
    reasons = Counter(verdict["reason"].dropna())
    for reason in ("language", "too_short", "too_long"):
        assert reasons[reason] > 0, reasons
    examples = Counter(verdict["example"].dropna())  # the paper's examples of too-short pairs
    for example in ("title_only", "omitted", "reference_only"):
        assert examples[example] > 0, examples
    kept = lin[verdict["reason"].isna().to_numpy()]
    statements = [" ".join(t) for t in kept["statement_tokens"]]
    proofs = [" ".join(t) for t in kept["proof_tokens"]]
    vec = TfidfVectorizer(token_pattern=r"\S+", lowercase=False).fit(statements + proofs)
    mrrs = []
    for rep in range(3):
        idx = random.Random(rep).sample(range(len(kept)), len(kept) // 10)
        sim = (
            vec.transform([statements[i] for i in idx]) @ vec.transform([proofs[i] for i in idx]).T
        ).toarray()
        rank = (sim > np.diag(sim)[:, None]).sum(axis=1) + 1
        mrrs.append(100 * float(np.mean(1.0 / rank)))
    assert 20 <= np.mean(mrrs) <= 60, mrrs
