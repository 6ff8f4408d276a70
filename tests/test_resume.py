"""A training job killed with SIGKILL and rerun ends exactly like an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from proofmatch.store import write_parquet
from toydata import toy_pairs

ROOT = Path(__file__).resolve().parents[1]


def _config(tmp: Path, optimizer: str) -> Path:
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["matching"]["npt"].update(eval_every=2, d_model=32, n_layers=1, n_heads=2, d_k=16, epochs=6, batch_size=20,
                                  learning_rate=0.01, max_length=48, optimizer=optimizer)
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True))
    return path


def _command(data: Path, out: Path, config: Path) -> list[str]:
    return [sys.executable, "-m", "proofmatch.cli", "train", str(data), "--out", str(out),
            "--encoder", "npt", "--mode", "hybrid", "--view", "both", "--config", str(config),
            "--seed", "11"]


def _env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


@pytest.mark.parametrize("optimizer", ["asgd", "adamw"])  # their states differ (ax, moments)
def test_sigkill_then_rerun_matches_uninterrupted_run(optimizer, tmp_path):
    data = tmp_path / "toy.parquet"
    write_parquet(toy_pairs(n_articles=12, pairs_per_article=6, seed=2), data)
    config = _config(tmp_path, optimizer)

    ref = tmp_path / "ref"
    subprocess.run(_command(data, ref, config), env=_env(), check=True, capture_output=True, timeout=120)

    run = tmp_path / "killed"
    state = run / "checkpoint" / "state.pt"
    proc = subprocess.Popen(_command(data, run, config), env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while not state.exists():
        assert proc.poll() is None, "training ended before writing its first checkpoint"
        assert time.monotonic() < deadline, "no checkpoint written in time"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert not (run / "metrics.json").exists(), "the kill came too late to test anything"

    subprocess.run(_command(data, run, config), env=_env(), check=True, capture_output=True, timeout=120)

    assert (run / "metrics.json").read_bytes() == (ref / "metrics.json").read_bytes()
    a, b = (pd.read_csv(d / "metrics.csv").drop(columns="train_seconds") for d in (run, ref))
    pd.testing.assert_frame_equal(a, b)
    assert (run / "model" / "model.safetensors").read_bytes() == (ref / "model" / "model.safetensors").read_bytes()
    assert not list(run.glob(".*")), "temporary files were left behind"
