"""Benchmark search latency: exact at 18,408 proofs, FAISS at 1,000,000 (and its recall), fusion, explanations.

A query is timed end to end through ``SearchIndex.search``: parsing its LaTeX-flavoured text
(the project's TeX converter, then the linearizer's MathML reader), encoding it with the index's
model (``Matcher.factors``), scoring every proof, and ordering the top 10. The queries are the
test statements of a real index (e.g. the demo's NPT run) whose formulas all kept their TeX,
typed as text with it (a formula with a command the tolerant TeX reader does not know would go
to LaTeXML, about a second each; none of the Stacks index's first 100 such queries has one). Above the real index's size the proofs
are synthetic: each is a real proof vector of the index plus Gaussian noise of ``--noise`` times
that dimension's spread, so the set keeps the model's geometry (clusters of related proofs).

FAISS (``proofmatch.search.ann``) is built and calibrated as ``proofmatch index`` does, with the
real train and dev statements as calibration queries; its recall@10 is then measured against
exact search (matrix products) on the test statements, which calibration did not see.

Fusion (``--index`` a fusion index, ``proofmatch index --fusion``): every query scores every
proof twice (one product, one sparse product) and standardises both halves, so fusion is timed
exact at any size; a fusion of several runs encodes the query once per run and scores one product
per run (each run's synthetic proofs drawn around the same real proofs). A synthetic proof's BM25 row is the real BM25 row of the proof its vector was
drawn around (a real sparse row, idf of the real index). Besides the in-process rows, the
index is served by ``proofmatch serve``'s app (uvicorn, in a forked process, rate limit off)
and ``--clients`` clients (threads, one keep-alive HTTP connection each) send the queries at
once through ``/api/search``: latency per request as a client sees it, the server searching
as it does in use (concurrent searches, one forward pass per core) (``--http-repeats`` rounds of the queries per client;
progress on stderr). ``--quantize int8`` encodes queries with int8 Linear layers
(``proofmatch serve --quantize``); ``--mrr PART`` first ranks each statement of PART among
PART's proofs, by its stored vector (an id query) and by its tokens encoded as a typed query, and
reports both MRRs: what the query encoder (float32 or int8) changes. ``--explain N`` times "why this proof" (occlusion,
:mod:`proofmatch.search.explain`) for the top result of N queries on the real index, the
longest pair of the index, and, with ``--lime-samples``, Figure 2's LIME on one of them for
comparison (LIME explains P(match) against 9 other proofs, not the search score).

    python bench/bench_search.py --index results/index/mixed/npt-local/conservation-both
    python bench/bench_search.py --index DIR --sizes 18408 --queries 100
    python bench/bench_search.py --index FUSION_DIR --sizes 18408 --clients 1 8 --explain 50 --lime-samples 1000
    python bench/bench_search.py --index FUSION_DIR --sizes 18408 --queries 100 --clients 1 8 --mrr dev --quantize int8
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import resource
import socket
import sys
import threading
import time
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import scipy.sparse as sp

from proofmatch.models.runtime import set_threads
from proofmatch.search import ann
from proofmatch.search.build import FAISS_ABOVE
from proofmatch.search.display import fragment_text
from proofmatch.search.explain import explain
from proofmatch.search.index import SearchIndex
from proofmatch.search.query import Query


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def synthetic(
    real: dict, n: int, noise: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n proof vectors around the index's real ones (and their column biases), and which real
    proof each was drawn around."""
    rng = np.random.default_rng(seed)
    base = real["proof_vectors"]
    pick = rng.integers(0, len(base), n)
    spread = base.std(axis=0, keepdims=True).astype(np.float32)
    V = base[pick].astype(np.float32)
    for s in range(
        0, n, 200_000
    ):  # in blocks: the noise of a million rows at once doubles the peak
        V[s : s + 200_000] += (
            noise
            * spread
            * rng.standard_normal((min(n, s + 200_000) - s, base.shape[1]), dtype=np.float32)
        )
    return V, real["proof_bias"][pick].astype(np.float32), pick


