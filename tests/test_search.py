"""proofmatch index / search: parity with evaluation, queries, identity, sanitizing, TF-IDF/BM25, FAISS."""

from __future__ import annotations

import json
import os
import shutil
import stat

import numpy as np
import pandas as pd
import pytest
from searchdata import hostile_row

from proofmatch import cli
from proofmatch.data.splits import read_part
from proofmatch.decoding.local import local_decode
from proofmatch.scoring.lexical import bm25_scorer, tfidf_scorer
from proofmatch.scoring.tokens import token_lists
from proofmatch.search import query as Q
from proofmatch.search.build import build_index
from proofmatch.search.display import fragment_text, safe_html
from proofmatch.search.explain import explain
from proofmatch.search.folder import files_digest
from proofmatch.search.index import SearchIndex, top_order

pytestmark = pytest.mark.usefixtures("one_thread")


# ----------------------------------------------------------------------------- parity with evaluate


def test_id_search_returns_evaluations_topk_lists(search_demo, search_index):
    """Every test statement searched by id among the test proofs: evaluate's top-10, same order."""
    ev = pd.read_parquet(search_demo["eval"])
    assert len(ev) > 100
    for pid, ids, scores in zip(ev["pair_id"], ev["topk_ids"], ev["topk_scores"]):
        q, hits = search_index.search(pid, k=10, part="test")
        assert q.kind == "id"
        assert [h.pair_id for h in hits] == list(ids[:10]), pid
        np.testing.assert_allclose([h.score for h in hits], scores[:10], rtol=1e-6)
        assert [h.rank for h in hits] == list(range(1, 11))


def test_paging_and_all_parts(search_index):
    pid = str(search_index.table.loc[search_index.table["part"] == "test", "pair_id"].iloc[0])
    _, first = search_index.search(pid, k=10)
    _, second = search_index.search(pid, k=5, offset=5)
    assert [h.pair_id for h in second] == [h.pair_id for h in first[5:]]
    assert [h.rank for h in second] == [6, 7, 8, 9, 10]
    S = search_index.scores(search_index.parse(pid))
    assert len(S) == search_index.n == sum(search_index.meta["part_sizes"].values())
    assert first[0].score == pytest.approx(float(S.max()), rel=1e-6)
    with pytest.raises(Q.QueryError, match="results 1-1000"):
        search_index.search(pid, k=10, offset=995)
    with pytest.raises(Q.QueryError, match="part 'nope'"):
        search_index.search(pid, part="nope")


def test_top_order_puts_gold_after_ties_like_decode():
    rng = np.random.default_rng(0)
    S = rng.integers(0, 4, size=(7, 7)).astype(np.float32)  # many ties
    local = local_decode(lambda a, b: S[a:b], 7, 5, progress=False)
    for i in range(7):
        assert top_order(S[i], 5, gold=i).tolist() == local.topk_idx[i].tolist()


# ----------------------------------------------------------------------------- queries


def test_tex_text_of_a_statement_gives_its_training_tokens(search_demo):
    """A LaTeXML statement written as text with its formulas' TeX between $ tokenizes exactly as
    the linearizer tokenized the stored statement."""
    pairs = pd.read_parquet(search_demo["pairs"])
    latexml = pairs[
        pairs["statement_xml"].str.contains("alttext")
        & ~pairs["statement_xml"].str.contains("m:math")
    ]
    assert len(latexml) > 50
    for xml, tokens in zip(latexml["statement_xml"].head(60), latexml["statement_tokens"].head(60)):
        q = Q.parse_query(fragment_text(xml))
        assert q.kind == "tex" and q.tokens == list(tokens)
        assert set(q.converters) <= {"texmath"}


def test_xhtml_query_scores_like_its_id(search_demo, search_index):
    row = search_index.table[search_index.table["part"] == "test"].iloc[3]
    xml = (
        pd.read_parquet(search_demo["pairs"])
        .set_index("pair_id")
        .loc[row["pair_id"], "statement_xml"]
    )
    q_x, by_xml = search_index.search(xml, k=10, part="test")
    _, by_id = search_index.search(row["pair_id"], k=10, part="test")
    assert q_x.kind == "xhtml" and q_x.tokens == list(row["statement_tokens"])
    assert by_xml[0].pair_id == by_id[0].pair_id
    np.testing.assert_allclose([h.score for h in by_xml], [h.score for h in by_id], rtol=1e-4)


