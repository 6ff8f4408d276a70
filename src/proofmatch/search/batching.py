"""Query encoding for a server: concurrent searches' forward passes, bounded and batched.

:class:`BatchedEncoder` stands in for a query matcher (``SearchIndex.query_matcher``). A call
``factors([tokens], [])`` of one statement, as a search makes it, waits for one of ``at_once``
encoding slots; the thread that gets one encodes its statement together with those of the
searches waiting at that moment (at most ``max_batch``) in ONE forward pass, padded to the
longest; each search then scores its own vector. No timer: a search that finds a slot free is
encoded at once (one client waits for nothing).

What :func:`batch_queries` picks, and why. On a CPU a forward pass costs about its padded
length: a fine-tuned 6-layer x 384 BERT encodes 96 Stacks test statements in 31 ms of CPU each
one at a time and 36 ms each in batches of 8 (padding to the longest outweighs the per-pass
overhead), so a CPU encoder batches nothing (``max_batch=1``) and runs one pass per core
(``at_once`` = cores / torch threads, at most :data:`MAX_BATCH`): concurrent searches use every
core, where one lock used one. A GPU encoder batches (``max_batch`` :data:`MAX_BATCH`), one pass
at a time.

Equal results. With ``max_batch=1`` each statement is encoded by the very call a search alone
makes. In a padded batch each row is the statement's own encoding (the attention mask hides
the padding from every position, and every encoder pools over real tokens only), equal to the
vector encoded alone up to float32 rounding: on the Stacks index, 100 typed queries searched by
8 threads in batches of up to 8 gave the same top 10 as searched alone, scores within 7e-6.
Dynamic int8 quantisation is different: it scales each Linear layer's input by the largest value
in the whole batch, so a query's vector depends on the queries beside it (the same test: 2 of
100 top-10 lists the same, learned scores off by up to 4.3); an int8 encoder never batches. A
batch that fails is encoded again one statement at a time, so a statement that cannot be
encoded raises its own error in its own search and the others get their vectors. Concurrent
passes share the model read-only (inference mode) and the tokenizer, whose settings are the
same for every call.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

MAX_BATCH = 8  # statements per forward pass at most


class _Request:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.result: tuple | None = None
        self.error: BaseException | None = None
        self.taken = False  # in a pass now
        self.done = False


class BatchedEncoder:
    """A matcher whose one-statement ``factors`` calls from concurrent threads are encoded
    together (module docstring); every other attribute is the wrapped matcher's. ``passes``
    counts the forward passes run for searches, ``encoded`` the statements they encoded."""

    def __init__(self, matcher: Any, max_batch: int = MAX_BATCH, at_once: int = 1) -> None:
        if max_batch < 1 or at_once < 1:
            raise ValueError("max_batch and at_once must be >= 1")
        self.matcher = matcher
        self.max_batch, self.at_once = max_batch, at_once
        self.passes = 0
        self.encoded = 0
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._running = 0  # passes running now

    def __getattr__(self, name: str) -> Any:
        return getattr(self.matcher, name)

    def factors(
        self,
        statement_tokens: Sequence[Sequence[str]],
        proof_tokens: Sequence[Sequence[str]],
        batch_size: int = 64,
        progress: bool = False,
    ) -> tuple:
        """As the matcher's ``factors``; one statement and no proof (a search): batched."""
        if len(statement_tokens) != 1 or len(proof_tokens):
            return self.matcher.factors(statement_tokens, proof_tokens, batch_size, progress)
        req = _Request(list(statement_tokens[0]))
        with self._cond:
            self._pending.append(req)
            # wait until done by another's pass, or until a slot is free while still pending
            while not req.done and (req.taken or self._running >= self.at_once):
                self._cond.wait()
            batch = []
            if not req.done:  # this thread runs a pass: its own statement, then the oldest
                self._pending.remove(req)
                batch = [req, *self._pending[: self.max_batch - 1]]
                del self._pending[: self.max_batch - 1]
                for r in batch:
                    r.taken = True
                self._running += 1
        if batch:
            try:
                self._encode(batch)
            finally:
                with self._cond:
                    for r in batch:
                        r.done = True
                    self._running -= 1
                    self._cond.notify_all()
        if req.error is not None:
            raise req.error
        return req.result

    def _encode(self, batch: list[_Request]) -> None:
        """One forward pass for ``batch``; if it fails, one per statement (errors kept apart)."""
        try:
            self._pass(batch)
        except Exception as err:
            if len(batch) == 1:
                batch[0].error = err
                return
            for r in batch:
                try:
                    self._pass([r])
                except Exception as one:
                    r.error = one

    def _pass(self, batch: list[_Request]) -> None:
        A, B, row, col = self.matcher.factors([r.tokens for r in batch], [], batch_size=len(batch))
        with self._cond:
            self.passes += 1
            self.encoded += len(batch)
        for i, r in enumerate(batch):
            r.result = (A[i : i + 1], B, row[i : i + 1], col)


def cores_at_once(limit: int) -> int:
    """How many single-statement passes (or searches) fit the cores at once: the cores over
    torch's threads a pass, at least 1, at most ``limit``."""
    import torch

    return max(1, min(limit, (os.cpu_count() or 1) // max(1, torch.get_num_threads())))


def batch_queries(index: Any, max_batch: int = MAX_BATCH) -> list[BatchedEncoder]:
    """Wrap the query matchers of ``index`` (its own; those of its ``members``, if any) in
    :class:`BatchedEncoder`: on a CPU one statement a pass, one pass per core; on a GPU batches of
    ``max_batch``, one at a time; an int8 encoder never batches (module docstring). A matcher
    wrapped already is kept. Returns the encoders, in that order."""
    cores = cores_at_once(max_batch)
    out = []
    for holder in [index, *getattr(index, "members", [])]:
        qm = getattr(holder, "query_matcher", None)
        if qm is None:
            continue
        if not isinstance(qm, BatchedEncoder):
            device = getattr(qm, "device", None)
            cpu = device is None or getattr(device, "type", "cpu") == "cpu"
            int8 = getattr(index, "quantize", "none") != "none"
            size = 1 if cpu or int8 else max_batch
            qm = BatchedEncoder(qm, size, cores if cpu else 1)
            holder.query_matcher = qm
        out.append(qm)
    return out
