"""``proofmatch serve INDEX``: a search page and a JSON API over one index (FastAPI + uvicorn + Jinja2).

* ``GET /?q=…&part=…&page=…``: the page: a search box, then the ranked proofs with their scores,
  article titles, and statement and proof rendered as MathML (browsers render MathML Core),
  ten per page;
* ``GET /api/search?q=…&k=…&page=…&part=…``: the same results as JSON (plain-text statement and
  proof, :meth:`proofmatch.search.index.SearchIndex.record`) and ``scorer``, what ranked them
  (``fusion``, ``model``, ``bm25`` or ``tfidf``); a bad query is a 400 with ``{"error": …}``;
* ``GET /api/explain?q=…&id=…&part=…``: why proof ``id`` matches query ``q``: each query and proof
  token's contribution to the score that ranked it, with the method and its budget
  (:mod:`proofmatch.search.explain`); ``GET /?q=…&explain=ID`` shows the same on the page (the
  "Why this proof?" button of each result is a plain form: the page runs no script), tokens
  highlighted by sign and size of their contribution.

Safety. The server binds to 127.0.0.1 unless told otherwise. Stored fragments are shown only
after :func:`proofmatch.search.display.safe_html` (allow-list sanitizer: no scripts, no event
handlers, no URLs); every response also carries a Content-Security-Policy that allows no script
and no resource from anywhere but this server's own style sheet, so even a sanitizer bug could
not run code or fetch anything. Queries are bounded in size (``max_query_chars``) and each
client address in rate (a token bucket: ``rate_per_minute`` with bursts of ``burst``; a 429 with
``Retry-After`` beyond it); explanations count against the same budget and are bounded in
tokens (``max_explain_tokens``).

The page never loses the user's work. A refusal on the page (``/``) is the page itself (status
429, ``Retry-After``) with the query still in its box and the wait in words, never a bare JSON
body: an explanation refused by its rate limit, or by a full pool, is said where the explanation
would have been, under the results of its search, which are kept (the last ``RESULT_CACHE``
pages of results are kept in memory, so showing them again costs no search and takes no token);
a search refused is said above the form. The JSON API answers 429 with ``{"error": …}``.
``proofmatch serve`` on a loopback address (the default) uses the generous limits of
:data:`~proofmatch.search.server.LOCAL_LIMITS` unless a flag sets one: only this machine's user can reach it.

Explanations cannot stall search. An explanation rescores the proof once per token (seconds on a
large model), so it runs apart from searches: in a pool of ``explain_workers`` (default 1)
with at most ``explain_queue`` more waiting (default 2; beyond: a 503 with ``Retry-After``),
never holding a search slot, and with a rate limit of its own per client
(``explain_rate_per_minute``, default 6, bursts of ``explain_burst``, default 3) on top of the
general one. One search a core runs at once (at most :data:`SEARCH_WORKERS`; more wait for a
slot: more slots than cores only share them, docs/measured/pretrained.md), and only the scoring
holds a slot: a query's formulas are converted (LaTeXML: up to 20 s each) before,
so a slow conversion delays its own request only. Their statements are encoded by
:mod:`proofmatch.search.batching` (on a CPU one forward pass per core at once, so concurrent
searches use every core; on a GPU in batches), with results equal to a search alone; each search
scores its own vector.

Slow clients are shed (:func:`proofmatch.search.server.server_config`). A connection must send a whole request head within
``header_timeout`` seconds of opening (or of its previous response): one that trickles its
headers in byte by byte, or sends nothing, is closed then. An idle keep-alive connection is
closed after ``keep_alive_timeout`` seconds. At most ``max_connections`` are open at once (and
fewer than the process's descriptor limit allows); a connection beyond that is closed at once. So
a flood of slow sockets holds at most ``max_connections`` descriptors for at most
``header_timeout`` seconds each, and never locks every client out for longer. Warnings of the
server and of asyncio are logged at most :data:`~proofmatch.search.server.LOG_BURST` times per :data:`~proofmatch.search.server.LOG_WINDOW_S`
seconds each (then one line counts what was left out), so a flood cannot fill a disk with logs.
A client's address is the socket's: ``X-Forwarded-For`` is read only from the proxy named by
``--trusted-proxy`` (none by default), so headers cannot make one client many.
"""

