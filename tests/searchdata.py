"""The demo pipeline in miniature for the search tests: the demo corpus (default 72 articles),
extraction, linearization, filters, the Mixed split, conservation level, an NPT model trained a few
epochs, its test-part evaluation, and a model index of all parts. Built once per test run
(conftest.py's `search_demo` fixture) through the same package functions the workflow
rules call, so its files have the workflow's columns and layout."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pandas as pd
import torch

from proofmatch.artifacts import write_parquet
from proofmatch.config import load_config
from proofmatch.data import corpus, extract, filters, linearize, replace, splits
from proofmatch.demo import generate as demo
from proofmatch.evaluation.evaluate import EvalSettings, evaluate_run
from proofmatch.search.build import build_index

REPO = Path(__file__).resolve().parents[1]
EPOCHS = 3


def build(root: Path) -> dict[str, Path]:
    """Every artifact under ``root`` (skipped when ``root/done`` says a previous test built it)."""
    p = {
        "corpus": root / "demo_corpus",
        "manifest": root / "corpus/manifest.parquet",
        "articles": root / "corpus/articles.parquet",
        "shard": root / "extract/shard-000.parquet",
        "report": root / "extract/shard-000.report.json",
        "linear": root / "linearize/shard-000.parquet",
        "pairs": root / "data/pairs.parquet",
        "split": root / "splits/mixed.parquet",
        "data": root / "replaced/mixed/conservation.parquet",
        "run": root / "runs/mixed/npt-local/conservation-both",
        "eval": root / "eval/test-conservation.parquet",
        "index": root / "index/npt",
    }
    if (root / "done").exists():
        return p
    cfg = load_config(REPO / "config/config.yaml")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        demo.generate(
            p["corpus"],
            n_articles=cfg["corpus"]["demo"]["n_articles"],
            seed=cfg["corpus"]["demo"]["seed"],
        )
        corpus.write_manifest(
            p["corpus"] / "xhtml", 1, p["corpus"] / "metadata.csv", p["manifest"], p["articles"]
        )
        extract.extract_shard(p["manifest"], 0, p["shard"], p["report"])
        linearize.linearize_shard(p["shard"], p["linear"])
        f = cfg["filter"]
        filters.filter_pairs(
            [str(p["linear"])],
            [str(p["report"])],
            p["pairs"],
            root / "data/audit.parquet",
            root / "data/filter_report.json",
            f["language"],
            f["min_tokens"],
            f["max_tokens"],
        )
        splits.write_splits(p["pairs"], p["articles"], {"mixed": p["split"]}, seed=cfg["seed"])
        replace.replace_split_file(
            p["pairs"], p["split"], "conservation", p["data"], seed=cfg["seed"]
        )
        from proofmatch.models.params import TrainParams
        from proofmatch.models.train import train_run

        params = dataclasses.replace(
            TrainParams.from_config(cfg["matching"], "npt"), epochs=EPOCHS, eval_every=EPOCHS
        )
        train_run(p["data"], p["run"], "npt", "local", "both", params, seed=cfg["seed"])
        evaluate_run(
            p["run"],
            p["data"],
            "test",
            p["eval"],
            p["eval"].with_suffix(".json"),
            settings=EvalSettings.from_config(cfg),
        )
        build_index(
            p["index"],
            p["data"],
            run_dir=p["run"],
            pairs_parquet=p["pairs"],
            articles_parquet=p["articles"],
        )
    finally:
        torch.set_num_threads(n)
    (root / "done").write_text("ok\n")
    return p


def mini_demo(tmp_path_factory) -> dict[str, Path]:
    """The test run's one build (see the module docstring); ``PROOFMATCH_SEARCH_DEMO`` names a
    folder to keep it in between test runs while working on these tests."""
    root = Path(
        os.environ.get("PROOFMATCH_SEARCH_DEMO") or tmp_path_factory.getbasetemp() / "search-demo"
    )
    root.mkdir(exist_ok=True)
    return build(root)


def hostile_row(pairs_parquet: Path, out: Path) -> tuple[Path, str]:
    """A copy of a replaced split whose first test pair's proof XHTML holds a script, an
    ``onerror`` image, a ``javascript:`` link and an event handler inside MathML; returns the
    pairs file to index with and the pair id."""
    pairs = pd.read_parquet(pairs_parquet)
    pid = str(pairs["pair_id"].iloc[0])
    evil = (
        '<div class="ltx_proof"><p>Proof. <script>document.title="pwned"</script>'
        '<img src="x" onerror="document.title=\'pwned\'"/>'
        "<a href=\"javascript:document.title='pwned'\">click</a> Clearly "
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><mi onclick="document.title=\'pwned\'">x</mi>'
        "<mo>=</mo><mn>1</mn></math>.<style>body{display:none}</style>"
        '<iframe src="https://example.org/"></iframe></p></div>'
    )
    pairs.loc[0, "proof_xml"] = evil
    write_parquet(pairs, out)
    os.utime(out)
    return out, pid


FUSION_WEIGHT = (
    0.75  # the λ the test run's fusion.json records (any value > 0 exercises both halves)
)


def fusion_index(
    demo: dict[str, Path], root: Path, parts: tuple[str, ...] = ("train", "dev", "test")
) -> Path:
    """A fusion index of the mini demo's NPT run, its λ read from the run's ``fusion.json`` as the
    workflow's fusion rule writes it (a copy of the run, so the shared run stays as built)."""
    import json
    import shutil

    run = root / "run"
    if not run.exists():
        shutil.copytree(demo["run"], run)
        (run / "fusion.json").write_text(
            json.dumps({"weight": FUSION_WEIGHT, "dev_mrr": {"0.75": 0.5}})
        )
    out = root / ("fusion-" + "-".join(parts))
    if not (out / "index.json").exists():
        n = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            build_index(
                out,
                demo["data"],
                run_dir=run,
                method="fusion",
                pairs_parquet=demo["pairs"],
                articles_parquet=demo["articles"],
                parts=list(parts),
            )
        finally:
            torch.set_num_threads(n)
    return out
