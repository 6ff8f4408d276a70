"""``proofmatch serve``'s options and its defences against clients: per-client rate limits and
slow-client shedding (:mod:`proofmatch.search.web`'s docstring says what each does and why).

Apart from the page and its API (:mod:`proofmatch.search.web`) because none of it knows about
searching: a token bucket, the limits a bound address gets, uvicorn's configuration, its
connection protocol and log filter.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import resource
import threading
import time
from typing import Any

from proofmatch.search.folder import MAX_EXPLAIN_TOKENS

DEFAULT_MAX_QUERY_CHARS = 4000
# rate limits: (searches a minute, burst, explanations a minute, explanation burst)
PUBLIC_LIMITS = (60.0, 20, 6.0, 3)  # served to other machines
LOCAL_LIMITS = (600.0, 100, 60.0, 20)  # bound to a loopback address: only this machine's user


class RateLimiter:
    """Token bucket per client: ``rate_per_minute`` tokens a minute, at most ``burst`` saved."""

    def __init__(self, rate_per_minute: float, burst: int, max_clients: int = 10000):
        if rate_per_minute <= 0 or burst < 1:
            raise ValueError("rate_per_minute must be > 0 and burst >= 1")
        self.rate, self.burst, self.max_clients = rate_per_minute / 60.0, float(burst), max_clients
        self.buckets: dict[str, tuple[float, float]] = {}
        self.lock = threading.Lock()

    def take(self, client: str, now: float | None = None) -> float:
        """0 when the request may go on, else the seconds until it may."""
        now = time.monotonic() if now is None else now
        with self.lock:
            if len(self.buckets) >= self.max_clients and client not in self.buckets:
                self.buckets.clear()  # a flood of addresses: forget, rather than grow without bound
            tokens, last = self.buckets.get(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1.0:
                self.buckets[client] = (tokens, now)
                return (1.0 - tokens) / self.rate
            self.buckets[client] = (tokens - 1.0, now)
            return 0.0


HEADER_TIMEOUT_S = 10.0  # a request head must arrive within this of opening or the last response
KEEP_ALIVE_TIMEOUT_S = 5  # an idle keep-alive connection is closed after this
MAX_CONNECTIONS = 256  # open connections at once; beyond: closed at once
LOG_WINDOW_S = 10.0
LOG_BURST = 20  # records per message per window (server and asyncio warnings)
_FD_RESERVE = 64  # descriptors kept free of connections (index files, logs, the listener)


class BoundedLog(logging.Filter):
    """At most ``burst`` records of one message template per ``window`` seconds; the first record
    after a window that dropped some says how many were left out."""

    def __init__(self, burst: int = LOG_BURST, window: float = LOG_WINDOW_S):
        super().__init__()
        self.burst, self.window = burst, window
        self.seen: dict[str, tuple[float, int, int]] = {}  # msg -> (window start, passed, dropped)

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        key = str(record.msg)[:200]
        start, passed, dropped = self.seen.get(key, (now, 0, 0))
        if now - start >= self.window:
            if dropped:
                record.msg = (
                    f"{record.msg} [{dropped} more like this in {self.window:g} s left out]"
                )
            start, passed, dropped = now, 0, 0
        if passed >= self.burst:
            self.seen[key] = (start, passed, dropped + 1)
            return False
        if len(self.seen) >= 1000 and key not in self.seen:
            self.seen.clear()
        self.seen[key] = (start, passed + 1, dropped)
        record.exc_info = record.exc_info if passed < 3 else None  # tracebacks: the first few only
        return True


def bound_logs() -> BoundedLog:
    """Install :class:`BoundedLog` on the loggers a connection flood writes to."""
    bounded = BoundedLog()
    for name in ("asyncio", "uvicorn.error", "uvicorn.access", "uvicorn"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, BoundedLog) for f in logger.filters):
            logger.addFilter(bounded)
    return bounded


def connection_limit(wanted: int) -> int:
    """``wanted``, but below the process's descriptor limit (with room for its own files)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - _FD_RESERVE))


