"""Training and pretraining jobs killed with SIGKILL (between checkpoints, or halfway through
writing one) and rerun resume from their last checkpoint and end exactly like uninterrupted runs.

Every test asserts that the rerun *resumed* (its log line, the epoch or step it started from, and
that it did not redo the finished part): a restart from scratch gives the same bytes, so equal
results alone would not show that resuming works. Before each rerun the killed job's outputs are
deleted, as Snakemake deletes a failed job's declared outputs; the resume state is not one of them,
and the finished rerun removes it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from toydata import toy_pairs

from proofmatch.artifacts import write_parquet

ROOT = Path(__file__).resolve().parents[1]
EPOCHS = 6
MLM = dict(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    max_length=32,
    mlm_probability=0.2,
    epochs=2,
    batch_size=8,
    learning_rate=2e-3,
    eval_every_steps=5,
    warmup_fraction=0.1,
)

# One run in a fresh process. KILL_AT_SAVE=n: the process SIGKILLs itself halfway through writing
# its n-th checkpoint, i.e. with half a file in the temporary `checkpoint/.state.pt.*` beside the
# previous checkpoint.
RUNNER = textwrap.dedent("""
    import importlib, json, logging, os, signal, sys
    import torch

    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    torch.set_num_threads(1)
    kill_at, saves, real_save = int(os.environ.get("KILL_AT_SAVE", "0")), [], torch.save

    def save(obj, f, *args, **kwargs):
        if ".state.pt." in os.fspath(f):
            saves.append(f)
            if len(saves) == kill_at:
                with open(f, "wb") as half:
                    half.write(b"PK half a checkpoint")
                os.kill(os.getpid(), signal.SIGKILL)
        return real_save(obj, f, *args, **kwargs)

    torch.save = save
    target, args = json.loads(sys.argv[1])
    module, name = target.split(":")
    result = getattr(importlib.import_module(module), name)(*args)
    sys.exit(result if isinstance(result, int) else 0)
""")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The module's folder: the toy corpus and the runner script."""
    d = tmp_path_factory.mktemp("resume")
    write_parquet(toy_pairs(n_articles=12, pairs_per_article=6, seed=2), d / "toy.parquet")
    (d / "runner.py").write_text(RUNNER)
    return d


def _command(work: Path, target: str, *args) -> list[str]:
    """``target(*args)`` (``module:function``, JSON arguments) in a fresh process."""
    return [sys.executable, str(work / "runner.py"), json.dumps([target, list(args)])]


def _run(work: Path, target: str, *args, kill_at_save: int = 0) -> subprocess.CompletedProcess:
    """Run :func:`_command` to its end; its stderr is the run's log."""
    return subprocess.run(
        _command(work, target, *args),
        env=_env(KILL_AT_SAVE=str(kill_at_save)),
        capture_output=True,
        text=True,
        timeout=180,
    )


def _state(resume_dir: Path) -> dict:
    return torch.load(resume_dir / "state.pt", map_location="cpu", weights_only=False)


def _delete_outputs(*paths: Path) -> None:
    """What Snakemake does to a failed job's declared outputs (files and directory() folders)."""
    for p in paths:
        shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)


def _leftovers(run: Path) -> list[Path]:
    """Hidden files and folders (what a killed write leaves) anywhere in a run folder."""
    return list(run.rglob(".*"))


# ---------------------------------------------------------------- training


