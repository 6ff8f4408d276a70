"""``proofmatch index-corpus DIR --out INDEX`` (proofmatch.search.corpus_index): a folder of papers
to an answered search in one command, with no split and no training on them (docs/search.md,
"Search your own papers")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_latex import DATA, latexmlc  # noqa: F401  (the fixture: LaTeXML present, or skip)

from proofmatch.artifacts import record_digest
from proofmatch.cli import main
from proofmatch.demo import generate as demo
from proofmatch.search.corpus_index import CorpusIndexError, index_corpus, work_folder

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def five(tmp_path_factory) -> Path:
    """Five demo articles with theorems (XHTML, some gzipped), nothing else."""
    root = tmp_path_factory.mktemp("five")
    demo.generate(root / "demo", n_articles=12)
    folder = root / "papers"
    folder.mkdir()
    ids = ["demo-0001", "demo-0002", "demo-0003", "demo-0004", "demo-0005"]
    for path in sorted((root / "demo/xhtml").iterdir()):
        if path.name.split(".")[0] in ids:
            shutil.copy(path, folder / path.name)
    assert len(list(folder.iterdir())) == 5
    return folder


def test_five_articles_every_pair_searched_across_articles(five, tmp_path, capsys):
    out = tmp_path / "index"
    assert main(["index-corpus", str(five), "--out", str(out)]) == 0
    built = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert built["method"] == "bm25"
    work = work_folder(out)
    extracted = pd.read_parquet(work / "linearize/shard-000.parquet")
    proofs = pd.read_parquet(out / "proofs.parquet")
    # every extracted pair is indexed, in one part, from all five articles
    assert built["n"] == len(proofs) == len(extracted) > 20
    assert set(proofs["pair_id"]) == set(extracted["pair_id"])
    assert proofs["article_id"].nunique() == 5 and set(proofs["part"]) == {"test"}
    assert proofs["title"].isna().all()  # no metadata given: ids stand for titles
    # a statement of one article finds proofs of the others too
    pid = proofs["pair_id"].iloc[0]
    assert main(["search", str(out), pid, "-k", "10", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["results"]
    assert len(hits) == 10 and len({h["article_id"] for h in hits}) > 1


def test_a_trained_run_scores_fused_with_bm25_or_alone(five, tmp_path, search_demo):
    run = search_demo["run"]
    meta = index_corpus(five, tmp_path / "fused", run_dir=run, fusion_weight_by_hand=0.5)
    assert meta["method"] == "fusion" and meta["fusion"]["source"] == "hand"
    assert meta["fusion"]["weight"] == 0.5 and meta["n"] > 20
    alone = index_corpus(five, tmp_path / "model", run_dir=run, fusion=False)
    assert alone["method"] == "model" and "fusion" not in alone
    # fused as on dev where the run was trained: its fusion.json's weight
    shutil.copytree(run, tmp_path / "run")
    (tmp_path / "run/fusion.json").write_text(json.dumps({"weight": 0.25, "lexical": "bm25"}))
    meta = index_corpus(five, tmp_path / "dev", run_dir=tmp_path / "run")
    assert meta["fusion"]["weight"] == 0.25 and meta["fusion"]["source"] != "hand"


def test_refusals_say_what_was_found(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["index-corpus", str(tmp_path / "empty"), "--out", str(tmp_path / "i")]) == 2
    assert "holds no XHTML article and no LaTeX source" in capsys.readouterr().err
    with pytest.raises(CorpusIndexError, match="need --run"):
        index_corpus(tmp_path, tmp_path / "i", fusion=False)
    assert not (tmp_path / "i").exists()


@pytest.mark.slow
def test_latex_sources_to_an_answered_search_in_one_command(tmp_path, latexmlc):  # noqa: F811
    """README and docs/search.md: two of the tests' own LaTeX articles (arXiv's source layout: a
    folder, a single .tex) converted with LaTeXML, indexed and searched by one command."""
    papers = tmp_path / "papers"
    papers.mkdir()
    shutil.copytree(DATA / "sources/2101.00001", papers / "2101.00001")
    shutil.copy(DATA / "sources/2101.00003.tex", papers)
    shutil.copy(DATA / "sources/metadata.csv", papers)
    done = subprocess.run(
        [sys.executable, "-m", "proofmatch.cli", "index-corpus", str(papers)]
        + ["--metadata", str(papers / "metadata.csv"), "--out", str(tmp_path / "index")]
        + ["--query", "A finite graph has an even number of vertices of odd degree.", "-k", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"method": "bm25", "n": 4' in done.stdout
    assert "2 proofs for a tex query, bm25 index of 4 proofs" in done.stdout
    first = done.stdout.split("\n  1.")[1]
    assert "2101.00003 — Counting edges of finite graphs" in first
    assert "odd degree" in first


def test_a_bare_model_folder_trained_elsewhere(five, tmp_path, search_demo):
    """A saved model (encoder and head) without its run folder: alone, or fused by hand."""
    model = shutil.copytree(search_demo["run"] / "model", tmp_path / "elsewhere")
    record_digest(model)  # a copied model brings no digest of its own: record the one it has now
    meta = index_corpus(five, tmp_path / "bare", run_dir=model, fusion=False)
    assert meta["method"] == "model" and meta["run"]["run_dir"] == str(model)
    with pytest.raises(ValueError, match="fusion.json does not exist"):
        index_corpus(five, tmp_path / "nofusion", run_dir=model)
    assert not work_folder(tmp_path / "nofusion").exists()  # refused before the corpus is read
