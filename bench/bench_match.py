"""Reading a released-size MATcH folder: ``proofmatch.data.match.import_folder`` (every line parsed,
tokenised, every level's Parquet written) against a bare Python line scan of the same bytes.

The folder is synthetic and written by the project's writer (``matchfmt_write.write_file``): Mixed and
Unmixed, four levels each, train/dev/test 80/10/10 of ``--pairs`` pairs (the release: 184,094),
statements and proofs of the release's mean lengths (Table 2: 80 and 210 whitespace tokens, about
40 % text), runs of text and math lines, fonts on some math tokens, the levels differing in proof
math tokens only. ``--pairs`` below the release's measures that fraction; the report extrapolates
linearly (both the read and the scan are linear in the bytes) and says so.

    python bench/bench_match.py --pairs 23012 --out /tmp/match-bench          # 1/8 of the release
    python bench/bench_match.py --pairs 184094 --out /tmp/match-bench         # the release size

The read and the scan each run in a fresh process (``resource`` gives the read's peak RSS); the
scan reads every file in binary and decodes each line (``for line in f: line.decode()``), the
least a reader of a UTF-8 line format does.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

RELEASE_PAIRS = 184_094
WORDS = (
    "let be the of and then is for all we have by lemma since it follows that there exists "
    "suppose assume proof hence thus a an in on with as which where this so every any"
).split()
PUNCT = [".", ",", "(", ")", ":", ";"]
SYMBOLS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") + list(
    "αβγδεζηθλμνξπρστφχψω"
)
OPS = ["=", "+", "−", "≤", "≥", "∈", "⊂", "(", ")", "0", "1", "2", "n", "∑", "∫", "→", "⁢"]
FONTS = ["bold", "double-struck", "script", "fraktur"]


def segments(rng: random.Random, n_tokens: int, level_shift: int = 0) -> list[tuple[str, str]]:
    out, left = [], n_tokens
    while left > 0:
        if rng.random() < 0.45:
            k = min(left, rng.randint(2, 12))
            words = [rng.choice(WORDS) for _ in range(k)]
            if rng.random() < 0.5:
                words[-1] += rng.choice(PUNCT)
            out.append(("text", " ".join(words)))
        else:
            k = min(left, rng.randint(1, 14))
            toks = []
            for _ in range(k):
                if rng.random() < 0.5:
                    s = SYMBOLS[(SYMBOLS.index(rng.choice(SYMBOLS)) + level_shift) % len(SYMBOLS)]
                    toks.append(f"{s}____{rng.choice(FONTS)}" if rng.random() < 0.08 else s)
                else:
                    toks.append(rng.choice(OPS))
            out.append(("math", " ".join(toks)))
        left -= k
    return out


def make_folder(out: Path, n_pairs: int, seed: int = 0) -> int:
    """Write Mixed and Unmixed at four levels; returns the bytes written."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from proofmatch.data.matchfmt import FILE_LEVELS
    from proofmatch.data.matchfmt_write import OutPair, write_file

    rng = random.Random(seed)
    n_articles = max(1, round(n_pairs / 6.6))
    articles = {
        f"arXiv:{1000 + i // 10000:04d}.{i % 10000:05d}": (
            ["math.AG", "math.CO"][i % 2 :],
            f"Title {i}",
        )
        for i in range(n_articles)
    }
    ids = list(articles)
    pairs = []
    for k in range(n_pairs):
        st = max(20, min(500, int(rng.gauss(80, 57))))
        pr = max(20, min(500, int(rng.gauss(210, 127))))
        pairs.append((ids[k % n_articles], f"S{k}.Thm{k}", rng.random(), st, pr))
    cut = [0, int(0.8 * n_pairs), int(0.9 * n_pairs), n_pairs]
    for family in ("mixed", "unmixed"):
        order = sorted(pairs, key=lambda p: p[2]) if family == "mixed" else pairs
        for li, level in enumerate(FILE_LEVELS):
            for pi, part in enumerate(("train", "dev", "test")):
                chunk = order[cut[pi] : cut[pi + 1]]

                def out_pairs():
                    for aid, sid, _r, st, pr in chunk:
                        prng = random.Random(f"{sid}|s")
                        srng = random.Random(f"{sid}|p")
                        yield OutPair(aid, sid, segments(prng, st), segments(srng, pr, li))

                write_file(out / family / f"{family}_{level}_{part}", out_pairs(), articles)
    return sum(f.stat().st_size for f in out.rglob("*") if f.is_file())


SCAN = """
import sys, time
from pathlib import Path
t = time.perf_counter(); n = 0
for f in sorted(Path(sys.argv[1]).rglob("*_*")):
    with open(f, "rb") as fh:
        for line in fh:
            line.decode("utf-8"); n += 1
print(time.perf_counter() - t, n)
"""

READ = """
import sys, time, resource
sys.path.insert(0, sys.argv[3])
from proofmatch.data.match import import_folder
t = time.perf_counter()
r = import_folder(sys.argv[1], sys.argv[2], ["mixed", "unmixed"])
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r["pairs"])
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=RELEASE_PAIRS // 8)
    parser.add_argument(
        "--out", required=True, help="scratch folder (the MATcH folder and the read's tree)"
    )
    parser.add_argument("--json", help="write the measurements here")
    parser.add_argument(
        "--reuse", action="store_true", help="read the folder a previous run wrote (same --pairs)"
    )
    args = parser.parse_args()
    out = Path(args.out)
    src = str(Path(__file__).resolve().parents[1] / "src")
    t = time.perf_counter()
    if args.reuse and len(list((out / "match").rglob("*_*"))) == 24:
        size, write_s = sum(f.stat().st_size for f in (out / "match").rglob("*_*")), float("nan")
    else:
        size = make_folder(out / "match", args.pairs)
        write_s = time.perf_counter() - t
    shutil.rmtree(out / "tree", ignore_errors=True)
    scan = subprocess.run(
        [sys.executable, "-c", SCAN, str(out / "match")], capture_output=True, text=True, check=True
    )
    scan_s, lines = scan.stdout.split()
    read = subprocess.run(
        [sys.executable, "-c", READ, str(out / "match"), str(out / "tree"), src],
        capture_output=True,
        text=True,
        check=True,
    )
    read_s, rss_kb, pairs = read.stdout.split()
    scale = RELEASE_PAIRS / args.pairs
    row = {
        "pairs": args.pairs,
        "files": 24,
        "mib": round(size / 2**20, 1),
        "lines": int(lines),
        "write_s": round(write_s, 1),
        "scan_s": round(float(scan_s), 2),
        "read_s": round(float(read_s), 1),
        "ratio": round(float(read_s) / float(scan_s), 1),
        "peak_rss_mib": round(int(rss_kb) / 1024),
        "pairs_read": int(pairs),
        "release_scale": round(scale, 2),
        "read_s_at_release_size": round(float(read_s) * scale),
        "scan_s_at_release_size": round(float(scan_s) * scale),
    }
    print(json.dumps(row, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