def install(
    ix: SearchIndex,
    V: np.ndarray,
    col: np.ndarray,
    backend: str,
    calib: np.ndarray,
    seed: int,
    target: float,
    weights: sp.csr_matrix | None = None,
    table: pd.DataFrame | None = None,
) -> dict:
    """Put synthetic proofs into a loaded index (what ``build_index`` would have written);
    ``weights``: their BM25 rows (proofs x vocabulary) for a fusion index; ``table``: their rows of
    ``proofs.parquet`` (the real rows they were drawn around, so that a served result shows a real
    proof)."""
    n = len(V)
    ix.proof_vectors, ix.proof_bias, ix.n = V, col, n
    if weights is not None:
        ix.weights_t = sp.csr_matrix(weights.T)
    ids = [f"syn{i:07d}" for i in range(n)]
    if table is None:
        ix.table = pd.DataFrame({"pair_id": ids, "part": "test"})
    else:
        ix.table = table.reset_index(drop=True).assign(pair_id=ids, part="test")
    ix._html = {}
    ix.meta = {**ix.meta, "n": n, "backend": backend, "part_sizes": {"test": n}}
    ix._parts, ix.faiss = {}, None
    info: dict = {}
    if backend == "faiss":
        extra = None if not np.any(col) else col
        vectors = ann.augment(V, extra)
        t0 = time.perf_counter()
        ix.faiss = ann.build_ivf(vectors, seed)
        q = ann.augment(calib, None if extra is None else np.ones(len(calib), np.float32))
        info = ann.calibrate(ix.faiss, q, vectors, target)
        info["augmented"] = extra is not None
        info["build_seconds"] = round(time.perf_counter() - t0, 1)
        ix.meta["faiss"] = info
    return info


def install_members(ix: SearchIndex, arrays: list[dict], n: int, noise: float, seed: int) -> None:
    """A fusion of several runs: each run's synthetic proofs, drawn around the same real proofs as
    :func:`synthetic`'s (one seed picks the same rows) in that run's own vector space."""
    for m, real in zip(ix.members, arrays):
        V, col, _ = synthetic(real, n, noise, seed)
        m.arrays, m.parts = {**real, "proof_vectors": V, "proof_bias": col}, {}


def percentiles(ms: list[float]) -> dict:
    a = np.asarray(ms)
    return {
        "p50_ms": round(float(np.median(a)), 2),
        "p95_ms": round(float(np.percentile(a, 95)), 2),
        "max_ms": round(float(a.max()), 2),
    }


def run(ix: SearchIndex, texts: list[str], n: int, repeats: int) -> dict:
    """Wall-clock latency per query, and the process's CPU time per query: on a shared machine the
    wall clock includes waiting for a core, CPU time does not (FAISS's OpenMP threads add up in it)."""
    lat, cpu = [], []
    for _ in range(repeats):
        for t in texts:
            t0, c0 = time.perf_counter(), time.process_time()
            ix.search(t, k=10)
            lat.append(1000 * (time.perf_counter() - t0))
            cpu.append(1000 * (time.process_time() - c0))
    lat, cpu = np.asarray(lat), np.asarray(cpu)
    return {
        "n": n,
        "scorer": ix.method,
        "via": "in-process",
        "clients": 1,
        "backend": ix.meta["backend"],
        "queries": len(lat),
        "p50_ms": round(float(np.median(lat)), 2),
        "p95_ms": round(float(np.percentile(lat, 95)), 2),
        "max_ms": round(float(lat.max()), 2),
        "cpu_p50_ms": round(float(np.median(cpu)), 2),
        "cpu_p95_ms": round(float(np.percentile(cpu, 95)), 2),
        "load_avg_1min": round(os.getloadavg()[0], 1),
    }


def recall(ix: SearchIndex, texts: list[str]) -> float:
    """FAISS's recall@10 against exact inner-product search over the same vectors."""
    qs = np.stack([ix._query_vector(ix.parse(t))[0] for t in texts]).astype(np.float32)
    extra = ix.meta["faiss"]["augmented"]
    vectors = ann.augment(ix.proof_vectors, ix.proof_bias if extra else None)
    exact = ann.exact_topk(
        ann.augment(qs, np.ones(len(qs), np.float32) if extra else None), vectors, 10
    )
    got = np.array([[h.row for h in ix.search(t, k=10)[1]] for t in texts])
    return ann.recall_at(got, exact)


def mrr_row(ix: SearchIndex, part: str) -> dict:
    """MRR of the statements of ``part`` among its proofs (the gold after proofs tied with it, as
    evaluation ranks), by the stored statement vectors (an id query) and by the stored tokens
    encoded one at a time by the index's query encoder (a typed query)."""
    rows = np.flatnonzero(ix.table["part"].to_numpy() == part)
    rr: dict[str, list[float]] = {"id": [], "typed": []}
    for g, i in enumerate(rows):
        pid = str(ix.table["pair_id"].iat[i])
        tokens = [str(t) for t in ix.table["statement_tokens"].iat[i]]
        for how, q in (("id", Query("id", pid, pair_id=pid)), ("typed", Query("tex", pid, tokens))):
            S = ix.scores(q, part)
            rr[how].append(1.0 / int((S >= S[g]).sum()))
    return {
        "bench": f"MRR of {part} statements among {part} proofs",
        "scorer": ix.method,
        "query_encoder": ix.describe().get("query_encoder"),
        "n": len(rows),
        "mrr_id_query": round(float(np.mean(rr["id"])), 4),
        "mrr_typed_query": round(float(np.mean(rr["typed"])), 4),
    }