from __future__ import annotations

import argparse
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np
from fastapi import (
    FastAPI,
    Request,
)  # at module level: the endpoints' string annotations resolve here
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.templating import Jinja2Templates

from proofmatch.data.splits import PARTS
from proofmatch.search.batching import batch_queries, cores_at_once
from proofmatch.search.folder import (
    MAX_EXPLAIN_TOKENS,
)  # search.explain (torch) is imported on the first explanation
from proofmatch.search.index import MAX_RESULTS
from proofmatch.search.query import QueryError
from proofmatch.search.server import (
    DEFAULT_MAX_QUERY_CHARS,
    PUBLIC_LIMITS,
    RateLimiter,
    add_arguments,  # noqa: F401 - `proofmatch serve`'s flags: the command line reads them here
    is_loopback,
    limits_for,
    server_config,
)

log = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
PAGE_SIZE = 10
MAX_PAGE_SIZE = 50
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'none'; script-src 'none'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
EXAMPLE = r"Let $f$ be continuous on $[a, b]$. Then $f$ attains its maximum."
BUSY_RETRY_S = 5  # Retry-After of a 503 when the explanation pool is full
SEARCH_WORKERS = 8  # at most this many searches at once (search.batching bounds their passes)
RESULT_CACHE = 64  # pages of results kept, so that an explanation's page needs no new search
HIGHLIGHT_LEVELS = 5  # colour steps per sign (style.css: .tok.pos1-5, .tok.neg1-5)


def highlight(explanation: dict[str, Any]) -> dict[str, Any]:
    """The explanation with a CSS class per token: ``pos``/``neg`` by the sign of its contribution
    and 1-5 by its size relative to the largest one (``zero`` for none). Classes, not inline
    colours: the Content-Security-Policy allows no inline style."""
    top = float(explanation.get("max_abs_weight") or 0.0)

    def cls(w: float) -> str:
        if top <= 0 or w == 0:
            return "zero"
        level = max(1, min(HIGHLIGHT_LEVELS, int(np.ceil(HIGHLIGHT_LEVELS * abs(w) / top - 1e-9))))
        return f"{'pos' if w > 0 else 'neg'}{level}"

    return {
        **explanation,
        **{
            side: [{**t, "cls": cls(t["weight"])} for t in explanation[side]]
            for side in ("statement", "proof")
        },
    }


class Busy(Exception):
    """Every explanation worker is busy and the queue is full (a 503 with ``Retry-After``)."""


def create_app(
    index: Any,
    *,
    max_query_chars: int = DEFAULT_MAX_QUERY_CHARS,
    rate_per_minute: float = PUBLIC_LIMITS[0],
    burst: int = PUBLIC_LIMITS[1],
    max_explain_tokens: int = MAX_EXPLAIN_TOKENS,
    explain_workers: int = 1,
    explain_queue: int = 2,
    explain_rate_per_minute: float = PUBLIC_LIMITS[2],
    explain_burst: int = PUBLIC_LIMITS[3],
):
    """The FastAPI application over a loaded :class:`proofmatch.search.index.SearchIndex`."""
    app = FastAPI(title="proofmatch search", docs_url=None, redoc_url=None, openapi_url=None)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    limiter = RateLimiter(rate_per_minute, burst)
    explain_limiter = RateLimiter(explain_rate_per_minute, explain_burst)
    searcher = Searcher(index, max_query_chars, max_explain_tokens, explain_workers, explain_queue)
    _add_guard(app, limiter, explain_limiter)
    _add_api_routes(app, searcher)
    _add_page_route(app, searcher, templates, Limits(limiter, explain_limiter))
    return app


class Limits:
    """The page's two rate limiters: searches (a page of results not kept) and explanations."""

    def __init__(self, search: RateLimiter, explain: RateLimiter) -> None:
        self.search, self.explain = search, explain


