"""bench/gpu/paper_size.py (the one-call GPU check of config/paper.yaml) runs its GPU
code path at tiny sizes on the CPU and writes the GPU run's files; its plan fits the 6-minute
call; config/stacks-gpu.yaml (the paper's sizes on Stacks for one GPU) validates and plans.

The tiny run starts no workflow job (it calls the package's functions), so it is not marked slow;
it takes about a minute on the shared 2-core machine."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "bench/gpu/paper_size.py"
GPU_CONFIGS = ["config/config.yaml", "config/stacks.yaml", "config/stacks-gpu.yaml"]


def load_script():
    spec = importlib.util.spec_from_file_location("paper_size", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_plan_fits_the_call_and_asks_the_three_questions():
    ps = load_script()
    assert sum(ps.PLAN.values()) == ps.BUDGET <= 360  # <= 6 minutes on one H200
    assert ps.PLAN["mlm"] >= 120  # MLM at least 2 minutes
    assert ps.NPT_STEPS >= 2450 and ps.NPT_EVAL_EVERY == 245 and ps.FT_STEPS >= 500
    npt = list(ps.NPT_RUNS.values())
    assert {
        "optimizer": "asgd",
        "learning_rate": 0.005,
        "scale_scores": False,
        "w_init": "bilinear",
    } in npt
    assert (
        any(r.get("w_init") == "zeros" for r in npt) and {} in npt
    )  # {}: paper.yaml's own settings
    ft = {
        (r["pooling"], r["optimizer"], r["learning_rate"], r["scale_scores"])
        for r in ps.FT_RUNS.values()
    }
    assert ft == {
        (pool, *opt)
        for pool in ("cls", "mean")
        for opt in (("asgd", 0.002, False), ("adamw", 0.0001, True))
    }


def test_clock_cuts_a_part_so_later_parts_keep_their_plan():
    ps = load_script()
    clock = ps.Clock({"a": 10, "b": 20}, budget=25)
    now = time.perf_counter()
    assert clock.deadline(10, ["b"]) - now == pytest.approx(5, abs=0.5)  # 25 - 20 left for a
    assert clock.deadline(3, ["b"]) - now == pytest.approx(3, abs=0.5)  # its own share first
    assert clock.deadline(10, ["b"], at_least=8) - now == pytest.approx(8, abs=0.5)


def test_prepare_copies_the_split_of_a_results_tree_and_trains_the_tokenizer(tmp_path):
    """prepare --results: the Stacks run's results/replaced/mixed/conservation.parquet (here a toy
    one) and a WordPiece tokenizer of its train part, with a manifest, small enough to carry."""
    sys.path.insert(0, str(REPO / "tests"))
    from toydata import toy_pairs

    from proofmatch.artifacts import write_parquet

    results = tmp_path / "results"
    (results / "replaced/mixed").mkdir(parents=True)
    write_parquet(toy_pairs(n_articles=12, seed=2), results / "replaced/mixed/conservation.parquet")
    data = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "prepare", "--results", str(results), "--data", str(data)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    manifest = json.loads((data / "manifest.json").read_text())
    assert (
        manifest["split"] == "conservation.parquet"
        and not manifest["tiny"]
        and manifest["wheels"] == []
    )
    assert (data / "conservation.parquet").read_bytes() == (
        results / "replaced/mixed/conservation.parquet"
    ).read_bytes()
    assert (data / "tokenizer/tokenizer.json").exists() and manifest["bytes"] < 60 * 2**20
    missing = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "prepare",
            "--results",
            str(tmp_path / "none"),
            "--data",
            str(tmp_path / "d2"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert missing.returncode != 0 and "is missing" in missing.stderr


def test_tiny_run_writes_the_gpu_runs_json_table_and_archive(tmp_path):
    out = tmp_path / "out"
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "run", "--tiny", "--out", str(out), "--threads", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.perf_counter() - t0
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert wall <= 120, f"--tiny took {wall:.0f} s (the limit: 2 minutes)"
    ps = load_script()
    with tarfile.open(out / "paper_size.tgz") as tar:
        names = set(tar.getnames())
        assert {
            "paper_size/paper_size.json",
            "paper_size/paper_size.md",
            "paper_size/pretrain_log.csv",
        } <= names
        result = json.loads(tar.extractfile("paper_size/paper_size.json").read())
        table = tar.extractfile("paper_size/paper_size.md").read().decode()
    assert result == json.loads((out / "paper_size/paper_size.json").read_text())
    assert result["meta"]["tiny"] and result["wall_seconds"] <= result["meta"]["budget_s"] + 30
    assert list(result["npt"]) == list(ps.NPT_RUNS) and list(result["finetune"]) == list(ps.FT_RUNS)
    for name, r in {**result["npt"], **result["finetune"]}.items():
        assert "error" not in r, (name, r)
        assert 1 <= r["steps_done"] <= r["steps_planned"], (name, r)
        assert r["stopped_by_deadline"] == (r["steps_done"] < r["steps_planned"])
        assert r["curve"][-1]["step"] == r["steps_done"] and 0 < r["final_dev_mrr"] <= 1
        assert 0 < r["test_mrr"] <= 1 and r["n_dev"] > 0
        assert f"| {name} |" in table
    yaml_run = result["npt"]["paper.yaml (adamw 1e-3, /d, W = I)"]["settings"]
    assert (yaml_run["optimizer"], yaml_run["scale_scores"]) == ("adamw", True)
    faithful = result["npt"]["paper (asgd 5e-3, unscaled, W bilinear)"]["settings"]
    assert (
        faithful["optimizer"],
        faithful["learning_rate"],
        faithful["scale_scores"],
        faithful["w_init"],
    ) == ("asgd", 0.005, False, "bilinear")
    pools = {r["settings"]["pooling"] for r in result["finetune"].values()}
    assert pools == {"cls", "mean"}
    mlm = result["mlm"]
    assert "error" not in mlm and mlm["steps_done"] >= 1 and mlm["tokens_s"] > 0
    assert mlm["share_of_measured_peak"] is not None and mlm["val_log"]
    assert {(b["method"], b["part"]) for b in result["baselines"]} == {
        (m, p) for m in ("bm25", "tfidf") for p in ("dev", "test")
    }
    assert result["throughput"]["npt_steps_s"] > 0 and result["throughput"]["mlm_tokens_s"] > 0
    assert set(result["questions"]) >= {
        "npt_trains_within_2450_steps",
        "bert_leaves_chance",
        "pooling_best_dev_mrr",
    }
    assert set(result["part_seconds"]) == set(ps.TINY_PLAN)
    assert table.startswith("# paper_size.py: TINY") and "Throughput: NPT" in table


def test_stacks_gpu_config_has_the_papers_sizes_and_plans(stacks_dir):
    """The config validates over stacks.yaml with paper.yaml's sizes, and `all` plans (a dry run)."""
    from proofmatch.config import load_config

    cfg = load_config(*(REPO / c for c in GPU_CONFIGS))
    paper = load_config(REPO / "config/config.yaml", REPO / "config/paper.yaml")
    npt = cfg["matching"]["npt"]
    assert (
        npt["d_model"],
        npt["n_layers"],
        npt["n_heads"],
        npt["d_k"],
        npt["batch_size"],
        npt["max_length"],
    ) == (300, 2, 4, 128, 60, 200)
    for key in (
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "intermediate_size",
        "max_length",
        "batch_size",
        "learning_rate",
        "mlm_probability",
        "compile",
    ):
        assert cfg["pretrain"][key] == paper["pretrain"][key], key
    for block in ("npt", "bert"):
        for key in ("optimizer", "learning_rate", "scale_scores", "batch_size"):
            assert cfg["matching"][block][key] == paper["matching"][block][key], (block, key)
    assert (
        cfg["tokenizer"] == paper["tokenizer"]
        and cfg["corpus"]["dir"]
        == load_config(REPO / "config/config.yaml", REPO / "config/stacks.yaml")["corpus"]["dir"]
    )
    dry = subprocess.run(
        [sys.executable, "-m", "snakemake", "all", "-n", "--configfile", *GPU_CONFIGS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    planned = set(re.findall(r"^rule (\w+):", dry.stdout, flags=re.M)) | set(
        re.findall(r"^(\w+)\s+\d+$", dry.stdout, flags=re.M)
    )
    assert {
        "train_tokenizer",
        "pretrain_scratchbert",
        "train_matcher",
        "evaluate_run",
    } <= planned, dry.stdout[-2000:]


def test_missing_modules_are_installed_from_the_carried_wheels(tmp_path, monkeypatch):
    """The GPU machine lacks lap and jsonschema: ensure_imports installs the carried wheels into the
    site folder with pip --no-index (the recipe) and puts it on the path; here a one-module wheel
    stands for them."""
    import zipfile

    ps = load_script()
    name = "ps_fake_needed"
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    dist = f"{name}-0.1.dist-info"
    files = {
        f"{name}.py": "VALUE = 32\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{f},,\n" for f in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(wheels / f"{name}-0.1-py3-none-any.whl", "w") as whl:
        for f, text in files.items():
            whl.writestr(f, text)
    monkeypatch.setattr(ps, "NEEDED", (name,))
    monkeypatch.setattr(ps, "SITE", tmp_path / "site")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "")
    with pytest.raises(SystemExit, match="no wheels"):
        ps.ensure_imports(tmp_path / "none")
    got = ps.ensure_imports(wheels)
    assert got == {"missing": [name], "installed": [f"{name}-0.1-py3-none-any.whl"]}
    assert importlib.import_module(name).VALUE == 32 and (tmp_path / "site" / f"{name}.py").exists()
    sys.modules.pop(name, None)