# ----------------------------------------------------------------------------- clients over HTTP


def _serve(ix: SearchIndex, port: int) -> None:
    """The page's app over ``ix`` (in a forked process; no rate limit: the clients are the load)."""
    import uvicorn

    from proofmatch.search.web import create_app

    set_threads(1)
    app = create_app(ix, rate_per_minute=1e9, burst=10**9)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


class Served:
    """``ix`` served on a free loopback port by a forked process (stopped at exit)."""

    def __init__(self, ix: SearchIndex):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = multiprocessing.get_context("fork").Process(
            target=_serve, args=(ix, self.port), daemon=True
        )

    def __enter__(self) -> int:
        self.proc.start()
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self.port
            except OSError:
                if time.monotonic() > deadline or not self.proc.is_alive():
                    raise RuntimeError("the benchmark's server did not start") from None
                time.sleep(0.1)

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.join(10)


def http_row(port: int, texts: list[str], clients: int, repeats: int, n: int, scorer: str) -> dict:
    """``clients`` threads at once, each sending every query ``repeats`` times (from its own
    starting point) over one keep-alive connection to ``/api/search``; latency per request
    (progress on stderr every tenth of the requests)."""
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    total, done = clients * repeats * len(texts), [0]
    start = threading.Barrier(clients)

    def client(c: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        order = texts[c * len(texts) // clients :] + texts[: c * len(texts) // clients]
        mine = []
        start.wait()
        for _ in range(repeats):
            for t in order:
                t0 = time.perf_counter()
                conn.request("GET", "/api/search?" + urlencode({"q": t, "k": 10}))
                r = conn.getresponse()
                body = r.read()
                mine.append(1000 * (time.perf_counter() - t0))
                with lock:
                    if r.status != 200:
                        errors.append(f"{r.status}: {body[:200]!r}")
                    done[0] += 1
                    if done[0] % max(1, total // 10) == 0:
                        print(
                            f"  {clients} clients: {done[0]}/{total}", file=sys.stderr, flush=True
                        )
        conn.close()
        with lock:
            lat.extend(mine)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed, e.g. {errors[0]}")
    return {
        "n": n,
        "scorer": scorer,
        "via": "http /api/search",
        "clients": clients,
        "queries": len(lat),
        **percentiles(lat),
        "throughput_qps": round(len(lat) / wall, 1),
        "load_avg_1min": round(os.getloadavg()[0], 1),
    }


# ----------------------------------------------------------------------------- explanations


def explain_rows(
    ix: SearchIndex, texts: list[str], n_queries: int, lime_samples: int, seed: int
) -> list[dict]:
    """Occlusion for the top result of ``n_queries`` queries, for the index's longest pair, and
    Figure 2's LIME on the first query's top result for comparison."""
    rows = []
    lat, tokens = [], []
    for t in texts[:n_queries]:
        _, hits = ix.search(t, k=1)
        t0 = time.perf_counter()
        e = explain(ix, t, hits[0].pair_id)
        lat.append(1000 * (time.perf_counter() - t0))
        tokens.append(e["budget"]["tokens"])
    rows.append(
        {
            "bench": "explain top result",
            "method": "occlusion",
            "scorer": ix.method,
            "n": ix.n,
            "queries": len(lat),
            **percentiles(lat),
            "tokens_p50": int(np.median(tokens)),
            "tokens_max": int(max(tokens)),
            "load_avg_1min": round(os.getloadavg()[0], 1),
        }
    )
    lengths = ix.table["statement_tokens"].map(len) + ix.table["proof_tokens"].map(len)
    longest = str(ix.table["pair_id"].iat[int(np.argmax(lengths.to_numpy()))])
    lat = []
    for _ in range(3):
        t0 = time.perf_counter()
        e = explain(ix, longest, longest)
        lat.append(1000 * (time.perf_counter() - t0))
    rows.append(
        {
            "bench": "explain longest pair",
            "method": "occlusion",
            "scorer": ix.method,
            "pair_id": longest,
            "tokens": e["budget"]["tokens"],
            **percentiles(lat),
        }
    )
    if lime_samples:
        from proofmatch.evaluation.figure import explain_pair

        for label, query in (("top result", texts[0]), ("longest pair", longest)):
            q, hits = ix.search(query, k=10)
            statement = ix.query_tokens(q)
            row = ix.row_of[longest] if query == longest else hits[0].row
            others = [list(ix.table["proof_tokens"].iat[h.row]) for h in hits if h.row != row][:9]
            t0 = time.perf_counter()
            proof = list(ix.table["proof_tokens"].iat[row])
            exp = explain_pair(ix.matcher, statement, proof, others, lime_samples, seed)
            rows.append(
                {
                    "bench": f"LIME {label} (Figure 2, for comparison)",
                    "method": "lime",
                    "samples": lime_samples,
                    "tokens": len(exp.tokens),
                    "ms": round(1000 * (time.perf_counter() - t0), 1),
                    "r2": round(exp.r2, 3),
                }
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--index", required=True, help="a model or fusion index (proofmatch index) of a real corpus"
    )
    ap.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=None,
        help="proofs (default: 18,408 and 1,000,000 for a model index, 18,408 for fusion)",
    )
    ap.add_argument("--queries", type=int, default=200, help="test statements typed as text")
    ap.add_argument("--repeats", type=int, default=2, help="rounds of the queries in process")
    ap.add_argument("--http-repeats", type=int, default=1, help="rounds of the queries per client")
    ap.add_argument(
        "--quantize",
        choices=("none", "int8"),
        default="none",
        help="the query encoder's Linear layers",
    )
    ap.add_argument("--mrr", metavar="PART", help="first: MRR of PART's statements (mrr_row)")
    ap.add_argument(
        "--clients",
        type=int,
        nargs="*",
        default=[],
        help="also serve the index and time these numbers of concurrent HTTP clients",
    )
    ap.add_argument(
        "--explain",
        type=int,
        default=0,
        help="time explanations of the top result of this many queries",
    )
    ap.add_argument(
        "--lime-samples",
        type=int,
        default=0,
        help="with --explain: also LIME with this many samples",
    )
    ap.add_argument("--noise", type=float, default=0.5)
    ap.add_argument(
        "--recall", type=float, default=0.95, help="FAISS target recall@10 (calibration)"
    )
    ap.add_argument("--threads", type=int, default=1, help="torch threads (query encoding)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args()
    set_threads(args.threads)

    ix = SearchIndex(args.index, quantize=args.quantize)
    if ix.method not in ("model", "fusion"):
        raise SystemExit("the benchmark needs a model or fusion index")
    fusion = ix.method == "fusion"
    sizes = args.sizes or ([18_408] if fusion else [18_408, 1_000_000])
    test = ix.table[ix.table["part"] == "test"]
    # statements whose every formula kept its TeX (LaTeXML markup): what a person would type
    texts = [
        fragment_text(x)
        for x in test["statement_xml"]
        if x is not None and "m:math" not in x and x.count("<math") == x.count("alttext=")
    ]
    texts = [t for t in texts if "$" in t][: args.queries]
    first = ix.members[0].arrays if ix.members else vars(ix)  # several runs: the first's proofs
    calib = first["statement_vectors"][(ix.table["part"] != "test").to_numpy()]
    print(
        f"{len(texts)} queries from {args.index}; {ix.method} index, model {ix.describe()['encoder']} "
        f"d={first['proof_vectors'].shape[1]}; {len(calib)} calibration statements",
        flush=True,
    )
    for t in texts[:3]:  # warm-up (lazy imports, caches)
        ix.search(t)
    rows = []
    if args.mrr:
        rows.append(mrr_row(ix, args.mrr))
        print(json.dumps(rows[-1]), flush=True)
    if args.explain:
        for row in explain_rows(ix, texts, args.explain, args.lime_samples, args.seed):
            rows.append(row)
            print(json.dumps(row), flush=True)
    # the real proofs, kept apart: each size's synthetic set is drawn around these
    real = {
        "proof_vectors": first["proof_vectors"],
        "proof_bias": first["proof_bias"],
        "table": ix.table,
        "weights": ix.weights_t.T.tocsr() if fusion else None,
    }
    members = [m.arrays for m in ix.members]
    for n in sizes:
        backend = "exact" if fusion or n <= FAISS_ABOVE else "faiss"
        V, col, pick = synthetic(real, n, args.noise, args.seed)
        info = install(
            ix,
            V,
            col,
            backend,
            calib,
            args.seed,
            args.recall,
            weights=real["weights"][pick] if fusion else None,
            table=real["table"].iloc[pick],
        )
        install_members(ix, members, n, args.noise, args.seed)
        for t in texts[:3]:
            ix.search(t)
        row = run(ix, texts, n, args.repeats)
        if backend == "faiss":
            row.update(
                nlist=info["nlist"],
                nprobe=info["nprobe"],
                calibration_recall=round(info["recall_at_10"], 4),
                recall_at_10=round(recall(ix, texts), 4),
                build_seconds=info["build_seconds"],
            )
        row.update(rss_peak_mb=round(rss_mb()), query_encoder=ix.describe()["query_encoder"])
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.clients:
            with Served(ix) as port:
                http_row(port, texts[:3], 1, 1, n, ix.method)  # warm-up of the served copy
                for c in args.clients:
                    row = http_row(port, texts, c, args.http_repeats, n, ix.method)
                    row["query_encoder"] = ix.describe()["query_encoder"]
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
