"""The CPU benchmarks still run against the package's current interfaces (one tiny step each; the
numbers themselves are not checked: performance is measured in bench/, not in tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_train_runs_one_step_per_measurement(tmp_path):
    out = tmp_path / "rows.json"
    subprocess.run([sys.executable, str(REPO / "bench/bench_train.py"), "--sizes", "demo", "--devices", "cpu",
                    "--steps", "1", "--warmup", "0", "--json", str(out)], check=True, timeout=300)
    rows = json.loads(out.read_text())
    assert {r["bench"] for r in rows} == {"NPT local step", "NPT global step", "NPT local epoch", "BERT MLM step"}
    assert all(r["per_s"] > 0 for r in rows), rows
