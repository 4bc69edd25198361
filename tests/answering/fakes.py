"""Faked model-provider HTTP responses: Anthropic's (for tests that run the real `anthropic` SDK without
a network) and OpenAI-compatible chat completions (at the end), both served by one scripted transport.

The SDK (2.x) is built on `httpx2`, not `httpx`: it rejects `httpx` clients and transports, so the
fake is an `httpx2.MockTransport`. Typical use:

    api = FakeModelAPI([error_response(529, "overloaded_error", "Overloaded"), text_stream(["Hi", "!"])])
    client = ClaudeClient(api_key="test-key", model="claude-sonnet-4-5", http_client=api.http_client())
    ...
    assert api.bodies[0]["stream"] is True

The event and body shapes follow https://docs.anthropic.com/en/api/messages-streaming and what
`anthropic.lib.streaming._messages.accumulate_event` reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import httpx2

from answering.ground.grounding import Grounder
from answering.privacy.masking import mask_pii
from answering.providers.claude import ClaudeClient
from answering.providers.openai_compatible import OpenAICompatibleClient
from answering.services import TurnServices
from knowledge.rerank import default_reranker

MODEL = "claude-sonnet-5-5"

Event = dict[str, Any]
# A scripted reply: a response, an exception the transport raises, or a function of the request (for a fake
# model whose answer depends on what it was sent).
Reply = httpx2.Response | Exception | Callable[[httpx2.Request], httpx2.Response]


def _message(content: list[dict[str, Any]], *, stop_reason: str | None, model: str) -> dict[str, Any]:
    return {
        "id": "msg_fake01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 0 if stop_reason is None else 7},
    }


def sse_body(events: Iterable[Event]) -> bytes:
    """Encode events as Server-Sent Events; each event's name is its `type`, as the API sends them."""
    return b"".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events)


def _chunks_then_raise(body: bytes, error: Exception) -> Iterator[bytes]:
    yield body
    raise error


def sse_response(
    events: Iterable[Event],
    *,
    then_raise: Exception | None = None,
    headers: Mapping[str, str] | None = None,
) -> httpx2.Response:
    """A 200 `text/event-stream` response carrying `events`.

    `then_raise` is raised once the events are read, as a connection dropped mid-stream would
    (e.g. `httpx2.ReadTimeout("stalled")` or `httpx2.RemoteProtocolError("peer closed")`).
    """
    body = sse_body(events)
    all_headers = {"content-type": "text/event-stream", "request-id": "req_fake01", **(headers or {})}
    if then_raise is None:
        return httpx2.Response(200, headers=all_headers, content=body)
    return httpx2.Response(200, headers=all_headers, content=_chunks_then_raise(body, then_raise))


def message_start(*, model: str = MODEL) -> Event:
    return {"type": "message_start", "message": _message([], stop_reason=None, model=model)}


def text_block_events(chunks: Sequence[str], *, index: int = 0) -> list[Event]:
    """One text content block whose text arrives as `chunks`, with a ping in the middle as the API sends."""
    deltas: list[Event] = [
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}}
        for chunk in chunks
    ]
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        *deltas[:1],
        {"type": "ping"},
        *deltas[1:],
        {"type": "content_block_stop", "index": index},
    ]


def message_end(*, stop_reason: str = "end_turn") -> list[Event]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 7},
        },
        {"type": "message_stop"},
    ]