class Searcher:
    """The one index every request shares: its searches and explanations checked (page size, page,
    part); one search a core at once (:attr:`slots`), their statements encoded
    by :mod:`proofmatch.search.batching`, queries parsed (formulas converted) before; explanations
    in their own bounded pool, apart from searches."""

    def __init__(
        self,
        index: Any,
        max_query_chars: int,
        max_explain_tokens: int,
        explain_workers: int = 1,
        explain_queue: int = 2,
    ) -> None:
        if explain_workers < 1 or explain_queue < 0:
            raise ValueError("explain_workers must be >= 1 and explain_queue >= 0")
        self.index = index
        self.max_query_chars = max_query_chars
        self.max_explain_tokens = max_explain_tokens
        self.encoders = batch_queries(index, SEARCH_WORKERS)
        batched = any(e.max_batch > 1 for e in self.encoders)  # a GPU's: searches wait to group
        self.slots = threading.BoundedSemaphore(
            SEARCH_WORKERS if batched else cores_at_once(SEARCH_WORKERS)
        )
        index.corpus_language(), index.proof_vocabulary()  # lazy caches filled before threads
        self.explain_admitted = threading.BoundedSemaphore(explain_workers + explain_queue)
        self.explain_running = threading.BoundedSemaphore(explain_workers)
        self.info = index.describe()
        self.parts = [p for p in PARTS if p in index.meta["parts"]]
        self.kept: OrderedDict[tuple, tuple[Any, list]] = OrderedDict()
        self.kept_lock = threading.Lock()

    def kept_results(self, q: str, k: int, page: int, part: str) -> tuple[Any, list] | None:
        """The results of this search if one of the last :data:`RESULT_CACHE` made it, else None."""
        with self.kept_lock:
            out = self.kept.get((q, k, page, part))
            if out is not None:
                self.kept.move_to_end((q, k, page, part))
            return out

    def _check_part(self, part: str) -> None:
        if part and part not in self.parts:
            raise QueryError(f"unknown part {part!r}; this index has {', '.join(self.parts)}")

    def run(self, q: str, k: int, page: int, part: str, keep: bool = False) -> tuple[Any, list]:
        """Results ``page`` of ``k`` for query ``q`` (``part`` empty: all parts); ``keep`` (the
        page): taken from, and kept in, the last pages of results (the API always searches)."""
        if not 1 <= k <= MAX_PAGE_SIZE:
            raise QueryError(f"k must be between 1 and {MAX_PAGE_SIZE}")
        if page < 1:
            raise QueryError("pages start at 1")
        self._check_part(part)
        kept = self.kept_results(q, k, page, part) if keep else None
        if kept is not None:
            return kept
        query = self.index.parse(
            q, "auto", self.max_query_chars
        )  # formulas converted before a search slot is taken
        with self.slots:
            out = self.index.search(query, k=k, offset=(page - 1) * k, part=part or None)
        if not keep:
            return out
        with self.kept_lock:
            self.kept[(q, k, page, part)] = out
            while len(self.kept) > RESULT_CACHE:
                self.kept.popitem(last=False)
        return out

    def why(self, q: str, pair_id: str, part: str) -> dict[str, Any]:
        """Why proof ``pair_id`` matches query ``q`` (:func:`proofmatch.search.explain.explain`),
        in the explanation pool; :class:`Busy` when it and its queue are full."""
        from proofmatch.search.explain import explain

        self._check_part(part)
        if not self.explain_admitted.acquire(blocking=False):
            raise Busy(f"every explanation worker is busy; retry in {BUSY_RETRY_S} s")
        try:
            query = self.index.parse(q, "auto", self.max_query_chars)
            with self.explain_running:  # no search slot: searches go on meanwhile
                return explain(
                    self.index,
                    query,
                    pair_id,
                    part=part or None,
                    max_tokens=self.max_explain_tokens,
                )
        finally:
            self.explain_admitted.release()


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


