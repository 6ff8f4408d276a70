"""Micro-batched query encoding for a server: concurrent searches share one forward pass.

:class:`BatchedEncoder` stands in for a query matcher (``SearchIndex.query_matcher``): a call
``factors([tokens], [])`` of one statement, as a search makes it, joins the statements of the
other searches waiting at that moment, and one thread encodes them all in ONE forward pass
(padded to the longest); each search then scores its own vector. No timer: a search that finds
the encoder idle is encoded at once (one client waits for nothing); those that arrive while a
pass runs form the next one (at most ``max_batch``). One pass runs at a time, so the encoder,
its tokenizer and torch's threads are never shared between passes.

Equal results. Each row of a padded batch is the statement's own encoding (the attention mask
hides the padding from every position, and every encoder pools over real tokens only), so a batched vector equals the
vector encoded alone up to float32 rounding (matrix products of other shapes sum in another
order). Dynamic int8 quantisation is different: it scales each Linear layer's input by the
largest value in the whole batch, so a query's vector would depend on the queries beside it;
an int8 encoder is therefore given ``max_batch=1`` (encoded one at a time, still one pass at a
time). A batch that fails is encoded again one statement at a time, so a statement that cannot
be encoded raises its own error in its own search and the others get their vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

MAX_BATCH = 8  # statements per forward pass at most


class _Request:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.result: tuple | None = None
        self.error: BaseException | None = None
        self.done = False


class BatchedEncoder:
    """A matcher whose one-statement ``factors`` calls from concurrent threads are encoded
    together (module docstring); every other attribute is the wrapped matcher's. ``passes``
    counts the forward passes run for searches, ``encoded`` the statements they encoded."""

    def __init__(self, matcher: Any, max_batch: int = MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.matcher = matcher
        self.max_batch = max_batch
        self.passes = 0
        self.encoded = 0
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._busy = False

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
        while True:
            with self._cond:
                while self._busy and not req.done:
                    self._cond.wait()
                if req.done:
                    break
                self._busy = True  # this thread runs the next pass (its own request included)
                batch = self._pending[: self.max_batch]
                del self._pending[: self.max_batch]
            try:
                self._encode(batch)
            finally:
                with self._cond:
                    for r in batch:
                        r.done = True
                    self._busy = False
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
        self.passes += 1
        self.encoded += len(batch)
        for i, r in enumerate(batch):
            r.result = (A[i : i + 1], B, row[i : i + 1], col)


def batch_queries(index: Any, max_batch: int = MAX_BATCH) -> list[BatchedEncoder]:
    """Wrap the query matchers of ``index`` (its own; those of its ``members``, if any) in
    :class:`BatchedEncoder` (``max_batch=1`` for an int8 encoder: module docstring); a matcher
    wrapped already is kept. Returns the encoders, in that order."""
    size = max_batch if getattr(index, "quantize", "none") == "none" else 1
    out = []
    for holder in [index, *getattr(index, "members", [])]:
        qm = getattr(holder, "query_matcher", None)
        if qm is None:
            continue
        if not isinstance(qm, BatchedEncoder):
            qm = BatchedEncoder(qm, size)
            holder.query_matcher = qm
        out.append(qm)
    return out