def _train(work: Path, out: Path, optimizer: str) -> tuple[str, list[str]]:
    """``proofmatch train`` of a small NPT hybrid run into ``out``."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["matching"]["npt"].update(
        eval_every=2,
        d_model=32,
        n_layers=1,
        n_heads=2,
        d_k=16,
        epochs=EPOCHS,
        batch_size=20,
        learning_rate=0.01,
        max_length=48,
        optimizer=optimizer,
    )
    config = work / f"config-{optimizer}.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return "proofmatch.cli:main", [
        "train",
        str(work / "toy.parquet"),
        "--out",
        str(out),
        "--encoder",
        "npt",
        "--mode",
        "hybrid",
        "--view",
        "both",
        "--config",
        str(config),
        "--seed",
        "11",
    ]


@pytest.fixture(scope="module")
def reference(work):
    """Uninterrupted training runs, one per optimizer (made on first use)."""
    runs: dict[str, Path] = {}

    def get(optimizer: str) -> Path:
        if optimizer not in runs:
            runs[optimizer] = work / f"reference-{optimizer}"
            done = _run(work, *_train(work, runs[optimizer], optimizer))
            assert done.returncode == 0, done.stderr
        return runs[optimizer]

    return get


def _assert_resumed_and_equal(run: Path, ref: Path, log: str, saved: dict) -> None:
    """The rerun (its log ``log``) resumed after the epoch of the checkpoint ``saved``, trained only
    the epochs after it, and ended like the uninterrupted reference run."""
    done = saved["epoch"]
    assert f"train: resuming {run} after epoch {done}" in log, log
    evaluated = [e for e in range(1, EPOCHS + 1) if e % 2 == 0 or e == EPOCHS]  # eval_every 2
    assert [e for e in evaluated if f"epoch {e}: loss" in log] == [
        e for e in evaluated if e > done
    ], log
    hist = pd.read_csv(run / "metrics.csv")
    # the finished epochs' rows come from the checkpoint (their timings too): they were not retrained
    assert hist["train_seconds"].iloc[:done].tolist() == [
        r["train_seconds"] for r in saved["history"]
    ]
    assert (run / "metrics.json").read_bytes() == (ref / "metrics.json").read_bytes()
    a, b = (pd.read_csv(d / "metrics.csv").drop(columns="train_seconds") for d in (run, ref))
    pd.testing.assert_frame_equal(a, b)
    assert (run / "model" / "model.safetensors").read_bytes() == (
        ref / "model" / "model.safetensors"
    ).read_bytes()
    assert not _leftovers(run), "temporary files were left behind"
    assert not (run / "checkpoint").exists(), "the finished run kept its resume state"


def _delete_training_outputs(run: Path) -> None:
    """The train_matcher rule's outputs (workflow/rules/models.smk)."""
    _delete_outputs(*(run / name for name in ("metrics.json", "model", "metrics.csv", "curve.png")))


