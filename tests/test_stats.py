"""Tables 1 and 2 on tiny hand-built frames, with numbers checked by hand: the statistics
(proofmatch.data.stats) and their layout and files (proofmatch.evaluation.tables)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from proofmatch.data.linearize import fragment_tokens
from proofmatch.data.stats import (
    corpus_stats,
    paper_counts,
    paper_tokens,
    token_counts,
    token_stats,
    token_stats_file,
)
from proofmatch.evaluation.dataset_tables import table1, table2, write_table1, write_table2
from proofmatch.result_tables import TABLES

XHTML = "http://www.w3.org/1999/xhtml"
MML = "http://www.w3.org/1998/Math/MathML"


def _math(*symbols: str, variant: str | None = None) -> str:
    font = f' mathvariant="{variant}"' if variant else ""
    return (
        f'<math xmlns="{MML}"><mrow>'
        + "".join(f"<mi{font}>{s}</mi>" for s in symbols)
        + "</mrow></math>"
    )


def _frag(inner: str, title: str | None = None) -> str:
    head = f'<h6 class="ltx_title">{title}</h6>' if title else ""
    return f'<div xmlns="{XHTML}" class="ltx_theorem">{head}{inner}</div>'


def _tokens(xml: str) -> list[str]:
    return fragment_tokens(xml)[0]


def test_paper_tokens_are_whitespace_words_and_math_symbols_titles_included():
    xml = _frag(
        f"<p>Let {_math('x', '=', '1')}, then f(x) holds for <em>all</em>x.</p>", title="Lemma 3.2."
    )
    toks = paper_tokens(xml, _tokens(xml))
    # the title is 2 tokens, punctuation stays on its word, each text node splits on its own
    assert toks == [
        "Lemma",
        "3.2.",
        "Let",
        "$x",
        "$=",
        "$1",
        ",",
        "then",
        "f(x)",
        "holds",
        "for",
        "all",
        "x.",
    ]
    assert len(_tokens(xml)) > len(toks)  # the typed tokens split punctuation off
    # a statement's lone full stops at its ends go (reference: .strip(" .")), a proof's stay
    ends = _frag(f"<p>. Let {_math('x')} . </p><p>{_math('.')}</p>")
    assert paper_tokens(ends, _tokens(ends), statement=True) == ["Let", "$x"]
    assert paper_tokens(ends, _tokens(ends)) == [".", "Let", "$x", ".", "$."]
    bold = _frag(f"<p>Let {_math('.', variant='bold')}</p>")  # ".____bold" survives the strip
    assert paper_tokens(bold, _tokens(bold), statement=True) == ["Let", "$.~bold"]


def test_paper_tokens_reject_tokens_that_do_not_belong_to_the_xml():
    xml = _frag(f"<p>Let {_math('x')} be.</p>")
    with pytest.raises(ValueError, match="stale"):
        paper_tokens(xml, _tokens(xml) + ["extra"])
    with pytest.raises(ValueError, match="stale"):
        paper_tokens(xml, ["Let", "$y", "$z", "be", "."][::-1])
    with pytest.raises(ValueError, match="side"):
        paper_counts(pd.DataFrame(), "title")


def test_token_counts_skip_titles_and_count_words():
    tokens = pd.Series(
        [["Lemma", "1", ".", "Let", "$x", "$=", "$y~bold", "."], [], None, ["$", "x"]]
    )
    c = token_counts(tokens, pd.Series([3, 0, 0, 0]))
    assert c.to_dict("list") == {"text": [2, 0, 0, 2], "math": [3, 0, 0, 0], "words": [1, 0, 0, 1]}
    # a lone "$" is text (tokens.is_math), Unicode letters are words
    assert token_counts(pd.Series([["$", "ж", "é", "-"]]))["words"].tolist() == [2]
    with pytest.raises(ValueError, match="title length"):
        token_counts(pd.Series([["a"]]), pd.Series([2]))


def _pair(text: int, math: int, title: str | None = None) -> str:
    """A fragment with ``text`` whitespace words (plus the title's) and ``math`` symbols."""
    words = " ".join(["w."] * text)
    formula = _math(*["y"] * math) if math else ""
    return _frag(f"<p>{words} {formula}</p>", title)


def _pairs() -> pd.DataFrame:
    # statements (text, math) = (2, 2), (4, 0), (1, 3); proofs (3, 1), (2, 2), (5, 5); titles count
    st = [_pair(0, 2, "Lemma 1."), _pair(4, 0), _pair(1, 3)]
    pr = [_pair(2, 1, "Proof."), _pair(2, 2), _pair(5, 5)]
    return pd.DataFrame(
        {
            "pair_id": ["a1/1", "a1/2", "a2/1"],
            "article_id": ["a1", "a1", "a2"],
            "statement_xml": st,
            "proof_xml": pr,
            "statement_tokens": [_tokens(x) for x in st],
            "proof_tokens": [_tokens(x) for x in pr],
            "statement_title_tokens": [fragment_tokens(x)[1] for x in st],
            "proof_title_tokens": [fragment_tokens(x)[1] for x in pr],
        }
    )


def test_table2_numbers():
    pairs = _pairs()
    assert paper_counts(pairs, "statement").to_dict("list") == {
        "text": [2, 4, 1],
        "math": [2, 0, 3],
    }
    assert (
        len(pairs["statement_tokens"][1]) == 8
    )  # typed tokens: "w" and "." each; not what Table 2 counts
    num = token_stats(pairs).set_index(["part", "measure"])
    st_total = num.loc[("Statements", "Text+math")]
    assert (st_total["min"], st_total["max"], st_total["n"]) == (4, 4, 3)
    assert st_total["mean"] == 4 and st_total["sd"] == 0
    st_math = num.loc[("Statements", "Math only")]
    assert (st_math["min"], st_math["max"]) == (0, 3)
    assert st_math["mean"] == pytest.approx(5 / 3)
    assert st_math["sd"] == pytest.approx(np.std([2, 0, 3]))
    pct = num.loc[("Statements", "Math proportion")]
    assert (pct["min"], pct["max"], pct["mean"]) == (0, 75, pytest.approx((50 + 0 + 75) / 3))
    pr_total = num.loc[("Proofs", "Text+math")]
    assert (pr_total["min"], pr_total["max"], pr_total["mean"]) == (4, 10, 6)
    assert num.loc[("Proofs", "Text only"), "max"] == 5

    shown = table2(token_stats(_pairs()))
    assert shown.columns.tolist() == ["part", "tokens", "min", "max", "mean ± SD"]
    first = shown.iloc[0].tolist()
    assert first == ["Statements", "Text+math", "4", "4", "4.0 ± 0.0"]
    assert shown.iloc[3].tolist()[2:4] == ["0.0%", "75.0%"]


def _corpus():
    manifest = pd.DataFrame(
        {
            "article_id": ["a1", "a2", "a3", "a4", "a5"],
            "path": ["p"] * 5,
            "bytes": [1] * 5,
            "shard": [0] * 5,
        }
    )
    articles = pd.DataFrame(
        {
            "article_id": ["a1", "a2", "a3", "a4", "a5"],
            "title": ["t"] * 5,
            "categories": [
                ["math.PR", "math.ST"],
                ["math.AG"],
                ["math.PR"],
                ["math.CO", "cs.DM", "math.PR"],
                ["math.AG"],
            ],
            "primary_category": ["math.PR", "math.AG", "math.PR", "math.CO", "math.AG"],
        }
    )
    pairs = pd.DataFrame({"article_id": ["a1", "a1", "a2", "a3", "a3", "a3", "a4"]})
    return manifest, articles, pairs


def test_table1_numbers():
    manifest, articles, pairs = _corpus()
    s = corpus_stats(manifest, articles, pairs)
    assert (s.articles, s.articles_with_pairs, s.pairs, s.primary_categories, s.categories) == (
        5,
        4,
        7,
        3,
        5,
    )
    assert s.top_categories.to_dict("list") == {
        "category": ["math.PR", "math.AG", "math.CO"],
        "articles": [2, 1, 1],
        "pairs": [5, 1, 1],
    }
    t = table1(s)
    values = dict(zip(t["statistic"], t["value"]))
    assert values["Number of articles in the corpus"] == 5
    assert values["Articles with statement-proof pairs"] == 4  # a5 has no pair after filtering
    assert values["Total number of statement-proof pairs"] == 7
    assert values["Number of (primary) categories"] == "(3) 5"  # PR, AG, CO; + ST, cs.DM
    assert values["Average number of categories per article"] == pytest.approx((2 + 1 + 1 + 3) / 4)
    cats = t.iloc[6:]
    assert cats["statistic"].tolist() == [
        "math.PR Probability",
        "math.AG Algebraic Geometry",
        "math.CO Combinatorics",
    ]
    assert cats["value"].tolist() == [2, 1, 1] and cats["pairs"].tolist() == [5, 1, 1]
    assert len(table1(corpus_stats(manifest, articles, pairs, top=1))) == 7


def test_table1_rejects_pairs_of_unknown_articles():
    manifest, articles, pairs = _corpus()
    with pytest.raises(ValueError, match="not in the articles table"):
        corpus_stats(manifest, articles.iloc[1:], pairs)


def test_writers_and_cli(tmp_path, capsys):
    from proofmatch.cli import main

    manifest, articles, pairs = _corpus()
    full = _pairs()
    write_table1(manifest, articles, pairs, tmp_path / "t1")
    write_table2(full, tmp_path / "t2")
    for name in ("t1", "t2"):
        for ext in ("md", "tex", "csv"):
            assert (tmp_path / f"{name}.{ext}").stat().st_size > 0
    assert "Probability" in (tmp_path / "t1.md").read_text()
    assert pd.read_csv(tmp_path / "t2.csv")["mean ± SD"].iloc[0] == "4.0 ± 0.0"
    assert "whitespace-separated words" in TABLES["table2"].caption
    assert "whitespace-separated words" in (tmp_path / "t2.tex").read_text()

    manifest.to_parquet(tmp_path / "manifest.parquet")
    articles.to_parquet(tmp_path / "articles.parquet")
    full.assign(article_id=["a1", "a1", "a3"]).to_parquet(tmp_path / "pairs.parquet")
    rc = main(
        [
            "stats",
            "--manifest",
            str(tmp_path / "manifest.parquet"),
            "--articles",
            str(tmp_path / "articles.parquet"),
            "--pairs",
            str(tmp_path / "pairs.parquet"),
            "--table1",
            str(tmp_path / "c1"),
            "--table2",
            str(tmp_path / "c2"),
        ]
    )
    assert rc == 0
    t1 = pd.read_csv(tmp_path / "c1.csv", dtype=str)
    assert t1.iloc[2].tolist()[:2] == ["Total number of statement-proof pairs", "3"]
    assert (tmp_path / "c2.tex").read_text().startswith("\\begin{table}")
    assert (
        main(["stats", "--pairs", str(tmp_path / "pairs.parquet"), "--table1", str(tmp_path / "x")])
        == 2
    )


def test_table2_from_a_file_is_read_in_batches_and_equals_the_frame(tmp_path):
    """write_table2 on a path reads four columns a batch at a time (token_stats_file): the same
    numbers as on the whole frame, and a file without the XML columns raises."""
    full = _pairs()
    full.assign(unused="x").to_parquet(tmp_path / "pairs.parquet")
    pd.testing.assert_frame_equal(
        token_stats_file(tmp_path / "pairs.parquet", batch_rows=1), token_stats(full)
    )
    write_table2(tmp_path / "pairs.parquet", tmp_path / "from_file")
    write_table2(full, tmp_path / "from_frame")
    assert (tmp_path / "from_file.md").read_text() == (tmp_path / "from_frame.md").read_text()
    full.drop(columns=["proof_xml"]).to_parquet(tmp_path / "no_xml.parquet")
    with pytest.raises(ValueError, match="lacks columns"):
        token_stats_file(tmp_path / "no_xml.parquet")
