"""Limits per client address, counted in the cache so every server process shares them (Redis when
REDIS_URL is set; in-process memory otherwise, which only a single process can rely on).

A limit is a window that opens with a subject's first event: at most `count` events in the `window_s`
seconds that follow, then a fresh window. That needs one atomic increment per event, which every Django
cache backend has; a token bucket shared across processes would need a script in Redis. The
per-connection buckets of the chat (conversations/chat/protocol.py) smooth bursts within a connection; these
stop one address from opening connections or posting forms without end.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse, JsonResponse
from redis.exceptions import RedisError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Close code for a refused websocket: 4000–4999 are the application's; 4429 reads as HTTP's 429.
CLOSE_RATE_LIMITED = 4429
# Redis (the shared counts, the channel layer) cannot be reached: the widget reconnects with backoff.
CLOSE_UNAVAILABLE = 1011
SOCKET_UNAVAILABLE = {
    "type": "error",
    "code": "unavailable",
    "message": "The chat is unavailable for a moment; it reconnects by itself and nothing you wrote is lost.",
}
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    count: int  # events counted in the current window, this one included
    retry_after_s: int  # until the window ends

    def wait_text(self) -> str:
        if self.retry_after_s < 120:
            return f"{self.retry_after_s} s"
        return f"{math.ceil(self.retry_after_s / 60)} minutes"


@dataclass(frozen=True)
class Limit:
    name: str  # part of the cache key: limits with different names never share counts
    count: int
    window_s: int
    cache_alias: str = "default"

    def _keys(self, subject: str) -> tuple[str, str]:
        # Hashed: a username or an IPv6 address may hold characters some cache backends refuse in keys.
        key = f"ratelimit:{self.name}:{hashlib.sha256(subject.encode()).hexdigest()[:32]}"
        return key, f"{key}:since"

    def _verdict(self, count: int, since: float, now: float, *, allowed: bool) -> Verdict:
        return Verdict(allowed, count, max(1, math.ceil(since + self.window_s - now)))

    def hit(self, subject: str) -> Verdict:
        """Count one event of `subject` (an address, a username) and say whether it is within the limit."""
        key, since_key = self._keys(subject)
        cache, now = caches[self.cache_alias], time.time()
        # The window opens with the first event and both keys expire with it; incr keeps the expiry.
        cache.add(key, 0, timeout=self.window_s)
        cache.add(since_key, now, timeout=self.window_s)
        try:
            count = cache.incr(key)
        except ValueError:  # the window closed between add and incr
            cache.add(key, 1, timeout=self.window_s)
            count = 1
        return self._verdict(count, float(cache.get(since_key, now)), now, allowed=count <= self.count)

    def peek(self, subject: str) -> Verdict:
        """Whether one more event of `subject` would be within the limit, without counting it."""
        key, since_key = self._keys(subject)
        cache, now = caches[self.cache_alias], time.time()
        count = int(cache.get(key, 0))
        return self._verdict(count, float(cache.get(since_key, now)), now, allowed=count < self.count)

    def clear(self, subject: str) -> None:
        caches[self.cache_alias].delete_many(list(self._keys(subject)))


def request_address(request: HttpRequest) -> str:
    """The client's address as the server saw it; behind a proxy, daphne's --proxy-headers puts the
    proxy's X-Forwarded-For here."""
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def scope_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def http_write_limit() -> Limit:
    from django.conf import settings

    return Limit("http-write", settings.RATE_LIMIT_WRITES_PER_IP, settings.RATE_LIMIT_WINDOW_S)


def connection_limit() -> Limit:
    from django.conf import settings

    return Limit("ws-connect", settings.RATE_LIMIT_CONNECTIONS_PER_IP, settings.RATE_LIMIT_WINDOW_S)


class WriteRateLimitMiddleware:
    """At most RATE_LIMIT_WRITES_PER_IP form posts (anything but GET, HEAD, OPTIONS) per address per window:
    sign-ins, staff replies, admin edits. Reads are not counted."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in UNSAFE_METHODS:
            verdict = http_write_limit().hit(request_address(request))
            if not verdict.allowed:
                return too_many(request, verdict)
        return self.get_response(request)


def too_many(request: HttpRequest, verdict: Verdict) -> HttpResponse:
    message = f"Too many requests from your address; try again in {verdict.wait_text()}."
    if "application/json" in request.headers.get("Accept", ""):
        response: HttpResponse = JsonResponse({"error": "rate_limited", "message": message}, status=429)
    else:
        response = HttpResponse(message, status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(verdict.retry_after_s)
    return response


class ConnectionRateLimit:
    """ASGI middleware: at most RATE_LIMIT_CONNECTIONS_PER_IP new websockets per address per window; a refused
    one is told why and closed with 4429 (1011 while Redis cannot be reached)."""

    def __init__(self, inner: ASGIApp, limit: Callable[[], Limit] = connection_limit) -> None:
        self.inner = inner
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.inner(scope, receive, send)
            return
        try:
            verdict = await sync_to_async(self.limit().hit, thread_sensitive=False)(scope_address(scope))
        except RedisError:
            # The count lives in Redis, and so does the chat's channel layer: no socket can work now.
            await refuse_socket(receive, send, SOCKET_UNAVAILABLE, CLOSE_UNAVAILABLE)
            return
        if verdict.allowed:
            await self.inner(scope, receive, send)
            return
        frame = {
            "type": "error",
            "code": "rate_limited",
            "message": f"Too many new chats from your address; try again in {verdict.wait_text()}.",
        }
        await refuse_socket(receive, send, frame, CLOSE_RATE_LIMITED)


async def refuse_socket(receive: Receive, send: Send, frame: dict[str, Any], code: int) -> None:
    """Accept a websocket only to say why it closes (an `error` frame the widget shows): refusing the
    handshake would leave the browser with a bare failure."""
    connect = await receive()
    if connect["type"] != "websocket.connect":
        return
    await close_saying(send, frame, code, accept=True)


async def close_saying(send: Send, frame: dict[str, Any], code: int, *, accept: bool) -> None:
    """Send ``frame`` and close with ``code``, accepting the socket first where it was not yet."""
    if accept:
        await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": json.dumps(frame)})
    await send({"type": "websocket.close", "code": code})
