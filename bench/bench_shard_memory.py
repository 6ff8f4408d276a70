"""Benchmark: peak RSS of one extraction job over a shard of many small amplifying files.

    python bench/bench_shard_memory.py [N ...]        # default: 2000 20000

Each file is the same 485-byte ``.xhtml.gz`` (six lemmas nested one inside the other around 280 KB
of text): 1.7 MB of pairs' XML each, inside its own output budget
(:func:`proofmatch.data.statements.output_budget`). For each N the files go into one manifest
shard (``proofmatch manifest`` with one shard) and ``proofmatch extract --manifest --shard 0`` runs
in a fresh process, as the workflow's ``extract`` job does; printed: N, wall seconds, the job's
peak RSS (``ru_maxrss`` of the job), files extracted, files skipped by reason, pairs, and the
shard's Parquet size.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from proofmatch.data import corpus  # noqa: E402

XHTML = "http://www.w3.org/1999/xhtml"


def amplifying_gz(depth: int = 6, payload_chars: int = 280_000) -> bytes:
    """``depth`` lemmas nested one inside the other, each followed by its proof, around
    ``payload_chars`` of text (as ``tests/test_hostile.py``'s ``nested_doc``)."""
    open_ = "".join(
        f'<div class="ltx_theorem ltx_theorem_lemma" id="t{i}"><p>L{i}.</p>' for i in range(depth)
    )
    close = '</div><div class="ltx_proof"><p>P.</p></div>' * depth
    inner = "<p>" + "x " * (payload_chars // 2) + "</p>"
    doc = f'<html xmlns="{XHTML}"><body>{open_}{inner}{close}</body></html>'
    return gzip.compress(doc.encode(), mtime=0)


def run(n: int, tmp: Path) -> dict:
    root = tmp / f"corpus-{n}"
    root.mkdir()
    data = amplifying_gz()
    for i in range(n):
        (root / f"amp{i:06d}.xhtml.gz").write_bytes(data)
    manifest, articles = tmp / f"manifest-{n}.parquet", tmp / f"articles-{n}.parquet"
    corpus.write_manifest(root, 1, None, manifest, articles)
    out, report = tmp / f"shard-{n}.parquet", tmp / f"shard-{n}.report.json"
    cmd = [sys.executable, "-m", "proofmatch.cli", "extract", "--manifest", str(manifest)]
    cmd += ["--shard", "0", "--out", str(out), "--report", str(report)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)  # this job's own rusage
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}")
    rep = json.loads(report.read_text())
    return {
        "files": n,
        "input_bytes": len(data) * n,
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "files_ok": rep["files_ok"],
        "skipped": rep["files_skipped"],
        "pairs": rep["pairs"],
        "parquet_mb": round(out.stat().st_size / 2**20, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="*", type=int, default=[2000, 20000])
    args = ap.parse_args()
    for n in args.n:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(run(n, Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
