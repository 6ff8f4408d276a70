"""Concurrent searches: statements encoded together (search.batching), results as searched alone."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from proofmatch.search.batching import BatchedEncoder, batch_queries
from proofmatch.search.web import Searcher

pytestmark = pytest.mark.usefixtures("one_thread")


class Stub:
    """A matcher: a statement's vector is (its length, its first token's length); the first pass
    waits so that the others queue behind it; a statement with the token BOOM cannot be encoded."""

    def __init__(self, wait: float = 0.3) -> None:
        self.wait, self.calls = wait, []
        self.config = "stub"

    def factors(self, statements, proofs, batch_size=64, progress=False):
        self.calls.append(len(statements))
        if len(self.calls) == 1:
            time.sleep(self.wait)
        if any("BOOM" in s for s in statements):
            raise ValueError("cannot encode BOOM")
        A = np.array([[len(s), len(s[0])] for s in statements], np.float32)
        return A, np.zeros((len(proofs), 2), np.float32), -A[:, 0], np.zeros(len(proofs))


def _concurrently(fn, args: list) -> list:
    """fn(arg) for every arg, each in its own thread, all started together; results or errors."""
    out: list = [None] * len(args)
    start = threading.Barrier(len(args))

    def go(i: int) -> None:
        start.wait()
        try:
            out[i] = fn(args[i])
        except Exception as err:  # the test compares errors too
            out[i] = err

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(args))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def test_concurrent_statements_share_a_pass_and_get_their_own_rows():
    stub = Stub()
    enc = BatchedEncoder(stub, max_batch=8)
    statements = [["w"] * (i + 1) + ["x" * (i + 2)] for i in range(6)]
    out = _concurrently(lambda s: enc.factors([s], [], batch_size=1), statements)
    assert enc.encoded == 6 and enc.passes == len(stub.calls) < 6  # grouped: fewer passes
    assert max(stub.calls) > 1
    for s, (A, B, row, col) in zip(statements, out):
        assert A.tolist() == [[len(s), len(s[0])]] and row.tolist() == [-len(s)]
        assert B.shape == (0, 2) and col.shape == (0,)
    # not a search's call (several statements, or proofs): passed through, not counted
    enc.factors([["a"], ["b"]], [])
    assert enc.passes == len(stub.calls) - 1 and enc.config == "stub"


def test_an_unencodable_statement_fails_alone():
    enc = BatchedEncoder(Stub(), max_batch=8)
    statements = [["a", "b"], ["BOOM"], ["c"], ["d", "e", "f"]]
    out = _concurrently(lambda s: enc.factors([s], [], batch_size=1), statements)
    assert isinstance(out[1], ValueError) and "BOOM" in str(out[1])
    for i in (0, 2, 3):
        assert out[i][0].tolist() == [[len(statements[i]), len(statements[i][0])]]


def test_max_batch_bounds_a_pass_and_int8_encodes_one_at_a_time():
    stub = Stub()
    enc = BatchedEncoder(stub, max_batch=2)
    _concurrently(lambda s: enc.factors([s], []), [["a"]] * 7)
    assert max(stub.calls) <= 2 and enc.encoded == 7
    index = SimpleNamespace(quantize="int8", query_matcher=Stub(), members=[])
    (enc8,) = batch_queries(index)
    assert enc8.max_batch == 1 and index.query_matcher is enc8
    assert batch_queries(index) == [enc8]  # wrapped once
    assert batch_queries(SimpleNamespace(quantize="none", query_matcher=None)) == []
    # a CPU encoder: one statement a pass, passes on every core; a GPU one: batches, one pass
    (cpu,) = batch_queries(SimpleNamespace(quantize="none", query_matcher=Stub()))
    assert cpu.max_batch == 1 and cpu.at_once >= 1
    gpu_stub = Stub()
    gpu_stub.device = SimpleNamespace(type="cuda")
    (gpu,) = batch_queries(SimpleNamespace(quantize="none", query_matcher=gpu_stub))
    assert (gpu.max_batch, gpu.at_once) == (8, 1)


def test_passes_run_at_once_up_to_the_slots():
    class Overlap(Stub):
        def __init__(self) -> None:
            super().__init__(0.0)
            self.now = self.most = 0
            self.lock = threading.Lock()

        def factors(self, statements, proofs, batch_size=64, progress=False):
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
            time.sleep(0.2)
            with self.lock:
                self.now -= 1
            return super().factors(statements, proofs, batch_size, progress)

    stub = Overlap()
    enc = BatchedEncoder(stub, max_batch=1, at_once=2)
    statements = [["a"] * (i + 1) for i in range(6)]
    out = _concurrently(lambda s: enc.factors([s], []), statements)
    assert stub.most == 2 and enc.passes == 6 and max(stub.calls) == 1
    assert [o[0][0, 0] for o in out] == [len(s) for s in statements]


class Slow:
    """The index's own matcher, its first pass made slow so that the searches queue behind it."""

    def __init__(self, matcher) -> None:
        self.matcher, self.first = matcher, True

    def factors(self, *args, **kw):
        if self.first:
            self.first = False
            time.sleep(0.5)
        return self.matcher.factors(*args, **kw)


def test_concurrent_searches_equal_sequential_ones(fusion_index):
    """Eight typed queries at once through the server's searcher: the same hits, scores and halves
    as one at a time (up to float32 rounding), in fewer forward passes than queries."""
    texts = [str(t)[:300] for t in fusion_index.table["statement_text"].iloc[:8]]
    texts[3] = texts[3] + " $x^2 + y$"
    alone = [fusion_index.search(t, k=10) for t in texts]
    searcher = Searcher(fusion_index, 4000, 50)
    (enc,) = searcher.encoders
    assert enc.max_batch == 1  # a CPU encoder: one statement a pass (search.batching)
    real, kept = enc.matcher, (enc.max_batch, enc.at_once)
    runs = []
    try:
        for enc.max_batch, enc.at_once in ((8, 1), (1, 2)):
            enc.matcher, passes = Slow(real), enc.passes
            searcher.slots = threading.BoundedSemaphore(8 if enc.max_batch > 1 else 2)  # as a GPU's
            runs.append(_concurrently(lambda t: searcher.run(t, 10, 1, ""), texts))
            if enc.max_batch > 1:
                assert enc.passes - passes < len(texts)  # grouped
            else:
                assert enc.passes - passes == len(texts)  # one each, none empty
    finally:
        enc.matcher, (enc.max_batch, enc.at_once) = real, kept
    for (qa, ha), (qb, hb) in (pair for run in runs for pair in zip(alone, run)):
        assert qa.tokens == qb.tokens and qa.warnings == qb.warnings
        assert [h.pair_id for h in ha] == [h.pair_id for h in hb]
        for name in ("score", "learned", "bm25"):
            np.testing.assert_allclose(
                [getattr(h, name) for h in ha], [getattr(h, name) for h in hb], rtol=1e-5, atol=1e-5
            )
        assert [h.bm25_rank for h in ha] == [h.bm25_rank for h in hb]
