"""`proofmatch <command>`: every command answers --help, bad commands fail clearly, and the
commands that make results (tokenizer, pretrain, train, evaluate, baselines, tables, figure) run
on a tiny toy corpus through ``proofmatch.cli.main`` with explicit paths (any working directory)
and write what they promise. Each step takes seconds on one thread.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml
from artifacts import check_eval_json, check_eval_table, check_figure, check_table7, eval_path
from toydata import toy_pairs

from proofmatch import cli
from proofmatch import experiments as X
from proofmatch.artifacts import write_parquet
from proofmatch.config import deep_merge, load_config
from proofmatch.evaluation import bootstrap as B

REPO = Path(__file__).resolve().parents[1]
TINY = {
    "tokenizer": {"vocab_size": 150, "min_frequency": 2},
    "pretrain": {
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_length": 32,
        "epochs": 1,
        "batch_size": 8,
        "learning_rate": 2e-3,
        "eval_every_steps": 5,
    },
    "matching": {
        "max_length": 64,
        "npt": {
            "d_model": 16,
            "n_layers": 1,
            "n_heads": 2,
            "d_k": 8,
            "epochs": 3,
            "batch_size": 30,
            "eval_every": 1,
            "max_length": 64,
            "learning_rate": 0.01,
        },
        "bert": {"epochs": 1, "batch_size": 16, "eval_every": 1},
    },
}

pytestmark = pytest.mark.usefixtures("one_thread")


def run(*argv: object) -> int:
    return cli.main([str(a) for a in argv])


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_answers_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    assert f"proofmatch {command}" in capsys.readouterr().out


def test_usage_and_unknown_command(capsys):
    assert cli.main([]) == 2
    assert cli.main(["--help"]) == 0
    assert "extract" in capsys.readouterr().out
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err


def test_version(capsys):
    from proofmatch import __version__

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"proofmatch {__version__}"


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_option_has_help_and_shows_its_default(command):
    """Each option says what it is, and one with a default shows it in --help."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(
        prog=f"proofmatch {command}", formatter_class=cli._HelpFormatter
    )
    importlib.import_module(cli.COMMANDS[command][0]).add_arguments(parser)
    parser.format_help()  # renders with every default
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        assert action.help, (command, action.option_strings or action.dest)
        if action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            assert "default" in cli._HelpFormatter("x")._get_help_string(action), (
                command,
                action.option_strings,
            )