def error_event(error_type: str = "overloaded_error", message: str = "Overloaded") -> Event:
    """The `error` event the API sends when a stream fails after it has started."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


def text_stream_events(chunks: Sequence[str], *, stop_reason: str = "end_turn", model: str = MODEL) -> list[Event]:
    """A complete streamed reply: message_start, one text block made of `chunks`, message_delta, message_stop.

    No chunks gives a reply with no content block at all.
    """
    blocks = text_block_events(chunks) if chunks else []
    return [message_start(model=model), *blocks, *message_end(stop_reason=stop_reason)]


def text_stream(chunks: Sequence[str], *, stop_reason: str = "end_turn", model: str = MODEL) -> httpx2.Response:
    """A complete streamed reply whose text arrives as `chunks`."""
    return sse_response(text_stream_events(chunks, stop_reason=stop_reason, model=model))


def message_response(
    text: str | None,
    *,
    stop_reason: str = "end_turn",
    content: list[dict[str, Any]] | None = None,
    model: str = MODEL,
) -> httpx2.Response:
    """A non-streaming Messages API reply: one text block, or `content` as given (`text=None, content=[]`: empty)."""
    blocks = content if content is not None else ([{"type": "text", "text": text}] if text is not None else [])
    return httpx2.Response(
        200,
        headers={"request-id": "req_fake01"},
        json=_message(blocks, stop_reason=stop_reason, model=model),
    )


def error_response(
    status: int,
    error_type: str,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
) -> httpx2.Response:
    """An API error, e.g. `error_response(529, "overloaded_error", "Overloaded")` or
    `error_response(429, "rate_limit_error", "Slow down", headers={"retry-after": "7"})`."""
    return httpx2.Response(
        status,
        headers={"request-id": "req_fake01", **(headers or {})},
        json={"type": "error", "error": {"type": error_type, "message": message}},
    )


class FakeModelAPI:
    """Answers each request with the next scripted reply (a response, or an exception to raise as the
    transport would, e.g. `httpx2.ReadTimeout("timed out")`) and records the requests.

    A request beyond the script fails the test, so an unexpected retry cannot pass unnoticed.
    """

    def __init__(self, replies: Iterable[Reply]) -> None:
        self._replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self._replies:
            raise AssertionError(f"unexpected request #{len(self.requests)}: {request.method} {request.url}")
        reply = self._replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(request)
        return reply

    def http_client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self._handle))

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON body of each request, in order."""
        return [json.loads(request.content) for request in self.requests]

    @property
    def remaining(self) -> int:
        return len(self._replies)


def services(embedder, *, api: FakeModelAPI | None = None, provider: str = "anthropic") -> TurnServices:
    """A turn's services with the offline reader (no `api`), or Claude or an OpenAI-compatible server
    (`provider="openai"`) answering from `api`'s script."""
    client: ClaudeClient | OpenAICompatibleClient | None = None
    if api is not None and provider == "anthropic":
        client = ClaudeClient(
            api_key="sk-test", model="claude-test", http_client=api.http_client(), sleep=lambda _: None, max_retries=2
        )
    elif api is not None:
        client = OpenAICompatibleClient(
            base_url=OPENAI_BASE_URL, model="local-test", http_client=api.http_client(), sleep=lambda _: None
        )
    return TurnServices(
        embedder=embedder,
        reranker=default_reranker(),
        grounder=Grounder(embedder, default_reranker()),
        mask=lambda text: mask_pii(text).text,
        model=client,
    )


def claude_says(*texts: str) -> FakeModelAPI:
    replies: list[Reply] = [text_stream([t[: len(t) // 2], t[len(t) // 2 :]]) for t in texts]
    return FakeModelAPI(replies)


# --- OpenAI-compatible chat completions -------------------------------------------------------------
OPENAI_BASE_URL = "http://127.0.0.1:11434/v1"


def openai_stream(
    chunks: Sequence[str], *, finish: str | None = "stop", done: bool = True, then_raise: Exception | None = None
) -> httpx2.Response:
    """A streamed completion: one `data:` chunk per piece of text, the finish reason, then `[DONE]`."""
    events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    events += [{"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]} for c in chunks]
    if finish is not None:
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    body = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + (b"data: [DONE]\n\n" if done else b"")
    headers = {"content-type": "text/event-stream"}
    if then_raise is None:
        return httpx2.Response(200, headers=headers, content=body)
    return httpx2.Response(200, headers=headers, content=_chunks_then_raise(body, then_raise))


def openai_message(
    text: str | None, *, finish: str = "stop", tool_calls: list[dict[str, Any]] | None = None
) -> httpx2.Response:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return httpx2.Response(200, json={"choices": [{"index": 0, "message": message, "finish_reason": finish}]})


def openai_tool_call(name: str, arguments: str) -> httpx2.Response:
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    return openai_message(None, finish="tool_calls", tool_calls=[call])


def openai_error(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, headers=headers, json={"error": {"message": message, "type": "server_error"}})