@pytest.mark.parametrize("optimizer", ["asgd", "adamw"])  # their states differ (ax, moments)
def test_sigkill_then_rerun_resumes_and_matches_uninterrupted_run(
    optimizer, work, reference, tmp_path
):
    ref = reference(optimizer)
    run = tmp_path / "killed"
    state = run / "checkpoint" / "state.pt"
    proc = subprocess.Popen(
        _command(work, *_train(work, run, optimizer)),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    # a checkpoint is whole once its digest is beside it (a kill between the two sets it aside)
    while not (state.exists() and state.with_name("state.pt.sha256").exists()):
        assert proc.poll() is None, "training ended before writing its first checkpoint"
        assert time.monotonic() < deadline, "no checkpoint written in time"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert not (run / "metrics.json").exists(), "the kill came too late to test anything"
    saved = _state(run / "checkpoint")
    assert 1 <= saved["epoch"] < EPOCHS
    _delete_training_outputs(run)

    rerun = _run(work, *_train(work, run, optimizer))
    assert rerun.returncode == 0, rerun.stderr
    _assert_resumed_and_equal(run, ref, rerun.stderr, saved)


def test_kill_while_writing_a_checkpoint_keeps_the_previous_one(work, reference, tmp_path):
    """SIGKILL halfway through writing the second checkpoint: the first survives whole, the
    half-written temporary is removed by the rerun, which resumes after epoch 1."""
    ref = reference("asgd")
    run = tmp_path / "killed"
    killed = _run(work, *_train(work, run, "asgd"), kill_at_save=2)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    half = list((run / "checkpoint").glob(".state.pt.*"))
    assert len(half) == 1 and half[0].read_bytes() == b"PK half a checkpoint"
    saved = _state(run / "checkpoint")  # the previous checkpoint is whole
    assert saved["epoch"] == 1 and len(saved["history"]) == 1
    _delete_training_outputs(run)

    rerun = _run(work, *_train(work, run, "asgd"))
    assert rerun.returncode == 0, rerun.stderr
    _assert_resumed_and_equal(run, ref, rerun.stderr, saved)


# ---------------------------------------------------------------- pretraining


@pytest.fixture(scope="module")
def pretraining_reference(work):
    """A tokenizer and an uninterrupted pretraining run with it."""
    from proofmatch.models.tokenizer import train_tokenizer

    train_tokenizer(work / "toy.parquet", work / "tok", vocab_size=150, min_frequency=2)
    ref = work / "sb-reference"
    done = _run(
        work,
        "proofmatch.models.pretrain:pretrain",
        str(work / "toy.parquet"),
        str(work / "tok"),
        str(ref),
        MLM,
        2,
    )
    assert done.returncode == 0, done.stderr
    return ref


def test_pretraining_sigkill_while_writing_a_checkpoint_then_rerun(
    work, pretraining_reference, tmp_path
):
    """SIGKILL (not an exception: no handler runs) halfway through the second checkpoint; the
    workflow manager then deletes the job's declared output (the ScratchBERT folder, here not yet
    written). The rerun resumes at the first checkpoint's step from the resume folder beside it,
    writes the folder and ends like an uninterrupted run."""
    from proofmatch.models.pretrain import resume_dir

    ref, run = pretraining_reference, tmp_path / "sb"
    state = resume_dir(run)
    args = (
        "proofmatch.models.pretrain:pretrain",
        str(work / "toy.parquet"),
        str(work / "tok"),
        str(run),
        MLM,
        2,
    )
    killed = _run(work, *args, kill_at_save=2)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not run.exists(), "the output folder is written only when the run ends"
    validated = [int(n) for n in re.findall(r"pretrain step (\d+):", killed.stderr)]
    assert (
        validated[0] == MLM["eval_every_steps"] and len(validated) == 2
    )  # the second save was killed
    assert len(list(state.glob(".state.pt.*"))) == 1
    saved = _state(state)["progress"]  # the previous checkpoint is whole
    assert (saved["epoch"], saved["step"]) == (0, validated[0])
    _delete_outputs(run)

    rerun = _run(work, *args)
    assert rerun.returncode == 0, rerun.stderr
    assert f"pretrain: resuming at epoch 0, step {validated[0]}" in rerun.stderr, rerun.stderr
    again = [int(n) for n in re.findall(r"pretrain step (\d+):", rerun.stderr)]
    assert again[0] == validated[1]  # it went on from the checkpoint, not from step 0
    for name in ("pretrain_log.csv", "pretrain_metrics.json", "config.json", "model.safetensors"):
        assert (run / name).read_bytes() == (ref / name).read_bytes(), name
    assert sorted(p.name for p in run.iterdir()) == sorted(p.name for p in ref.iterdir())
    assert not _leftovers(run) and not _leftovers(tmp_path), "temporary files were left behind"
    assert not state.exists() and not resume_dir(ref).exists(), (
        "a finished run kept its resume state"
    )


def test_corrupt_resume_state_is_set_aside_and_the_run_restarts(work, reference, tmp_path):
    """A checkpoint overwritten with garbage (the pickle fails to load) no longer fails every
    rerun: the rerun names the file, sets it aside, trains from the start and ends like the
    uninterrupted run."""
    ref = reference("asgd")
    run = tmp_path / "corrupt"
    killed = _run(work, *_train(work, run, "asgd"), kill_at_save=2)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    state = run / "checkpoint" / "state.pt"
    size = state.stat().st_size
    state.write_bytes(b"\x80\x04garbage" * (size // 9))  # a broken pickle, about the same size
    _delete_training_outputs(run)

    rerun = _run(work, *_train(work, run, "asgd"))
    assert rerun.returncode == 0, rerun.stderr
    assert (
        f"resume state {state} is unreadable" in rerun.stderr and "set aside as" in rerun.stderr
    ), rerun.stderr
    assert (
        "resuming" not in rerun.stderr and "epoch 2: loss" in rerun.stderr
    )  # trained from the start
    assert (run / "model" / "model.safetensors").read_bytes() == (
        ref / "model" / "model.safetensors"
    ).read_bytes()
    assert (run / "metrics.json").read_bytes() == (ref / "metrics.json").read_bytes()
    assert not (run / "checkpoint").exists()


def _save_with_digest(obj, path: Path) -> None:
    """What a writer of ``results/`` could plant: a file and a digest that matches it."""
    from proofmatch.artifacts import atomic_path

    with atomic_path(path, ".pt", digest=True) as tmp:
        torch.save(obj, tmp)


def test_load_checkpoint_sets_aside_what_is_not_a_state(tmp_path, caplog):
    from proofmatch.models import checkpoint

    for name, content in {"truncated": None, "other": {"model": {}}, "no-digest": {}}.items():
        path = tmp_path / name / "state.pt"
        path.parent.mkdir()
        if content is None:
            _save_with_digest({"model": {"w": torch.zeros(100)}}, path)
            path.write_bytes(path.read_bytes()[:50])
        elif name == "no-digest":
            torch.save({k: {} for k in checkpoint.STATE_KEYS}, path)
        else:
            _save_with_digest(content, path)
        with caplog.at_level("WARNING"):
            assert checkpoint.load_checkpoint(path, {"seed": 1}) is None
        assert not path.exists() and (path.parent / "state.pt.corrupt").exists()
        assert not (path.parent / "state.pt.sha256").exists()
        assert str(path) in caplog.text
    assert "no digest" in caplog.text and "lacks" in caplog.text


class _Touch:
    """A pickled object whose loading would create the file ``path``."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_a_crafted_resume_state_runs_nothing(tmp_path, caplog):
    """A state.pt whose pickle would create a file (its digest rewritten to match, as anyone who
    can write the resume folder could) is refused and set aside; the file never appears."""
    from proofmatch.models import checkpoint

    marker = tmp_path / "pwned"
    path = tmp_path / "checkpoint" / "state.pt"
    path.parent.mkdir()
    _save_with_digest({**{k: {} for k in checkpoint.STATE_KEYS}, "rng": _Touch(marker)}, path)
    with caplog.at_level("WARNING"):
        assert checkpoint.load_checkpoint(path, {"seed": 1}) is None
    assert not marker.exists()
    assert (path.parent / "state.pt.corrupt").exists() and "unreadable" in caplog.text


def test_a_resume_state_round_trips_without_pickled_objects(tmp_path):
    """What ``checkpoint.save`` writes loads under ``weights_only=True`` and restores every RNG."""
    import random

    import numpy as np

    from proofmatch.models import checkpoint

    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters())
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    path = tmp_path / "state.pt"
    checkpoint.save(path, {"seed": 1}, model, opt, sched, epoch=2, best=0.5, history=[{"a": 1.0}])
    assert (tmp_path / "state.pt.sha256").is_file()
    want = (random.random(), np.random.random(), torch.rand(1))
    saved = checkpoint.resume(path, {"seed": 1}, model, opt, sched)
    assert saved is not None and saved["epoch"] == 2 and saved["history"] == [{"a": 1.0}]
    assert (random.random(), np.random.random(), torch.rand(1)) == want


def test_a_state_recorded_before_params_versions_is_another_runs(tmp_path, caplog):
    """A resume state whose fingerprint has no ``params_version`` (written before the params
    recorded only what a run reads) is not resumed: the run logs what changed and trains afresh."""
    from toydata import train_params

    from proofmatch.models import checkpoint

    fp = checkpoint.fingerprint(train_params("npt"), 0, ["a/1"], encoder="npt")
    old = {k: v for k, v in fp.items() if k != "params_version"}
    old["params"] = {**fp["params"], "pooling": "cls", "margin": 1.0}  # every encoder's fields
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters())
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    path = tmp_path / "state.pt"
    checkpoint.save(path, old, model, opt, sched, epoch=2, best=0.5, history=[])
    with caplog.at_level("WARNING"):
        assert checkpoint.resume(path, fp, model, opt, sched) is None
    assert (
        "(changed: params_version, params.margin, params.pooling); starting afresh" in caplog.text
    )