def test_search_refuses_before_torch_and_explains_a_stale_index(tmp_path):
    """An oversized query, a bad page or an unbalanced $ is refused before the index (and torch)
    is loaded; a stale index is one line, no traceback."""
    import subprocess
    import sys

    stale = tmp_path / "old"
    stale.mkdir()
    (stale / "index.json").write_text(json.dumps({"format": 0, "method": "bm25"}))
    code = (
        "import sys; from proofmatch import cli\n"
        "rcs = [cli.main(['search', sys.argv[1], 'x' * 9000]), cli.main(['search', sys.argv[1], 'let $x be']),"
        " cli.main(['search', sys.argv[1], 'x', '--page', '0']), cli.main(['search', sys.argv[1], 'x']),"
        " cli.main(['search', sys.argv[1] + '/missing', 'x'])]\n"
        "print(rcs, 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(stale)], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "[2, 2, 2, 2, 2] False", done.stderr
    # the hand-made index has no digest: one warning names it as an older version's
    assert done.stderr.count("has no digest: written by a proofmatch older") == 1
    err = [line for line in done.stderr.splitlines() if "has no digest" not in line]
    assert "Traceback" not in done.stderr and len(err) == 5
    assert (
        "query too long: 9000 characters" in err[0]
        and "unbalanced $" in err[1]
        and "pages start at 1" in err[2]
    )
    assert (
        "is stale or incomplete" in err[3]
        and err[3].count("rebuild it with `proofmatch index`") == 1
    )
    assert "cannot open index" in err[4]


# ----------------------------------------------------------------------------- tiny runs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A toy replaced-split Parquet and a complete config (the demo config with tiny models)."""
    d = tmp_path_factory.mktemp("cli")
    write_parquet(toy_pairs(n_articles=12, pairs_per_article=5, seed=4), d / "data.parquet")
    config = deep_merge(load_config(REPO / "config/config.yaml"), TINY)
    (d / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    load_config(d / "config.yaml")
    parts = pd.read_parquet(d / "data.parquet")["part"].value_counts()
    assert min(parts["dev"], parts["test"]) >= 5, parts
    return SimpleNamespace(dir=d, data=d / "data.parquet", config=d / "config.yaml", parts=parts)


@pytest.fixture(scope="module")
def npt_runs(tiny):
    """Two NPT-Local runs (seeds 0 and 1) trained with `proofmatch train`."""
    runs = []
    for seed in (0, 1):
        out = tiny.dir / f"npt-{seed}"
        assert (
            run(
                "train",
                tiny.data,
                "--out",
                out,
                "--encoder",
                "npt",
                "--mode",
                "local",
                "--view",
                "both",
                "--config",
                tiny.config,
                "--seed",
                seed,
                "--log",
                tiny.dir / f"train-{seed}.log",
            )
            == 0
        )
        runs.append(out)
    return runs


def test_train_writes_a_loadable_run(tiny, npt_runs):
    from proofmatch.models.matcher import load_matcher

    for seed, out in enumerate(npt_runs):
        metrics = json.loads((out / "metrics.json").read_text())
        assert (metrics["encoder"], metrics["mode"], metrics["view"], metrics["seed"]) == (
            "npt",
            "local",
            "both",
            seed,
        )
        assert (
            metrics["epochs"] == TINY["matching"]["npt"]["epochs"]
            and 1 <= metrics["best_epoch"] <= 3
        )
        assert metrics["n_train"] == tiny.parts["train"] and metrics["n_dev"] == tiny.parts["dev"]
        assert 0.0 < metrics["dev_mrr"] <= 1.0 and 0.0 <= metrics["dev_acc"] <= metrics["dev_mrr"]
        assert (out / "curve.png").stat().st_size > 0
        m = load_matcher(out, device="cpu")
        assert (
            m.config.encoder == "npt"
            and m.config.npt["d_model"] == TINY["matching"]["npt"]["d_model"]
        )
    # --log: one line per epoch (eval_every 1), the best of which is the run's dev MRR
    logged = re.findall(
        r"epoch (\d+): loss [\d.]+  dev MRR ([\d.]+)", (tiny.dir / "train-0.log").read_text()
    )
    assert [int(e) for e, _ in logged] == [1, 2, 3]
    best = json.loads((npt_runs[0] / "metrics.json").read_text())["dev_mrr"]
    assert max(float(m) for _, m in logged) == pytest.approx(best, abs=5e-5)
    # the seed changes the run
    a, b = (json.loads((o / "metrics.json").read_text()) for o in npt_runs)
    assert a["final_loss"] != b["final_loss"]


def test_evaluate_scores_the_saved_best_model(tiny, npt_runs, tmp_path):
    """`evaluate` on the dev part reproduces the dev MRR the training selected its model by; on
    the test part it writes one row per statement and a JSON that agrees with it."""
    out = npt_runs[0]
    best = json.loads((out / "metrics.json").read_text())
    for part in ("dev", "test"):
        js = tmp_path / f"{part}-conservation.json"
        assert (
            run(
                "evaluate",
                "--run-dir",
                out,
                "--data",
                tiny.data,
                "--part",
                part,
                "--out-parquet",
                js.with_suffix(".parquet"),
                "--out-json",
                js,
                "--topk",
                5,
                "--seed",
                3,
            )
            == 0
        )
        metrics = json.loads(js.read_text())
        assert (
            metrics["n"] == tiny.parts[part]
            and metrics["part"] == part
            and metrics["method"] == "model"
        )
        assert metrics["global_method"] == "exact"
        check_eval_json(js)
        ranks = pd.read_parquet(js.with_suffix(".parquet"))
        assert ranks["topk_ids"].map(len).eq(5).all()
    dev = json.loads((tmp_path / "dev-conservation.json").read_text())
    assert dev["mrr"] == pytest.approx(best["dev_mrr"], abs=1e-5)


def test_baselines_rank_every_test_statement(tiny, tmp_path):
    for method in ("tfidf", "tfidf_paper", "bm25"):
        js = tmp_path / f"{method}.json"
        assert (
            run(
                "baselines",
                "--method",
                method,
                "--data",
                tiny.data,
                "--part",
                "test",
                "--out-parquet",
                js.with_suffix(".parquet"),
                "--out-json",
                js,
                "--topk",
                5,
            )
            == 0
        )
        metrics = json.loads(js.read_text())
        assert metrics["method"] == method and metrics["n"] == tiny.parts["test"]
        check_eval_json(js)
    # the toy proofs repeat their statement's symbols twice: BM25 ranks far above chance (H_n / n)
    n = tiny.parts["test"]
    assert (
        json.loads((tmp_path / "bm25.json").read_text())["mrr"]
        > 2 * sum(1 / k for k in range(1, n + 1)) / n
    )


def test_pretrain_then_train_scratchbert(tiny, tmp_path):
    tok, sb = tmp_path / "tok", tmp_path / "sb"
    assert run("tokenizer", tiny.data, "--out", tok, "--config", tiny.config) == 0
    assert (
        run(
            "pretrain",
            tiny.data,
            "--tokenizer",
            tok,
            "--out",
            sb,
            "--config",
            tiny.config,
            "--seed",
            2,
        )
        == 0
    )
    from transformers import AutoTokenizer, BertConfig

    metrics = json.loads((sb / "pretrain_metrics.json").read_text())
    steps = math.ceil(metrics["train_chunks"] / TINY["pretrain"]["batch_size"])
    assert metrics["steps"] == steps and metrics["epochs"] == 1 and metrics["seed"] == 2
    curve = pd.read_csv(sb / "pretrain_log.csv")
    assert list(curve["step"]) == list(range(5, steps + 1, 5)) + ([steps] if steps % 5 else [])
    assert metrics["best_val_loss"] == pytest.approx(curve["val_loss"].min())
    config = BertConfig.from_pretrained(sb)
    assert (config.hidden_size, config.num_hidden_layers) == (32, 1)
    assert (
        config.vocab_size
        == len(AutoTokenizer.from_pretrained(sb))
        <= TINY["tokenizer"]["vocab_size"]
    )
    out = tmp_path / "sb-local"
    assert (
        run(
            "train",
            tiny.data,
            "--out",
            out,
            "--encoder",
            "scratchbert",
            "--mode",
            "local",
            "--view",
            "both",
            "--config",
            tiny.config,
            "--pretrained-dir",
            sb,
        )
        == 0
    )
    trained = json.loads((out / "metrics.json").read_text())
    assert (
        trained["encoder"] == "scratchbert"
        and trained["epochs"] == 1
        and 0 < trained["dev_mrr"] <= 1
    )


# ----------------------------------------------------------------------------- tables and figure


def fake_eval(path: Path, n: int, rng: np.random.Generator) -> float:
    """An evaluation JSON (with its per-statement block) and Parquet of ``n`` statements with random ranks; return its MRR."""
    ids = [f"p{i}" for i in range(n)]
    gold = rng.integers(1, n + 1, n)
    top1 = rng.choice(ids, n)
    top1[gold == 1] = np.array(ids)[gold == 1]
    glob = rng.permutation(ids)
    times = pd.Series(top1).value_counts().reindex(ids, fill_value=0).to_numpy()
    counts = {
        ">=20": (times >= 20).sum(),
        ">=10": (times >= 10).sum(),
        ">=5": (times >= 5).sum(),
        ">=2": (times >= 2).sum(),
        "=1": (times == 1).sum(),
        "<1": (times == 0).sum(),
    }
    metrics = {
        "n": n,
        "mrr": float(np.mean(1 / gold)),
        "acc": float(np.mean(gold == 1)),
        "global_acc": float(np.mean(glob == np.array(ids))),
        "global_method": "exact",
        "part": "test",
        "hubness": {b: {"proofs": int(c), "percent": 100 * int(c) / n} for b, c in counts.items()},
    }
    if "+bm25-" in str(path):  # a fusion records the weight it was scored with
        metrics.update(
            weight=float(rng.choice([0.5, 1.0, 2.0])), normalize="zscore", lexical="bm25"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    where = {p: i for i, p in enumerate(ids)}  # the per-statement block holds proof positions
    block = B.statements_block(ids, gold, [where[p] for p in top1], [where[p] for p in glob])
    path.write_text(json.dumps({**metrics, B.STATEMENTS: block}))
    pd.DataFrame({"pair_id": ids, "gold_rank": gold, "top1": top1, "global_pred": glob}).to_parquet(
        path.with_suffix(".parquet")
    )  # the evaluation's Parquet, which check_eval_json holds the JSON to
    return metrics["mrr"]


def eval_tree(root: Path, mathbert: bool = True) -> list[Path]:
    """Every evaluation the tables read (docs/architecture.md layout), each with other numbers;
    the dev evaluation of Table 7 last."""
    levels = ("conservation", "partial", "full", "trans")
    bilinear = ("npt", "scratchbert") + (("mathbert",) if mathbert else ())
    specs = [
        ("mixed", e, m, lv, "both", lv)
        for e in bilinear
        for m in X.ENCODER_MODES[e]
        for lv in levels
    ]
    triplet = ("specter",) + (("mathspecter",) if mathbert else ())
    specs += [("mixed", e, "triplet", lv, "both", lv) for e in triplet for lv in levels]
    specs += [
        (s, "scratchbert", "local", tr, "both", te)
        for s in ("mixed", "unmixed")
        for tr in levels
        for te in levels
    ]
    specs += [
        ("mixed", e, "local", lv, v, lv)
        for e in ("npt", "scratchbert")
        for v in ("text", "math", "both")
        for lv in ("conservation", "full")
    ]
    specs += [
        ("pr", "scratchbert", "local", tr, "both", te)
        for tr in ("conservation", "partial", "partial_p", "full", "full_p")
        for te in ("conservation", "partial_p")
    ]
    specs += [
        ("mixed", m, "none", lv, "both", lv)
        for m in ("tfidf", "tfidf_paper", "bm25")
        for lv in levels
    ]
    specs += [
        ("mixed", f"{e}+bm25", "local", lv, "both", lv)
        for e in ("npt", "scratchbert")
        for lv in levels
    ]
    rng = np.random.default_rng(0)
    paths = sorted({eval_path(root, s, e, m, lv, v, "test", te) for s, e, m, lv, v, te in specs})
    for p in paths:
        fake_eval(p, 40, rng)
    dev = eval_path(
        root, "mixed", "scratchbert", "local", "conservation", "both", "dev", "conservation"
    )
    fake_eval(dev, 60, rng)
    return paths + [dev]


def test_tables_put_each_evaluation_in_its_cell(tmp_path):
    root, out = tmp_path / "eval", tmp_path / "tables"
    paths = eval_tree(root)
    assert run("tables", "--eval-root", root, "--out-dir", out) == 0
    used = set()
    for table in ("table3", "table4", "table5", "table6", "baselines"):
        used |= set(check_eval_table(out, table, root))
    check_table7(out, paths[-1])
    assert used == set(paths[:-1])  # every evaluation made it into a table
    # a missing evaluation is an error, or with --allow-missing its row says so and has no numbers
    gone = eval_path(root, "mixed", "npt", "local", "full", "both", "test", "full")
    gone.unlink()
    with pytest.raises(FileNotFoundError, match="missing"):
        run("tables", "--eval-root", root, "--out-dir", out)
    assert run("tables", "--eval-root", root, "--out-dir", out, "--allow-missing") == 0
    assert f"not run: no result ({gone.name} missing)" in (out / "table3.md").read_text()
    check_eval_table(out, "table3", root)


def test_tables_config_without_mathbert_needs_no_mathbert_results(tmp_path):
    """The demo config has no MathBERT (matching.mathbert: null): `tables --config` should mark its
    rows not run, as the workflow does, instead of asking for its evaluations."""
    root, out = tmp_path / "eval", tmp_path / "tables"
    eval_tree(root, mathbert=False)
    assert (
        run(
            "tables", "--eval-root", root, "--out-dir", out, "--config", REPO / "config/config.yaml"
        )
        == 0
    )
    assert "not run: no MathBERT checkpoint configured" in (out / "table3.md").read_text()
    check_eval_table(out, "table3", root)


def test_tables_catch_an_edited_evaluation(tmp_path):
    """The check itself: a JSON changed after the tables were rendered no longer matches its cell."""
    root, out = tmp_path / "eval", tmp_path / "tables"
    paths = eval_tree(root)
    assert run("tables", "--eval-root", root, "--out-dir", out) == 0
    target = eval_path(root, "mixed", "npt", "local", "full", "both", "test", "full")
    edited = json.loads(target.read_text())
    edited["mrr"] = edited["mrr"] / 2
    target.write_text(json.dumps(edited))
    with pytest.raises(AssertionError, match="table says"):
        check_eval_table(out, "table3", root)
    with pytest.raises(AssertionError, match="mrr"):
        check_eval_json(target)
    assert target in paths


def test_figure_explains_two_pairs_under_both_runs(tiny, npt_runs, tmp_path):
    png, pdf, log = tmp_path / "figure2.png", tmp_path / "figure2.pdf", tmp_path / "figure2.log"
    assert (
        run(
            "figure",
            "--run-conservation",
            npt_runs[0],
            "--run-full",
            npt_runs[1],
            "--data",
            tiny.data,
            "--out-png",
            png,
            "--out-pdf",
            pdf,
            "--samples",
            30,
            "--seed",
            1,
            "--log",
            log,
        )
        == 0
    )
    check_figure(png, pdf, panels=4)
    text = log.read_text()
    for k, c2 in ((1, "ab"), (2, "cd")):
        for c, level in zip(c2, ("symbol conservation", "full symbol replacement")):
            # the model and the level it was trained on (figure.model_label: the run's folder)
            assert re.search(rf"\({c}\) Example {k}: \S+ trained with {level} — ", text), (c, text)