def test_query_parsing_and_clear_errors(monkeypatch):
    q = Q.parse_query(r"If $x \in \mathbb{R}$ then $$x^2 \ge 0$$ costs \$5.")
    assert q.tokens[:2] == ["If", "$x"] and "$R~double-struck" in q.tokens and "$≥" in q.tokens
    assert q.tokens[-3:] == ["$", "5", "."] and q.converters == ["texmath", "texmath"]
    assert Q.parse_query("demo-1/S1", ids={"demo-1/S1"}).kind == "id"
    cases = {
        "": "empty query",
        "   ": "empty query",
        "x" * 9000: "query too long: 9000 characters",
        "let $x be": "unbalanced \\$",
        "Let $x be. Then $y$": "unbalanced \\$: the query has 3 \\$ signs",
        "a $ $ b": "empty formula",
        "<p>unclosed": "does not parse",
        "$\\frac{a}{$": "could not be read|unexpected end",
        ". , ;": None,
    }
    monkeypatch.setattr(Q, "latexml_available", lambda: False)
    for text, message in cases.items():
        if message is None:
            assert Q.parse_query(text).tokens == [".", ",", ";"]
            continue
        with pytest.raises(Q.QueryError, match=message):
            Q.parse_query(text)
    q = Q.parse_query(
        r"maps $X \xrightarrow{f} Y$ by $\mycommand{x}$"
    )  # the tolerant reader, no LaTeXML
    assert q.tokens == ["maps", "$X", "$→", "$f", "$Y", "by", "$\\mycommand", "$x"]
    assert q.converters == ["texmath-tolerant", "texmath-tolerant"]
    assert (
        len(q.warnings) == 1
        and "unknown TeX command \\mycommand, kept as a symbol" in q.warnings[0]
    )
    with pytest.raises(Q.QueryError, match="no statement with id"):
        Q.parse_query("demo-1/S2", ids={"demo-1/S1"}, kind="id")
    with pytest.raises(Q.QueryError, match="no words or symbols"):
        Q.parse_query("<p>  </p>")


