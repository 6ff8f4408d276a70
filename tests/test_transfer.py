"""Cross-corpus transfer (proofmatch.evaluation.transfer, workflow/rules/transfer.smk).

Unit tests build pools and tables from small files; the workflow test trains the smoke-size
NPT-Local and ScratchBERT-Local on the demo corpus without its math.PR articles and tests them,
with TF-IDF and BM25, on the math.PR articles as a transfer corpus (results/tables/transfer.md).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from test_workflow import copy_workflow
from toydata import toy_pairs

from proofmatch import experiments as X
from proofmatch.config import validate_config
from proofmatch.data.splits import read_parts
from proofmatch.demo.generate import generate
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation import captions as CAP
from proofmatch.evaluation import transfer

SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def write_pairs(df: pd.DataFrame, path: Path) -> Path:
    df.drop(columns=["part"]).to_parquet(path, index=False)
    return path


def test_pool_holds_the_train_part_and_every_transfer_pair(tmp_path):
    train_corpus = toy_pairs(n_articles=6, seed=1)
    train_corpus.assign(mapping="{}").to_parquet(tmp_path / "train.parquet", index=False)
    other = toy_pairs(n_articles=3, seed=2)
    other["pair_id"] = "other-" + other["pair_id"]
    other["article_id"] = "other-" + other["article_id"]
    pairs = write_pairs(other, tmp_path / "pairs.parquet")
    info = transfer.build_pool(
        pairs, tmp_path / "train.parquet", tmp_path / "pool.parquet", tmp_path / "pool.json"
    )
    test, train = read_parts(tmp_path / "pool.parquet", ["test", "train"])
    assert test["pair_id"].tolist() == other["pair_id"].tolist()
    assert len(test) == len(other) == info["pairs"] and info["articles"] == 3
    assert (
        train["pair_id"].tolist()
        == train_corpus.loc[train_corpus["part"] == "train", "pair_id"].tolist()
    )
    by_id = other.set_index("pair_id")
    for row in test.itertuples():  # Conservation: the tokens as linearized
        assert list(row.proof_tokens) == list(by_id.loc[row.pair_id, "proof_tokens"])
        assert list(row.statement_tokens) == list(by_id.loc[row.pair_id, "statement_tokens"])
    assert info["shared_articles"] == 0 and info["duplicate_pairs"] == 0
    assert json.loads((tmp_path / "pool.json").read_text())["train_pairs"] == len(train)


def test_a_pool_that_overlaps_the_training_corpus_is_flagged(tmp_path):
    corpus = toy_pairs(n_articles=6, seed=1)
    corpus.assign(mapping="{}").to_parquet(tmp_path / "train.parquet", index=False)
    pairs = write_pairs(corpus, tmp_path / "pairs.parquet")  # the training corpus itself
    info = transfer.build_pool(
        pairs, tmp_path / "train.parquet", tmp_path / "pool.parquet", tmp_path / "pool.json"
    )
    n_train = int((corpus["part"] == "train").sum())
    assert info["shared_articles"] == 6 and info["duplicate_pairs"] == n_train
    empty = write_pairs(corpus.iloc[:0], tmp_path / "empty.parquet")
    with pytest.raises(ValueError, match="no pairs left"):
        transfer.build_pool(
            empty, tmp_path / "train.parquet", tmp_path / "p2.parquet", tmp_path / "p2.json"
        )


def fake_eval(
    path: Path, mrr: float, acc: float, global_acc: float, n: int, weight: float | None = None
) -> str:
    extra = {} if weight is None else {"weight": weight, "normalize": "zscore", "lexical": "bm25"}
    ids = [f"p{i:03d}" for i in range(n)]  # the per-statement block the intervals read
    hits = int(round(acc * n))
    block = B.statements_block(
        ids, [1] * hits + [4] * (n - hits), list(range(hits)) + [0] * (n - hits), list(range(n))
    )
    path.write_text(
        json.dumps(
            {"mrr": mrr, "acc": acc, "global_acc": global_acc, "n": n, **extra, B.STATEMENTS: block}
        )
    )
    return str(path)


def settings_of(transfer_block: dict, n_shards: int = 2, **config) -> dict:
    return transfer.transfer_settings(
        validate_config({"corpus": {"n_shards": n_shards}, "transfer": transfer_block, **config})
    )


MODELS = ["npt", "scratchbert", "tfidf", "bm25", "npt+bm25", "scratchbert+bm25"]


def test_table_sets_each_pool_beside_the_in_corpus_numbers(tmp_path, monkeypatch):
    settings = settings_of(
        {
            "corpora": [
                {"name": "pr", "source": "dir", "dir": "x"},
                {"name": "stacks", "source": "latex", "dir": "y"},
            ]
        }
    )
    inputs = transfer.table_inputs(settings)
    # in-corpus, a trained run's cell comes from the run's evaluation folder (one job writes it
    # whole), a baseline's is its JSON; on a pool every cell is its JSON (one file a job)
    assert "results/eval/mixed/npt-local/conservation-both" in inputs
    assert "results/eval/mixed/bm25-none/conservation-both/test-conservation.json" in inputs
    assert (
        "results/transfer/stacks/eval/mixed/bm25-none/conservation-both/test-conservation.json"
        in inputs
    )
    assert (
        "results/transfer/pr/eval/mixed/npt-local/conservation-both/test-conservation.json"
        in inputs
    )
    assert "results/transfer/pr/pool/mixed/conservation.json" in inputs
    # the fusion's in-corpus cell is the baselines table's Conservation cell; on a pool its own
    assert "results/eval/mixed/npt+bm25-local/conservation-both" in inputs
    assert (
        "results/transfer/pr/eval/mixed/scratchbert+bm25-local/conservation-both/test-conservation.json"
        in inputs
    )
    assert (
        len(inputs) == 2 + 3 * 6
    )  # two pools; six rows (2 runs, 2 baselines, 2 fusions) in three column groups
    assert [ev.path().stem for ev in transfer.in_corpus_evaluations(settings)] == [
        "test-conservation"
    ] * 6
    monkeypatch.chdir(tmp_path)
    base = {None: 0.1, "pr": 0.2, "stacks": 0.3}
    for (corpus, ev), path in transfer.table_cells(settings).items():
        bonus = 0.01 * MODELS.index(ev.model)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fake_eval(
            Path(path),
            base[corpus] + bonus,
            0.05,
            0.07,
            100 if corpus is None else 50,
            weight=0.75 if ev.fused else None,
        )
    for name, articles, shared, duplicates in (("pr", 5, 0, 0), ("stacks", 4, 2, 1)):
        pool = Path(transfer.pool_json(settings, name))
        pool.parent.mkdir(parents=True)
        pool.write_text(
            json.dumps(
                {
                    "pairs": 50,
                    "articles": articles,
                    "shared_articles": shared,
                    "duplicate_pairs": duplicates,
                }
            )
        )
    df = transfer.render_transfer(inputs, tmp_path / "transfer", settings)
    assert df["Model"].tolist() == [
        "NPT-Local-Local",
        "NPT-Local-Global",
        "ScratchBERT-Local-Local",
        "ScratchBERT-Local-Global",
        "TF-IDF-Local",
        "TF-IDF-Global",
        "BM25-Local",
        "BM25-Global",
        "NPT-Local + BM25-Local (fusion, this project)",
        "NPT-Local + BM25-Global (fusion, this project)",
        "ScratchBERT-Local + BM25-Local (fusion, this project)",
        "ScratchBERT-Local + BM25-Global (fusion, this project)",
    ]
    scores = [
        "Model",
        "In-corpus MRR (n=100)",
        "In-corpus Acc",
        "pr MRR (n=50)",
        "pr Acc",
        "stacks MRR (n=50)",
        "stacks Acc",
    ]
    assert list(df.columns) == [
        *scores,
        *(f"{c} {end}" for c in scores[1:] for end in ("lo", "hi")),
        "Note",
    ]
    assert (
        df["pr Acc lo"] <= df["pr Acc hi"]
    ).all()  # each score's interval over its pool's statements
    assert "[" in (tmp_path / "transfer.md").read_text()
    df = df[[*scores, "Note"]]
    row = df.set_index("Model").loc["TF-IDF-Local"]
    assert (
        row.tolist()[:-1] == pytest.approx([12.0, 5.0, 22.0, 5.0, 32.0, 5.0]) and row["Note"] == ""
    )
    assert df.set_index("Model").loc["BM25-Global"].tolist()[1:-1:2] == pytest.approx(
        [7.0, 7.0, 7.0]
    )
    assert np.isnan(
        df.set_index("Model").loc["BM25-Global", "pr MRR (n=50)"]
    )  # global decoding has no MRR
    fusion = df.set_index("Model").loc["ScratchBERT-Local + BM25-Local (fusion, this project)"]
    assert fusion.tolist()[:-1:2] == pytest.approx([15.0, 25.0, 35.0])
    md = (tmp_path / "transfer.md").read_text()
    assert (
        "stacks: 50 pairs from 4 articles (chance MRR 9.00), NOT a clean transfer" in md
        and "pr: 50 pairs from 5 articles (chance MRR 9.00);" in md
    )
    # each pool's chance MRR, H_n / n: the in-corpus test part's too
    n_in = int(re.search(r"In-corpus MRR \(n=(\d+)\)", md).group(1))
    assert f"In-corpus: {CAP.chance(n_in)};" in md
    assert (
        "never tuned on a pool: NPT-Local λ = 0.75 (zscore); ScratchBERT-Local λ = 0.75 (zscore)."
        in md
    )
    tfidf_on_pr = (
        "results/transfer/pr/eval/mixed/tfidf-none/conservation-both/test-conservation.json"
    )
    with pytest.raises(ValueError, match="absent"):
        transfer.render_transfer([p for p in inputs if p != tfidf_on_pr], tmp_path / "t2", settings)
    npt_json = "results/eval/mixed/npt-local/conservation-both/test-conservation.json"
    with pytest.raises(
        ValueError, match="unexpected"
    ):  # the run's folder is the input, not its file
        transfer.render_transfer(
            [npt_json if p == str(Path(npt_json).parent) else p for p in inputs],
            tmp_path / "t2",
            settings,
        )
    cells = transfer.table_cells(settings)
    del cells[next(k for k, v in cells.items() if v == tfidf_on_pr)]
    with pytest.raises(KeyError, match="pr"):
        transfer.transfer_table(cells, {"pr": transfer.pool_json(settings, "pr")}, tmp_path / "t3")
    # one λ serves every pool: a pool scored with another weight is an error
    fused_on_pr = (
        "results/transfer/pr/eval/mixed/npt+bm25-local/conservation-both/test-conservation.json"
    )
    fake_eval(Path(fused_on_pr), 0.5, 0.4, 0.4, 50, weight=2.0)
    with pytest.raises(ValueError, match="different weights"):
        transfer.render_transfer(inputs, tmp_path / "t4", settings)


def test_rows_of_a_run_not_made_say_not_run(tmp_path, monkeypatch):
    """MathBERT without a checkpoint: its run and its fusion are rows that say why, and the
    workflow is asked for none of their evaluations."""
    settings = settings_of(
        {
            "corpora": [{"name": "pr", "source": "demo"}],
            "runs": ["mathbert-local", "npt-local"],
            "baselines": ["bm25"],
        }
    )
    assert settings["not_run"] == {
        "mathbert": X.NOT_RUN_MATHBERT,
        "mathspecter": X.NOT_RUN_MATHBERT,
    }
    inputs = transfer.table_inputs(settings)
    assert not any("mathbert" in p for p in inputs) and len(inputs) == 1 + 2 * 3
    monkeypatch.chdir(tmp_path)
    for (_corpus, ev), path in transfer.table_cells(settings).items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fake_eval(Path(path), 0.4, 0.3, 0.3, 60, weight=1.0 if ev.fused else None)
    pool = Path(transfer.pool_json(settings, "pr"))
    pool.parent.mkdir(parents=True)
    pool.write_text(json.dumps({"pairs": 60, "articles": 3}))
    df = transfer.render_transfer(inputs, tmp_path / "transfer", settings).set_index("Model")
    assert df.index.tolist()[::2] == [
        "MathBERT-Local-Local",
        "NPT-Local-Local",
        "BM25-Local",
        "MathBERT-Local + BM25-Local (fusion, this project)",
        "NPT-Local + BM25-Local (fusion, this project)",
    ]
    mathbert = df.loc[df.index.str.startswith("MathBERT")]
    assert (mathbert["Note"] == X.NOT_RUN_MATHBERT).all() and mathbert.drop(
        columns="Note"
    ).isna().all().all()
    assert (df.loc[~df.index.str.startswith("MathBERT"), "Note"] == "").all()
    configured = settings_of(
        {"corpora": [{"name": "pr", "source": "demo"}], "runs": ["mathbert-local"]},
        matching={"mathbert": "some/checkpoint"},
    )
    assert configured["not_run"] == {} and any(
        "mathbert+bm25" in p for p in transfer.table_inputs(configured)
    )


def test_settings_defaults_and_errors():
    s = settings_of(
        {"corpora": [{"name": "a", "source": "demo"}], "runs": ["npt-hybrid"]}, n_shards=4
    )
    assert (
        s["runs"] == [("npt", "hybrid")]
        and s["baselines"] == ["tfidf", "bm25"]
        and s["split"] == "mixed"
    )
    assert s["corpora"]["a"]["n_shards"] == 4
    assert settings_of({}, n_shards=1)["corpora"] == {}
    with pytest.raises(ValueError, match="used twice"):
        settings_of({"corpora": [{"name": "a", "source": "demo"}, {"name": "a", "source": "demo"}]})
    with pytest.raises(ValueError, match="needs at least one"):
        transfer.table_inputs(settings_of({}))


def split_demo(root: Path) -> tuple[Path, Path]:
    """The demo corpus as two corpora: its math.PR articles and the rest."""
    generate(root / "demo", n_articles=36, seed=7)
    meta = pd.read_csv(root / "demo" / "metadata.csv")
    out = []
    for name, rows in (
        ("rest", meta[meta["primary_category"] != "math.PR"]),
        ("pr", meta[meta["primary_category"] == "math.PR"]),
    ):
        (root / name / "xhtml").mkdir(parents=True)
        for file in rows["file"]:
            (root / "demo" / file).rename(root / name / file)
        rows.to_csv(root / name / "metadata.csv", index=False)
        out.append(root / name)
    return out[0], out[1]


@pytest.mark.slow
def test_transfer_table_on_the_demo_math_pr_articles(tmp_path):
    rest, pr = split_demo(tmp_path)
    wd = tmp_path / "wd"
    wd.mkdir()
    copy_workflow(wd)
    (wd / "transfer.yaml").write_text(
        yaml.safe_dump(
            {
                "corpus": {
                    "source": "dir",
                    "dir": str(rest / "xhtml"),
                    "metadata": str(rest / "metadata.csv"),
                    "n_shards": 2,
                },
                "splits": {"pr_category": None},
                "transfer": {
                    "corpora": [
                        {
                            "name": "pr",
                            "source": "dir",
                            "dir": str(pr / "xhtml"),
                            "metadata": str(pr / "metadata.csv"),
                            "n_shards": 1,
                        }
                    ],
                    # The test's budget (2 minutes on a busy 2-core machine) has no room for ScratchBERT's
                    # pretraining: NPT-Local stands for the trained runs (same rules, another encoder).
                    "runs": ["npt-local"],
                },
                "matching": {"npt": {"epochs": 1, "max_length": 64}},
            }
        )
    )
    config = ["--configfile", "config/config.yaml", "config/smoke.yaml", "transfer.yaml"]
    run = subprocess.run(
        SNAKEMAKE + ["results/tables/transfer.md", "-c2"] + config,
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    res = wd / "results"
    pool_info = json.loads((res / "transfer/pr/pool/mixed/conservation.json").read_text())
    kept = pd.read_parquet(res / "transfer/pr/data/pairs.parquet")
    assert (
        pool_info["pairs"] == len(kept) > 50
        and pool_info["shared_articles"] == 0 == pool_info["duplicate_pairs"]
    )
    articles = pd.read_parquet(res / "transfer/pr/corpus/articles.parquet")
    assert set(articles["primary_category"]) == {"math.PR"}
    test, train = read_parts(res / "transfer/pr/pool/mixed/conservation.parquet", ["test", "train"])
    in_train = read_parts(res / "replaced/mixed/conservation.parquet", ["train"])[0]
    assert (
        train["pair_id"].tolist() == in_train["pair_id"].tolist()
    )  # TF-IDF is fitted on the training corpus
    assert set(test["article_id"]) == set(kept["article_id"])
    table = pd.read_csv(res / "tables/transfer.csv").set_index("Model")
    table = table[
        [c for c in table.columns if not c.endswith((" lo", " hi"))]
    ]  # the intervals' bounds
    assert table.index.tolist() == [
        "NPT-Local-Local",
        "NPT-Local-Global",
        "TF-IDF-Local",
        "TF-IDF-Global",
        "BM25-Local",
        "BM25-Global",
        "NPT-Local + BM25-Local (fusion, this project)",
        "NPT-Local + BM25-Global (fusion, this project)",
    ]
    assert (
        table.notna().sum().sum() == 8 * 4 - 4 * 2
    )  # every cell but the MRR of global decoding (no notes)
    pool_mrr = next(c for c in table.columns if c.startswith("pr MRR"))
    chance = np.mean(1.0 / np.arange(1, len(kept) + 1)) * 100
    # One domain, one notation: harder than the in-corpus test part of seven categories, but above chance.
    assert (
        table.loc["TF-IDF-Local", pool_mrr] > 1.5 * chance
        and table.loc["BM25-Local", pool_mrr] > 1.5 * chance
    )
    for method in ("npt-local", "tfidf-none", "bm25-none", "npt+bm25-local"):
        summary = json.loads(
            (
                res / f"transfer/pr/eval/mixed/{method}/conservation-both/test-conservation.json"
            ).read_text()
        )
        assert summary["n"] == len(kept)
    assert "In-corpus MRR" in (res / "tables/transfer.md").read_text()
    # the fusion's λ is chosen once, on the training corpus's dev part, and used on the pool unchanged
    chosen = json.loads((res / "runs/mixed/npt-local/conservation-both/fusion.json").read_text())
    assert chosen["part"] == "dev" and chosen["weight"] in chosen["weights"]
    for root in (res / "eval", res / "transfer/pr/eval"):
        fused = json.loads(
            (root / "mixed/npt+bm25-local/conservation-both/test-conservation.json").read_text()
        )
        assert fused["weight"] == chosen["weight"] and fused["normalize"] == chosen["normalize"]