def shedding_protocol(header_timeout: float, max_connections: int) -> type:
    """uvicorn's h11 protocol with a deadline for a request head and a cap on connections."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class SheddingProtocol(H11Protocol):
        shed = 0  # connections closed at once (over the cap), over the server's life
        timed_out = 0  # connections closed for a request head not sent in time

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._head_timer: asyncio.TimerHandle | None = None
            if len(self.connections) > max_connections:
                type(self).shed += 1
                self.logger.warning(
                    "too many open connections (over %d): closing new ones", max_connections
                )
                transport.abort()
                return
            self._arm_head_timer()

        def _arm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_timer = self.loop.call_later(header_timeout, self._head_timeout)

        def _head_timeout(self) -> None:
            self._head_timer = None
            if self.cycle is not None and not self.cycle.response_complete:
                return  # a request is being answered; its response re-arms the timer
            if not self.transport.is_closing():
                type(self).timed_out += 1
                self.logger.warning(
                    "closing a connection that sent no request head in %g s", header_timeout
                )
                self.transport.abort()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_head_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            if getattr(self, "_head_timer", None) is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)

    return SheddingProtocol


def server_config(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    header_timeout: float = HEADER_TIMEOUT_S,
    keep_alive_timeout: int = KEEP_ALIVE_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
    trusted_proxy: str | None = None,
    log_level: str = "info",
) -> Any:
    """The uvicorn configuration that sheds slow clients (:mod:`proofmatch.search.web`'s docstring): the head deadline,
    the keep-alive timeout, the connection cap and proxy headers only from ``trusted_proxy``."""
    import uvicorn

    cap = connection_limit(max_connections)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        server_header=False,
        http=shedding_protocol(header_timeout, cap),
        timeout_keep_alive=keep_alive_timeout,
        backlog=min(2048, cap),
        proxy_headers=trusted_proxy is not None,
        forwarded_allow_ips=trusted_proxy or "",
    )
    bound_logs()  # after uvicorn's own logging set-up
    return config


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


QUANTIZE_HELP = (
    "encode typed queries with int8 Linear layers (faster; ranks a little differently: "
    "docs/measured/pretrained.md#search)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("index", help="index folder (proofmatch index)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8000, help="port to listen on")
    parser.add_argument(
        "--max-query-chars",
        type=int,
        default=DEFAULT_MAX_QUERY_CHARS,
        help="longest query accepted",
    )
    local, public = LOCAL_LIMITS, PUBLIC_LIMITS
    parser.add_argument(
        "--rate-per-minute",
        type=float,
        help=f"searches per minute per client (default {local[0]:g} on a loopback --host, "
        f"else {public[0]:g})",
    )
    parser.add_argument(
        "--burst",
        type=int,
        help="searches a client may make at once before the rate applies "
        f"(default {local[1]} on a loopback --host, else {public[1]})",
    )
    parser.add_argument(
        "--max-explain-tokens",
        type=int,
        default=MAX_EXPLAIN_TOKENS,
        help="explanations: most query + proof tokens masked (one rescoring each)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    parser.add_argument("--quantize", choices=("none", "int8"), default="none", help=QUANTIZE_HELP)
    parser.add_argument(
        "--explain-workers", type=int, default=1, help="explanations computed at once"
    )
    parser.add_argument(
        "--explain-queue", type=int, default=2, help="explanations waiting; beyond: 503"
    )
    parser.add_argument(
        "--explain-rate-per-minute",
        type=float,
        help=f"explanations per minute per client (default {local[2]:g} on a loopback --host, "
        f"else {public[2]:g})",
    )
    parser.add_argument(
        "--explain-burst",
        type=int,
        help="explanations a client may ask at once before its rate applies "
        f"(default {local[3]} on a loopback --host, else {public[3]})",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=HEADER_TIMEOUT_S,
        help="seconds a connection has to send a request head (after opening or a response)",
    )
    parser.add_argument(
        "--keep-alive-timeout",
        type=int,
        default=KEEP_ALIVE_TIMEOUT_S,
        help="seconds an idle keep-alive connection stays open",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="open connections at once (beyond: closed at once; kept below the descriptor limit)",
    )
    parser.add_argument(
        "--trusted-proxy",
        default=None,
        help="address of a reverse proxy whose X-Forwarded-For names the client (default: none; "
        "every client is its socket's address)",
    )


def limits_for(args: argparse.Namespace) -> tuple[float, int, float, int]:
    """The four rate limits: each flag given, else :data:`LOCAL_LIMITS` when the server binds a
    loopback address (only this machine reaches it), else :data:`PUBLIC_LIMITS`."""
    defaults = LOCAL_LIMITS if is_loopback(args.host) else PUBLIC_LIMITS
    given = (args.rate_per_minute, args.burst, args.explain_rate_per_minute, args.explain_burst)
    rate, burst, explain_rate, explain_burst = (
        d if g is None else g for g, d in zip(given, defaults)
    )
    return float(rate), int(burst), float(explain_rate), int(explain_burst)