def test_latexml_converts_only_what_the_tolerant_reader_does_not_know(tmp_path, monkeypatch):
    """A formula with a command the tolerant reader does not know goes to latexmlmath (a stand-in
    script here, which logs its calls); one it reads whole runs no process; what LaTeXML does not
    know either (its ``merror``) keeps the tolerant reading, with a warning."""
    (tmp_path / "bad.xml").write_text(
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><merror>'
        "<mtext>\\bad</mtext></merror></math>"
    )
    (tmp_path / "ok.xml").write_text(
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><mrow><mi>X</mi>'
        "<mover><mo>→</mo><mi>f</mi></mover><mi>Y</mi></mrow></math>"
    )
    fake = tmp_path / "latexmlmath"
    fake.write_text(
        f'#!/bin/sh\nfor a; do last="$a"; done\nprintf "%s\\n" "$last" >> {tmp_path}/calls\n'
        f'case "$last" in *bad*) cat {tmp_path}/bad.xml;; *) cat {tmp_path}/ok.xml;; esac\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    calls = tmp_path / "calls"
    Q.latexml_available.cache_clear()
    try:
        q = Q.parse_query(r"maps $X \xrightarrow{f} Y$ and $x+1$")
        assert q.tokens == ["maps", "$X", "$→", "$f", "$Y", "and", "$x", "$+", "$1"]
        assert q.converters == ["texmath-tolerant", "texmath"] and not calls.exists()
        q = Q.parse_query(r"maps $X \frob{f} Y$")
        assert q.converters == ["latexml"] and q.warnings == []
        assert q.tokens == ["maps", "$X", "$→", "$f", "$Y"]
        assert calls.read_text().splitlines() == [r"X \frob{f} Y"]
        q = Q.parse_query(r"$\bad \xrightarrow{x}$")
        assert q.converters == ["texmath-tolerant"] and "\\bad" in q.warnings[0]
    finally:
        Q.latexml_available.cache_clear()


# ----------------------------------------------------------------------------- identity


def test_index_records_its_run_and_refuses_another_model(search_demo, search_index, tmp_path):
    meta = search_index.meta
    assert (
        meta["method"] == "model"
        and meta["backend"] == "exact"
        and meta["parts"] == ["train", "dev", "test"]
    )
    assert (
        meta["run"]["fingerprint"]["encoder"] == "npt" and meta["run"]["fingerprint"]["n_train"] > 0
    )
    assert meta["run"]["metrics"]["best_epoch"] >= 1
    assert meta["model"]["digest"] == meta["run"]["model_digest"]
    assert (
        len(search_index.proof_vectors) == search_index.n
        and search_index.proof_vectors.shape[1] == meta["dim"] == 64
    )
    copy = tmp_path / "copy"
    shutil.copytree(search_demo["index"], copy)
    with open(copy / "model" / "model.safetensors", "r+b") as f:  # another model's weights
        f.seek(-4, os.SEEK_END)
        f.write(b"\x00\x00\x80\x3f")
    with pytest.raises(ValueError, match="not the model this index was built with"):
        SearchIndex(copy)


def test_model_digest_and_copy_leave_out_snakemakes_timestamp(search_demo, tmp_path):
    """Snakemake marks a declared folder (the run's ``model/``) with ``.snakemake_timestamp``: it
    is not part of the model, so it neither changes the digest nor travels into an index."""
    run = tmp_path / "run"
    shutil.copytree(search_demo["run"], run)
    before = files_digest(run / "model")
    (run / "model" / ".snakemake_timestamp").touch()
    assert (
        files_digest(run / "model")
        == before
        == SearchIndex(search_demo["index"]).meta["run"]["model_digest"]
    )
    (run / "model" / "extra.txt").write_text("x")  # a file that is not hidden is part of the model
    assert files_digest(run / "model") != before
    (run / "model" / "extra.txt").unlink()
    build_index(
        tmp_path / "ix",
        search_demo["data"],
        run_dir=run,
        pairs_parquet=search_demo["pairs"],
        parts=["test"],
    )
    assert not (tmp_path / "ix" / "model" / ".snakemake_timestamp").exists()
    assert SearchIndex(tmp_path / "ix").meta["model"]["digest"] == before


def test_index_refuses_pairs_of_another_corpus(search_demo, tmp_path):
    pairs = pd.read_parquet(search_demo["pairs"]).iloc[5:]
    pairs.to_parquet(tmp_path / "pairs.parquet")
    with pytest.raises(ValueError, match="indexed pairs have no XHTML"):
        build_index(
            tmp_path / "ix",
            search_demo["data"],
            method="bm25",
            pairs_parquet=tmp_path / "pairs.parquet",
        )
    assert not (tmp_path / "ix").exists()


# ----------------------------------------------------------------------------- display


def test_sanitizer_keeps_mathml_and_drops_everything_active(search_demo, tmp_path):
    path, _ = hostile_row(search_demo["pairs"], tmp_path / "pairs.parquet")
    html = safe_html(pd.read_parquet(path)["proof_xml"].iloc[0])
    for bad in (
        "<script",
        "pwned",
        "onerror",
        "onclick",
        "href",
        "src=",
        "<iframe",
        "<style",
        "javascript",
    ):
        assert bad not in html, bad
    assert "<math><mi>x</mi><mo>=</mo><mn>1</mn></math>" in html and "Clearly" in html


def test_display_of_both_markups(search_demo):
    pairs = pd.read_parquet(search_demo["pairs"])
    arx = pairs[pairs["proof_xml"].str.contains("<m:math")]["proof_xml"].iloc[0]
    ltx = pairs[pairs["proof_xml"].str.contains("alttext")]["proof_xml"].iloc[0]
    for xml in (arx, ltx):
        html = safe_html(xml)
        assert "<math" in html and "m:math" not in html
        assert "annotation" not in html and "semantics" not in html and "mfenced" not in html
        assert "xref" not in html and "id=" not in html
    assert "$" in fragment_text(ltx) and "\\" in fragment_text(ltx)  # TeX from alttext
    fenced = (
        '<p xmlns:m="http://www.w3.org/1998/Math/MathML"><m:math><m:mfenced open="[" close="]">'
        "<m:mi>a</m:mi><m:mi>b</m:mi></m:mfenced></m:math></p>"
    )
    assert "<mrow><mo>[</mo><mi>a</mi><mo>,</mo><mi>b</mi><mo>]</mo></mrow>" in safe_html(fenced)


def test_html_cache_emptied_by_another_search_still_answers(search_demo):
    """The server runs searches in threads: another one may empty the page cache between this
    one's filling it and reading it back. A cache that empties itself on every write shows it."""

    class Forgetful(dict):
        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            self.clear()

    ix = SearchIndex(search_demo["index"])
    ix._html = Forgetful()
    first = ix.html(0, "proof")
    assert "<" in first and ix.html(0, "proof") == first


# ----------------------------------------------------------------------------- no-model indexes


@pytest.mark.parametrize("method", ["bm25", "tfidf"])
def test_token_indexes_rank_like_the_baselines(search_demo, tmp_path, method):
    build_index(
        tmp_path / method,
        search_demo["data"],
        method=method,
        pairs_parquet=search_demo["pairs"],
        parts=["test"],
    )
    ix = SearchIndex(tmp_path / method)
    test = read_part(search_demo["data"], "test")
    st, pf = token_lists(test["statement_tokens"]), token_lists(test["proof_tokens"])
    # the baselines' scorers: BM25 over the part's proofs; TF-IDF fitted on what the index fitted on
    scorer = bm25_scorer(st, pf) if method == "bm25" else tfidf_scorer(st + pf, st, pf)
    local = local_decode(scorer, len(test), 10, progress=False)
    ids = test["pair_id"].tolist()
    for i in range(0, len(test), 7):
        _, hits = ix.search(ids[i], k=10)
        assert [h.pair_id for h in hits] == [ids[j] for j in local.topk_idx[i]]
        np.testing.assert_allclose([h.score for h in hits], local.topk_score[i], rtol=1e-5)
    _, hits = ix.search(r"Let $f$ be continuous on $[a, b]$ with $f(a) < 0 < f(b)$.", k=3)
    assert len(hits) == 3 and hits[0].score > 0


# ----------------------------------------------------------------------------- FAISS


def test_faiss_backend_calibrates_recall_and_respects_parts(search_demo, tmp_path):
    build_index(
        tmp_path / "ann",
        search_demo["data"],
        run_dir=search_demo["run"],
        pairs_parquet=search_demo["pairs"],
        backend="faiss",
        target_recall=0.9,
    )
    ix = SearchIndex(tmp_path / "ann")
    info = ix.meta["faiss"]
    assert ix.meta["backend"] == "faiss" and ix.faiss is not None
    assert info["recall_at_10"] >= 0.9 and info["curve"][-1]["nprobe"] == info["nprobe"]
    assert info["calibration_queries"] == min(ix.n, 1000)
    exact = SearchIndex(search_demo["index"])
    ids = ix.table["pair_id"].tolist()
    same = 0
    for pid in ids[::25]:
        _, approx = ix.search(pid, k=10)
        _, truth = exact.search(pid, k=10)
        same += len({h.pair_id for h in approx} & {h.pair_id for h in truth})
        assert [h.score for h in approx] == sorted((h.score for h in approx), reverse=True)
        _, in_test = ix.search(pid, k=10, part="test")
        assert {ix.table["part"].iat[h.row] for h in in_test} == {"test"}
    assert same / (10 * len(ids[::25])) >= 0.85


# ----------------------------------------------------------------------------- command line


def test_cli_index_and_search(search_demo, tmp_path, capsys):
    assert (
        cli.main(
            [
                "index",
                str(search_demo["data"]),
                "--out",
                str(tmp_path / "bm25"),
                "--method",
                "bm25",
                "--pairs",
                str(search_demo["pairs"]),
                "--articles",
                str(search_demo["articles"]),
            ]
        )
        == 0
    )
    capsys.readouterr()
    pid = str(read_part(search_demo["data"], "test")["pair_id"].iloc[0])
    assert (
        cli.main(["search", str(search_demo["index"]), pid, "--part", "test", "--json", "-k", "4"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["query"] == {
        "kind": "id",
        "n_tokens": 0,
        "pair_id": pid,
        "converters": [],
        "warnings": [],
    }
    ev = pd.read_parquet(search_demo["eval"]).set_index("pair_id")
    assert [r["pair_id"] for r in out["results"]] == list(ev.loc[pid, "topk_ids"][:4])
    assert all(r["title"] and r["kind"] and r["statement"] and r["proof"] for r in out["results"])
    assert (
        cli.main(["search", str(tmp_path / "bm25"), r"Let $x$ be a real number", "--page", "2"])
        == 0
    )
    text = capsys.readouterr().out
    assert "model" not in text.splitlines()[0] and "bm25 index" in text and " 11. " in text
    assert cli.main(["search", str(search_demo["index"]), "$x"]) == 2
    assert "unbalanced $" in capsys.readouterr().err
    typed = [r"Let $x$ be a real number", "--json", "-k", "3", "--quantize", "int8"]
    assert cli.main(["search", str(search_demo["index"]), *typed]) == 0
    assert len(json.loads(capsys.readouterr().out)["results"]) == 3
    assert cli.main(["search", str(tmp_path / "bm25"), *typed]) == 2
    assert "bm25 index encodes no query: nothing to quantize" in capsys.readouterr().err
    assert cli.main(["search", str(tmp_path / "bm25"), "qzxv wvkj", "--json", "-k", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (
        len(out["results"]) == 2
        and "no word or symbol of the query occurs in any proof" in out["query"]["warnings"][0]
    )
    assert cli.main(["search", str(tmp_path / "bm25"), "qzxv wvkj", "-k", "2"]) == 0
    assert "warning: no word or symbol of the query occurs" in capsys.readouterr().err


def test_cli_answers_many_queries_in_one_process(search_demo, tmp_path, capsys, monkeypatch):
    """--queries FILE (or - for stdin): one query per non-empty line, one index load; each result
    shows the statement its proof proves; a refused query is said in its place (status 2)."""
    import io

    ix = str(search_demo["index"])
    pid = str(read_part(search_demo["data"], "test")["pair_id"].iloc[0])
    queries = tmp_path / "q.txt"
    queries.write_text(
        f"Let $f$ be continuous on $[a,b]$. Then $f$ is bounded.\n\nLet $x be\n{pid}\n"
    )
    assert cli.main(["search", ix, "--queries", str(queries), "--json", "-k", "3"]) == 2
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line.get("query_text") for line in lines] == [
        "Let $f$ be continuous on $[a,b]$. Then $f$ is bounded.",
        "Let $x be",
        pid,
    ]
    assert len(lines[0]["results"]) == 3 and "unbalanced $" in lines[1]["error"]
    assert lines[2]["query"]["kind"] == "id" and lines[2]["query"]["pair_id"] == pid
    assert all(r["statement"] for r in lines[0]["results"] + lines[2]["results"])
    assert "1 of 3 queries refused" in captured.err
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{pid}\nLet $y$ be prime.\n"))
    assert cli.main(["search", ix, "--queries", "-", "-k", "2", "--part", "test"]) == 0
    out = capsys.readouterr().out
    assert "== query 1/2: " + pid in out and "== query 2/2: Let $y$ be prime." in out
    assert out.count("proves: ") == 4 and out.count("proof:  ") == 4
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    assert cli.main(["search", ix, "--queries", str(empty)]) == 2
    assert "no query in" in capsys.readouterr().err
    assert cli.main(["search", ix, "x", "--queries", str(queries)]) == 2
    assert "not both" in capsys.readouterr().err


def test_cli_refuses_an_unparseable_query_before_torch(search_demo):
    """A query that cannot be an id and does not parse is refused before the index, its model
    and torch are loaded (docs/measured/search-cli.md times it)."""
    import subprocess
    import sys

    code = (
        "import sys; from proofmatch.cli import main; "
        f"rc = main(['search', {str(search_demo['index'])!r}, r'Let $\\frac{{x$ be real']); "
        "print(rc, 'torch' in sys.modules, 'scipy.stats' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["2", "False", "False"], done.stdout + done.stderr
    assert "could not be read" in done.stderr


def test_a_query_in_another_language_is_warned(search_demo, tmp_path):
    """The index's proofs are English (polyglot on a sample of their text): a French or Russian
    query is answered with a warning; an English one, and a short one, are not."""
    build_index(
        tmp_path / "bm25",
        search_demo["data"],
        method="bm25",
        pairs_parquet=search_demo["pairs"],
        articles_parquet=search_demo["articles"],
    )
    ix = SearchIndex(tmp_path / "bm25")
    assert ix.corpus_language() == "en"
    for text, code in [
        ("Soit $f$ une fonction continue sur $[a,b]$. Alors $f$ atteint son maximum.", "fr"),
        ("Пусть $f$ непрерывная функция на отрезке $[a,b]$. Тогда она ограничена.", "ru"),
    ]:
        q, hits = ix.search(text, k=3)
        assert hits and any(f"({code}, " in w and "(en)" in w for w in q.warnings), q.warnings
    for text in ("Let $f$ be continuous on $[a,b]$. Then $f$ attains its maximum.", "Soit $f$."):
        q, _ = ix.search(text, k=3)
        assert not any("read as" in w for w in q.warnings), q.warnings


def test_real_latexml_for_tex_beyond_the_tolerant_reader():
    """With Debian's latexml installed (CI installs it), ``\\AA`` and ``\\ointop`` (unknown to the
    tolerant reader) go through it; ``\\aleph``, which the tolerant reader knows, does not."""
    import shutil

    if shutil.which("latexmlmath") is None:
        if os.environ.get("PROOFMATCH_REQUIRE_LATEXML") == "1":
            pytest.fail("latexmlmath is required here (bash scripts/install.sh --latex)")
        pytest.skip("LaTeXML is not installed")
    Q.latexml_available.cache_clear()
    q = Q.parse_query(r"If $|X| = \AA_0$ then $\ointop_C f = 0$ for $x \in \aleph$.")
    assert q.converters == ["latexml", "latexml", "texmath-tolerant"] and q.warnings == []
    assert {"$Å", "$0", "$∮", "$C", "$f"} <= set(q.tokens) and q.tokens[-4:] == [
        "$x",
        "$∈",
        "$ℵ",
        ".",
    ]


# ----------------------------------------------------------------------------- fusion


def _independent_halves(search_demo, ix, q_id: str, part: str | None):
    """The learned and BM25 scores of an id query over the part's proofs, computed without the
    fusion index: the model index's factors, and BM25 weights (idf over every indexed proof)
    fitted here from the split file."""
    from proofmatch.scoring.lexical import bm25_weights, count_vectors

    model = SearchIndex(search_demo["index"])
    learned = model.scores(model.parse(q_id), part)
    data = pd.concat(
        [read_part(search_demo["data"], p) for p in ix.meta["parts"]], ignore_index=True
    )
    assert data["pair_id"].tolist() == ix.table["pair_id"].tolist()
    W, vocab = bm25_weights(token_lists(data["proof_tokens"]))
    cols = np.arange(len(data)) if part is None else np.flatnonzero(data["part"].to_numpy() == part)
    st = token_lists(data.loc[data["pair_id"] == q_id, "statement_tokens"])
    bm25 = np.asarray((count_vectors(st, vocab) @ W[cols].T).toarray()[0], np.float32)
    return learned, bm25, cols


@pytest.mark.parametrize("part", [None, "test"])
def test_fusion_hits_are_fuse_of_the_two_halves(search_demo, fusion_index, part):
    from proofmatch.scoring.fusion import fuse

    ix = fusion_index
    assert (
        ix.method == "fusion" and ix.fusion_weight == 0.75 and ix.meta["fusion"]["source"] == "run"
    )
    ids = ix.table.loc[ix.table["part"] == "test", "pair_id"].tolist()
    for pid in ids[::19]:
        learned, bm25, cols = _independent_halves(search_demo, ix, pid, part)
        fused = fuse(learned[None], bm25[None], 0.75, normalize="zscore")[0]
        gold = int(np.flatnonzero(ix.table["pair_id"].to_numpy()[cols] == pid)[0])
        _, hits = ix.search(pid, k=10, part=part)
        order = top_order(fused, 10, gold)
        assert [h.row for h in hits] == cols[order].tolist()
        np.testing.assert_allclose([h.score for h in hits], fused[order], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose([h.learned for h in hits], learned[order], rtol=1e-5)
        np.testing.assert_allclose([h.bm25 for h in hits], bm25[order], rtol=1e-5)
        assert [h.learned_rank for h in hits] == [
            1 + int((learned > learned[i]).sum()) for i in order
        ]
        assert [h.bm25_rank for h in hits] == [1 + int((bm25 > bm25[i]).sum()) for i in order]
        assert {ix.table["part"].iat[h.row] for h in hits} <= (
            {"test"} if part else {"train", "dev", "test"}
        )


def test_fusion_part_filter_standardises_over_the_part(fusion_index):
    """Searching one part standardises each half over that part's proofs, not over the whole index."""
    from proofmatch.scoring.fusion import standardize

    ix = fusion_index
    pid = ix.table.loc[ix.table["part"] == "test", "pair_id"].iloc[4]
    q = ix.parse(pid)
    whole, test = ix.halves(q), ix.halves(q, "test")
    rows = np.flatnonzero(ix.table["part"].to_numpy() == "test")
    np.testing.assert_allclose(
        test.learned, whole.learned[rows], rtol=1e-6
    )  # the same raw halves...
    np.testing.assert_allclose(
        test.fused, standardize(test.learned) + 0.75 * standardize(test.bm25), rtol=1e-5
    )
    assert not np.allclose(
        test.fused, whole.fused[rows], atol=1e-3
    )  # ...standardised over other pools


def test_fusion_search_is_evaluations_fused_row(search_demo, tmp_path):
    """An index of the test part alone: searching a test statement by id returns the top 10 of its
    row of ``fusion.fused_scorer`` over the model's factors and the BM25 baseline, as evaluation
    scores the test part."""
    from searchdata import fusion_index as build

    from proofmatch.decoding.local import factor_scorer
    from proofmatch.models.matcher import load_matcher
    from proofmatch.scoring.fusion import fused_scorer

    ix = SearchIndex(build(search_demo, tmp_path, parts=("test",)))
    test = read_part(search_demo["data"], "test")
    st, pf = token_lists(test["statement_tokens"]), token_lists(test["proof_tokens"])
    A, B, row, col = load_matcher(search_demo["run"]).factors(st, pf)
    scorer = fused_scorer(
        factor_scorer(A, B, row, col), bm25_scorer(st, pf), 0.75, normalize="zscore"
    )
    local = local_decode(scorer, len(test), 10, progress=False)
    for i in range(0, len(test), 9):
        _, hits = ix.search(test["pair_id"].iat[i], k=10)
        assert [h.row for h in hits] == local.topk_idx[i].tolist()
        np.testing.assert_allclose(
            [h.score for h in hits], local.topk_score[i], rtol=1e-4, atol=1e-4
        )


def test_fusion_weight_from_the_run_or_by_hand(search_demo, fusion_index, tmp_path):
    from proofmatch.search.provenance import fusion_weight

    meta = fusion_index.meta
    run = meta["run"]["run_dir"]
    assert (
        meta["fusion"]["file"] == os.path.join(run, "fusion.json")
        and meta["fusion"]["recorded"]["weight"] == 0.75
    )
    assert meta["bm25"]["idf_over"] == "the indexed proofs" and "proof_tokens" in fusion_index.table
    tab = fusion_index.table.iloc[::97]
    assert tab["proof_text"].tolist() == [
        fragment_text(x) for x in tab["proof_xml"]
    ]  # read once, at build
    assert (
        fusion_index.describe()["scorer"] == "fusion"
        and fusion_index.describe()["fusion_weight_source"] == "run"
    )
    hand = fusion_weight(run, 2.0)
    assert hand["weight"] == 2.0 and hand["source"] == "hand" and hand["run_weight"] == 0.75
    bare = tmp_path / "bare"
    bare.mkdir()
    assert fusion_weight(bare, 1.5) == {"weight": 1.5, "source": "hand", "file": None}
    with pytest.raises(ValueError, match="fusion.json does not exist.*--fusion-weight"):
        fusion_weight(bare)
    for content, message in [
        ("{", "is not JSON"),
        ('{"lambda": 1}', "has no 'weight'"),
        ('{"weight": -1}', "finite number >= 0"),
        ('{"weight": "1"}', "finite number"),
        ("[1]", "no JSON object"),
        ('{"weight": 1, "normalize": "rank"}', "chosen for 'rank' fusion; search fuses z-scores"),
    ]:
        (bare / "fusion.json").write_text(content)
        with pytest.raises(ValueError, match=message):
            fusion_weight(bare)
    with pytest.raises(ValueError, match="finite number"):
        fusion_weight(run, float("nan"))
    kw = dict(run_dir=run, method="fusion", parts=["test"])
    with pytest.raises(ValueError, match="FAISS"):
        build_index(tmp_path / "f1", search_demo["data"], backend="faiss", **kw)
    with pytest.raises(ValueError, match=r"above the exact limit \(50\).*--backend exact"):
        build_index(tmp_path / "f2", search_demo["data"], faiss_above=50, **kw)
    assert not (tmp_path / "f2").exists()
    big = build_index(
        tmp_path / "f3",
        search_demo["data"],
        faiss_above=50,
        backend="exact",
        fusion_weight_by_hand=1.0,
        **kw,
    )
    assert big["backend"] == "exact" and big["fusion"]["source"] == "hand" and "faiss" not in big
    with pytest.raises(ValueError, match="for --method fusion only"):
        build_index(tmp_path / "f4", search_demo["data"], method="bm25", fusion_weight_by_hand=1.0)


# ----------------------------------------------------------------------------- why this proof


class CountX:
    """A toy matcher: score = (number of ``$x`` in the statement) * (number in the proof) + 1."""

    def factors(self, statements, proofs, batch_size=64):
        A = np.array([[s.count("$x")] for s in statements], np.float32).reshape(-1, 1)
        B = np.array([[p.count("$x")] for p in proofs], np.float32).reshape(-1, 1)
        return A, B, np.ones(len(A), np.float32), np.zeros(len(B), np.float32)


def test_explain_gives_each_token_its_share_in_a_toy_model(search_demo):
    ix = SearchIndex(search_demo["index"])
    ix.matcher = CountX()
    tab = ix.table
    row = next(i for i, p in enumerate(tab["proof_tokens"]) if list(p).count("$x") >= 2)
    pid, proof = tab["pair_id"].iat[row], list(tab["proof_tokens"].iat[row])
    e = explain(ix, r"Let $x$ and $y$ be reals with $x < y$.", pid)
    q = ix.parse(r"Let $x$ and $y$ be reals with $x < y$.")
    assert (
        e["method"] == "occlusion"
        and e["scorer"] == "model"
        and e["budget"]["perturbations"] == len(q.tokens) + len(proof)
    )
    assert [t["token"] for t in e["statement"]] == q.tokens and [
        t["token"] for t in e["proof"]
    ] == proof
    assert e["score"] == pytest.approx(2 * proof.count("$x") + 1)
    for t in e["statement"]:  # masking one $x of the statement loses one proof count of $x
        assert t["weight"] == pytest.approx(proof.count("$x") if t["token"] == "$x" else 0.0)
    for t in e["proof"]:
        assert t["weight"] == pytest.approx(2.0 if t["token"] == "$x" else 0.0)


def test_explain_fusion_splits_each_contribution_into_its_halves(fusion_index):
    ix = fusion_index
    text = r"Let $f$ be continuous on $[a, b]$. Then $f$ is bounded."
    _, hits = ix.search(text, k=3, part="test")
    e = explain(ix, text, hits[1].pair_id, part="test")
    assert e["scorer"] == "fusion" and e["score"] == pytest.approx(
        hits[1].score, rel=1e-4, abs=1e-4
    )
    assert e["fusion"]["learned"] == pytest.approx(hits[1].learned, rel=1e-4)
    assert e["fusion"]["bm25"] == pytest.approx(hits[1].bm25, rel=1e-6)
    assert e["fusion"]["pool"]["n"] == ix.size("test")
    assert len(e["statement"]) == e["query"]["n_tokens"] and len(e["proof"]) == len(
        ix.table["proof_tokens"].iat[hits[1].row]
    )
    for t in e["statement"] + e["proof"]:
        assert t["weight"] == pytest.approx(t["learned"] + t["bm25"], abs=1e-9)
    # BM25 is linear in the query's counts, and a proof token the query lacks never changes BM25
    query_terms = {t["token"] for t in e["statement"]}
    for t in e["proof"]:
        if t["token"] not in query_terms:
            assert t["bm25"] == pytest.approx(0.0, abs=1e-9)
    assert any(t["bm25"] > 0 for t in e["proof"]) and any(t["learned"] != 0 for t in e["statement"])
    assert e["max_abs_weight"] == max(abs(t["weight"]) for t in e["statement"] + e["proof"])


def test_explain_refuses_what_it_cannot_explain(fusion_index, search_demo, tmp_path):
    ix = fusion_index
    pid = ix.table.loc[ix.table["part"] == "train", "pair_id"].iloc[0]
    for args, message in [
        (("", pid), "empty query"),
        (("Let $x$", "nope/S1"), "no proof with id 'nope/S1'"),
        (("Let $x$", ""), "say which proof"),
        (("Let $x$", pid, "test"), "not among the proofs of the test part"),
    ]:
        with pytest.raises(Q.QueryError, match=message):
            explain(ix, *args)
    with pytest.raises(Q.QueryError, match=r"have \d+ tokens together, the limit is 20"):
        explain(ix, "Let $x$ be a real number", pid, max_tokens=20)
    old = SearchIndex(search_demo["index"])
    old.table = old.table.drop(columns=["proof_tokens"])
    with pytest.raises(Q.QueryError, match="built without its proofs' tokens"):
        explain(old, "Let $x$", pid)


def test_cli_fusion_index_help_and_explain(search_demo, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["index", "--help"])
    helptext = capsys.readouterr().out
    assert "fusion" in helptext and "--fusion-weight" in helptext and "fusion.json" in helptext
    assert (
        cli.main(
            [
                "index",
                str(search_demo["data"]),
                "--out",
                str(tmp_path / "fx"),
                "--run",
                str(search_demo["run"]),
                "--fusion",
                "--parts",
                "test",
            ]
        )
        == 2
    )
    assert "fusion.json does not exist" in capsys.readouterr().err
    assert (
        cli.main(
            [
                "index",
                str(search_demo["data"]),
                "--out",
                str(tmp_path / "fx"),
                "--run",
                str(search_demo["run"]),
                "--fusion",
                "--fusion-weight",
                "1.5",
                "--parts",
                "test",
                "--pairs",
                str(search_demo["pairs"]),
            ]
        )
        == 0
    )
    assert (
        json.loads(capsys.readouterr().out.strip().splitlines()[-1])["fusion_weight_source"]
        == "hand"
    )
    pid = str(read_part(search_demo["data"], "test")["pair_id"].iloc[0])
    assert cli.main(["search", str(tmp_path / "fx"), pid, "--json", "-k", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scorer"] == "fusion" and {
        "learned_score",
        "bm25_score",
        "learned_rank",
        "bm25_rank",
    } <= set(out["results"][0])
    assert cli.main(["search", str(tmp_path / "fx"), pid, "-k", "2"]) == 0
    assert "λ = 1.5, given by hand" in capsys.readouterr().out
    assert (
        cli.main(
            [
                "search",
                str(tmp_path / "fx"),
                pid,
                "--explain",
                out["results"][0]["pair_id"],
                "--json",
            ]
        )
        == 0
    )
    e = json.loads(capsys.readouterr().out)
    assert e["method"] == "occlusion" and len(e["proof"]) > 0
    assert cli.main(["search", str(tmp_path / "fx"), pid, "--explain", "no/such"]) == 2
    assert "no proof with id" in capsys.readouterr().err


def test_explain_bm25_and_tfidf_indexes_rescore_like_bm25okapi(search_demo, tmp_path):
    """A BM25 index's explanation against BM25Okapi's own formula, term by term (the masked proof
    keeps its length, the index's idf and mean length); TF-IDF explains its cosine."""
    from rank_bm25 import BM25Okapi

    build_index(tmp_path / "bm25", search_demo["data"], method="bm25", parts=["test"])
    ix = SearchIndex(tmp_path / "bm25")
    proofs = [list(map(str, p)) for p in ix.table["proof_tokens"]]
    bm = BM25Okapi(proofs)

    def okapi(query: list[str], doc: list[str]) -> float:
        norm = bm.k1 * (1 - bm.b + bm.b * len(doc) / bm.avgdl)
        return sum(
            bm.idf.get(t, 0.0) * doc.count(t) * (bm.k1 + 1) / (doc.count(t) + norm) for t in query
        )

    text = r"Let $f$ be continuous on $[a, b]$. Then $f$ is bounded."
    _, hits = ix.search(text, k=2)
    e = explain(ix, text, hits[0].pair_id)
    statement, proof = [t["token"] for t in e["statement"]], proofs[hits[0].row]
    assert e["scorer"] == "bm25" and e["score"] == pytest.approx(
        okapi(statement, proof)
    ) == pytest.approx(hits[0].score, rel=1e-5)
    for i, t in enumerate(e["statement"]):
        assert t["weight"] == pytest.approx(
            e["score"] - okapi(statement[:i] + statement[i + 1 :], proof), abs=1e-9
        )
    for j, t in enumerate(e["proof"]):
        masked = proof[:j] + ["[UNK]"] + proof[j + 1 :]
        assert t["weight"] == pytest.approx(e["score"] - okapi(statement, masked), abs=1e-9)
    assert any(t["weight"] > 0 for t in e["proof"])
    ix.bm25_fit = None  # an index built before the statistics were stored
    with pytest.raises(Q.QueryError, match="without its BM25 statistics"):
        explain(ix, text, hits[0].pair_id)
    build_index(tmp_path / "tfidf", search_demo["data"], method="tfidf", parts=["test"])
    tf = SearchIndex(tmp_path / "tfidf")
    _, hits = tf.search(text, k=1)
    e = explain(tf, text, hits[0].pair_id)
    assert e["scorer"] == "tfidf" and e["score"] == pytest.approx(hits[0].score, rel=1e-5)
    assert len(e["proof"]) == len(tf.table["proof_tokens"].iat[hits[0].row])