def _add_guard(app: FastAPI, limiter: RateLimiter, explain_limiter: RateLimiter) -> None:
    """Every response: the rate limit per client (style sheet exempt; an explanation also takes
    from its own) and the security headers."""

    @app.middleware("http")
    async def guard(request: Request, call_next):
        client = _client(request)
        path = request.url.path
        # the page takes its own tokens (_page_context): a refusal there is shown on the page
        exempt = path.startswith("/static/") or path == "/"
        wait = 0.0 if exempt else limiter.take(client)
        explaining = path == "/api/explain"
        if wait <= 0 and explaining:
            wait = explain_limiter.take(client)
        if wait > 0:
            response = JSONResponse(
                {"error": f"too many requests; retry in {wait:.0f} s"},
                status_code=429,
                headers={"Retry-After": str(max(1, round(wait)))},
            )
        else:
            response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response


def _add_api_routes(app: FastAPI, searcher: Searcher) -> None:
    """The style sheet, ``/api/search`` and ``/api/explain`` (a bad query: 400 with ``{"error": …}``)."""
    index, info = searcher.index, searcher.info

    @app.get("/static/style.css")
    def style():
        return FileResponse(HERE / "static" / "style.css", media_type="text/css")

    @app.get("/api/search")
    def api_search(q: str = "", k: int = PAGE_SIZE, page: int = 1, part: str = ""):
        try:
            query, hits = searcher.run(q, k, page, part)
        except QueryError as err:
            return JSONResponse({"error": str(err)}, status_code=400)
        return {
            "index": info,
            "scorer": info["scorer"],
            "query": {
                "kind": query.kind,
                "n_tokens": len(query.tokens),
                "pair_id": query.pair_id,
                "converters": query.converters,
                "warnings": query.warnings,
            },
            "page": page,
            "k": k,
            "part": part or None,
            "results": [index.record(h) for h in hits],
        }

    @app.get("/api/explain")
    def api_explain(q: str = "", id: str = "", part: str = ""):
        try:
            out = searcher.why(q, id, part)
        except QueryError as err:
            return JSONResponse({"error": str(err)}, status_code=400)
        except Busy as err:
            return JSONResponse(
                {"error": str(err)}, status_code=503, headers={"Retry-After": str(BUSY_RETRY_S)}
            )
        return {"index": info, **out}


def _add_page_route(
    app: FastAPI, searcher: Searcher, templates: Jinja2Templates, limits: Limits
) -> None:
    """``/``: the search page (``explain``: also why that proof matches)."""

    @app.get("/", response_class=HTMLResponse)
    def page(request: Request, q: str = "", page: int = 1, part: str = "", explain: str = ""):
        ctx, status = _page_context(searcher, q, page, part, explain, limits, _client(request))
        response = templates.TemplateResponse(request, "search.html", ctx, status_code=status)
        if ctx["retry_after"]:
            response.headers["Retry-After"] = str(ctx["retry_after"])
        return response


def _wait_words(wait: float) -> str:
    s = max(1, round(wait))
    return f"{s} second{'s' if s != 1 else ''}"


def _add_explanation(
    ctx: dict[str, Any],
    searcher: Searcher,
    q: str,
    part: str,
    explain_id: str,
    hits: list,
    limits: Limits | None,
    client: str,
) -> int:
    """Put the explanation of ``explain_id`` asked for on the page (``ctx``) and return the
    page's status: 200, or its refusal (429 rate limit, 503 full pool) or error (400), said where
    the explanation would be."""
    status = 200
    ctx["explain_on_page"] = any(h.pair_id == explain_id for h in hits)
    wait = limits.explain.take(client) if limits is not None else 0.0
    if wait > 0:
        ctx["explain_error"] = (
            f"too many explanations from this address in a short time; the results are "
            f"kept: ask again in {_wait_words(wait)}."
        )
        ctx["retry_after"] = max(1, round(wait))
        return 429
    try:
        ctx["explanation"] = highlight(searcher.why(q, explain_id, part))
    except QueryError as err:
        ctx["explain_error"], status = str(err), 400
    except Busy as err:
        ctx["explain_error"], status = str(err), 503
        ctx["retry_after"] = BUSY_RETRY_S
    return status


