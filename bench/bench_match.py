"""Reading a released-size MATcH folder: ``proofmatch.data.match.import_folder`` (every line parsed,
tokenised, every level's Parquet written) against a bare Python line scan of the same bytes.

The folder is synthetic and written by the project's writer (``matchfmt_write.write_file``): Mixed and
Unmixed, four levels each, train/dev/test 80/10/10 of ``--pairs`` pairs (the release: 184,094),
statements and proofs of the release's mean lengths (Table 2: 80 and 210 whitespace tokens, about
40 % text), runs of text and math lines, fonts on some math tokens, the levels differing in proof
math tokens only. ``--pairs`` below the release's measures that fraction; the report extrapolates
linearly (both the read and the scan are linear in the bytes) and says so.

    python bench/bench_match.py --pairs 23012 --out /tmp/match-bench          # 1/8 of the release
    python bench/bench_match.py --pairs 184094 --repeat 8 --out /tmp/match-bench-full   # the release size

``--repeat R`` generates the contents of ``--pairs / R`` pairs and gives each to R pairs under their
own ids (the generator is the slow part of writing; the read does the same work for a repeated
pair as for any other). The scan, the read and the scan again run in one fresh process, so that
both are timed in the same conditions on a shared machine (the ratio uses the mean of the two
scans; ``resource`` gives the process's peak RSS, which is the read's): the scan reads every file in
binary and decodes each line (``for line in f: line.decode()``), the least a reader of a UTF-8 line
format does.
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


def make_folder(out: Path, n_pairs: int, seed: int = 0, distinct: int | None = None) -> int:
    """Write Mixed and Unmixed at four levels; returns the bytes written. ``distinct``: pair ``k``
    holds the statement and proofs of pair ``k % distinct`` (under its own id), which are
    generated once."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from proofmatch.data.matchfmt import FILE_LEVELS
    from proofmatch.data.matchfmt_write import OutPair, write_file

    distinct = distinct or n_pairs
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
    cache: dict[tuple[int, int], list] = {}

    def content(k: int, level: int) -> tuple[list, list]:
        c = k % distinct
        _a, sid, _r, st, pr = pairs[c]
        if (c, -1) not in cache:
            cache[(c, -1)] = segments(random.Random(f"{sid}|s"), st)
        if (c, level) not in cache:
            cache[(c, level)] = segments(random.Random(f"{sid}|p"), pr, level)
        return cache[(c, -1)], cache[(c, level)]

    index = {p[1]: k for k, p in enumerate(pairs)}
    for family in ("mixed", "unmixed"):
        order = sorted(pairs, key=lambda p: p[2]) if family == "mixed" else pairs
        for li, level in enumerate(FILE_LEVELS):
            for pi, part in enumerate(("train", "dev", "test")):
                chunk = order[cut[pi] : cut[pi + 1]]

                def out_pairs():
                    for aid, sid, _r, _st, _pr in chunk:
                        yield OutPair(aid, sid, *content(index[sid], li))

                write_file(out / family / f"{family}_{level}_{part}", out_pairs(), articles)
    return sum(f.stat().st_size for f in out.rglob("*") if f.is_file())


# the scan, the read and the scan again in one process: the same conditions for both
READ = """
import sys, time, resource
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from proofmatch.data import match
if sys.argv[4] != "default":
    match.READ_AHEAD = int(sys.argv[4])

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def scan():
    t = time.perf_counter(); n = 0
    for f in sorted(Path(sys.argv[1]).rglob("*_*")):
        with open(f, "rb") as fh:
            for line in fh:
                line.decode("utf-8"); n += 1
    return time.perf_counter() - t, n

scan_1, lines = scan()
t, c = time.perf_counter(), cpu()
r = match.import_folder(sys.argv[1], sys.argv[2], ["mixed", "unmixed"])
read_s, read_cpu = time.perf_counter() - t, cpu() - c
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
scan_2, _ = scan()
print(scan_1, scan_2, lines, read_s, rss, r["pairs"], read_cpu, match.READ_AHEAD)
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
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="generate the contents of --pairs / REPEAT pairs and give each to REPEAT pairs "
        "(a release-size folder in a fraction of the writing time)",
    )
    parser.add_argument(
        "--read-ahead",
        type=int,
        default=None,
        help="files read ahead in threads (default: the reader's READ_AHEAD)",
    )
    args = parser.parse_args()
    out = Path(args.out)
    src = str(Path(__file__).resolve().parents[1] / "src")
    t = time.perf_counter()
    if args.reuse and len(list((out / "match").rglob("*_*"))) == 24:
        size, write_s = sum(f.stat().st_size for f in (out / "match").rglob("*_*")), float("nan")
    else:
        shutil.rmtree(out / "match", ignore_errors=True)
        size = make_folder(out / "match", args.pairs, distinct=-(-args.pairs // args.repeat))
        write_s = time.perf_counter() - t
    shutil.rmtree(out / "tree", ignore_errors=True)
    ahead = "default" if args.read_ahead is None else str(args.read_ahead)
    read = subprocess.run(
        [sys.executable, "-c", READ, str(out / "match"), str(out / "tree"), src, ahead],
        capture_output=True,
        text=True,
        check=True,
    )
    scan_1, scan_2, lines, read_s, rss_kb, pairs, read_cpu, ahead = read.stdout.split()
    scan_s = (float(scan_1) + float(scan_2)) / 2
    scale = RELEASE_PAIRS / args.pairs
    row = {
        "command": "python bench/bench_match.py " + " ".join(sys.argv[1:]),
        "pairs": args.pairs,
        "files": 24,
        "mib": round(size / 2**20, 1),
        "lines": int(lines),
        "write_s": round(write_s, 1),
        "scan_s": round(scan_s, 2),
        "scan_s_before_after": [round(float(scan_1), 2), round(float(scan_2), 2)],
        "read_s": round(float(read_s), 1),
        "ratio": round(float(read_s) / scan_s, 2),
        # CPU seconds of the read, all its threads: what the load of other work does not change
        "read_cpu_s": round(float(read_cpu), 1),
        "cores_used": round(float(read_cpu) / float(read_s), 2),
        "read_ahead": int(ahead),
        "peak_rss_mib": round(int(rss_kb) / 1024),
        "pairs_read": int(pairs),
        "release_scale": round(scale, 2),
        "read_s_at_release_size": round(float(read_s) * scale),
        "scan_s_at_release_size": round(scan_s * scale),
    }
    print(json.dumps(row, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