def _page_context(
    searcher: Searcher,
    q: str,
    page: int,
    part: str,
    explain_id: str,
    limits: Limits | None = None,
    client: str = "?",
) -> tuple[dict[str, Any], int]:
    """The search page's template context and HTTP status: the hits with their HTML, links to the
    previous and next page, and the explanation asked for (a bad query or id: its error, 400).
    Rate limits (``limits``) are taken here, not by the guard, so that a refusal is said on the
    page (429): a search not kept takes a search token; an explanation an explanation token, and
    when it is refused the results stay, with the wait where the explanation would be."""
    index = searcher.index
    ctx: dict[str, Any] = {
        "q": q,
        "part": part,
        "parts": searcher.parts,
        "info": searcher.info,
        "hits": [],
        "error": None,
        "max_chars": searcher.max_query_chars,
        "example": EXAMPLE,
        "page": page,
        "query": None,
        "prev_url": None,
        "next_url": None,
        "explanation": None,
        "explain_error": None,
        "explain_on_page": False,
        "explain_id": explain_id,
        "retry_after": 0,
    }
    status = 200
    if not q.strip():
        return ctx, status
    if limits is not None and searcher.kept_results(q, PAGE_SIZE, page, part) is None:
        wait = limits.search.take(client)
        if wait > 0:
            ctx["error"] = (
                f"Too many searches from this address in a short time: this one was not run. "
                f"Search again in {_wait_words(wait)}."
            )
            ctx["retry_after"] = max(1, round(wait))
            return ctx, 429
    try:
        query, hits = searcher.run(q, PAGE_SIZE, page, part, keep=True)
    except QueryError as err:
        ctx["error"], status = str(err), 400
        return ctx, status
    ctx["query"] = query
    ctx["hits"] = [
        {
            **index.record(h),
            "statement_html": index.html(h.row, "statement"),
            "proof_html": index.html(h.row, "proof"),
        }
        for h in hits
    ]
    base = {"q": q, "part": part}
    if page > 1:
        ctx["prev_url"] = "/?" + urlencode({**base, "page": page - 1})
    if page * PAGE_SIZE < min(index.size(part or None), MAX_RESULTS):
        ctx["next_url"] = "/?" + urlencode({**base, "page": page + 1})
    if explain_id:
        status = _add_explanation(ctx, searcher, q, part, explain_id, hits, limits, client)
    return ctx, status


def main(args: argparse.Namespace) -> int:
    import uvicorn

    from proofmatch.logs import setup_logging
    from proofmatch.models.runtime import set_threads
    from proofmatch.search.index import SearchIndex

    setup_logging(None)
    set_threads(args.threads)
    if not is_loopback(args.host):
        log.warning("binding %s: the page is reachable from other machines", args.host)
    index = SearchIndex(args.index, quantize=args.quantize)
    rate, burst, explain_rate, explain_burst = limits_for(args)
    log.info(
        "rate limits per client: %g searches a minute (bursts of %d), %g explanations a minute "
        "(bursts of %d)",
        rate,
        burst,
        explain_rate,
        explain_burst,
    )
    app = create_app(
        index,
        max_query_chars=args.max_query_chars,
        rate_per_minute=rate,
        burst=burst,
        max_explain_tokens=args.max_explain_tokens,
        explain_workers=args.explain_workers,
        explain_queue=args.explain_queue,
        explain_rate_per_minute=explain_rate,
        explain_burst=explain_burst,
    )
    log.info("serving %s (%d proofs) on http://%s:%d/", args.index, index.n, args.host, args.port)
    uvicorn.Server(
        server_config(
            app,
            args.host,
            args.port,
            header_timeout=args.header_timeout,
            keep_alive_timeout=args.keep_alive_timeout,
            max_connections=args.max_connections,
            trusted_proxy=args.trusted_proxy,
        )
    ).run()
    return 0
