"""The OpenAI-compatible provider: the only module that talks to a chat-completions server (OpenAI itself,
Ollama, vLLM, llama.cpp's server, LM Studio). It implements `answering.providers.base.LanguageModel` over
plain HTTP (httpx2, the client the Anthropic SDK already brings), because local servers differ from
OpenAI in small ways an SDK would reject: no API key, no `usage`, an `error` object inside the stream.

The API key, when there is one, never appears in a message, a log line or the client's repr.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
from django.conf import settings

from answering.providers.base import (
    JUDGE_MAX_TOKENS,
    JUDGE_SYSTEM,
    REFUND_TOOL,
    REWRITE_MAX_TOKENS,
    REWRITE_SYSTEM,
    TOOL_MAX_TOKENS,
    TOOLS_SYSTEM,
    Failure,
    MalformedReply,
    ProviderUnavailable,
    Retries,
    StreamedText,
    check_roles,
    judge_prompt,
    limits_from_settings,
    read_rewrite,
    read_verdict,
    retry_after_s,
    rewrite_prompt,
)

T = TypeVar("T")

# 408 and 429 are "try again later"; a 5xx is the server's own trouble (a local one still loading its model).
RETRYABLE_STATUSES = frozenset({408, 409, 429})


class ServerError(Exception):
    """The server answered with an error: an HTTP status, or an `error` object inside a stream."""

    def __init__(self, status: int | None, message: str, headers: httpx2.Headers | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or httpx2.Headers()


class _StreamCutShort(Exception):
    """The stream closed before a finish reason or `[DONE]`: the reply may be incomplete."""


_ATTEMPT_FAILURES = (httpx2.TransportError, ServerError, _StreamCutShort)


@dataclass
class OpenAICompatibleClient:
    base_url: str  # up to and including the API version, e.g. http://127.0.0.1:11434/v1
    model: str
    api_key: str = field(default="", repr=False)
    timeout_s: float = 60.0
    max_retries: int = 2
    backoff_s: float = 1.0
    max_tokens: int = 512
    cooldown_s: float = 0.0  # after a call fails every attempt, skip the server this long (providers.Retries)
    http_client: httpx2.Client | None = field(default=None, repr=False)  # tests hand in a MockTransport client
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    provider: str = field(default="openai", init=False)
    _http: httpx2.Client = field(init=False, repr=False, compare=False)
    _retries: Retries = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self._http = self.http_client or httpx2.Client()
        self._retries = Retries(
            f"The model server at {self.base_url}", self.max_retries, self.backoff_s, self.sleep, self.cooldown_s
        )

    @property
    def attempts(self) -> int:
        return self._retries.attempts

    @classmethod
    def from_settings(cls) -> OpenAICompatibleClient:
        return cls(base_url=settings.LLM_BASE_URL, **limits_from_settings())

    def stream_reply(
        self,
        *,
        system: str,
        messages: list[dict[str, str]],
        on_delta: Callable[[str], None] | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> str:
        """See `LanguageModel.stream_reply`; `on_reset` is called only before a retry, never on success."""
        check_roles(messages)
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, *messages],
            "max_tokens": self.max_tokens,
            "stream": True,
        }
        shown = StreamedText(on_delta, on_reset)

        def attempt() -> str:
            parts: list[str] = []
            finish: str | None = None
            with self._http.stream(
                "POST", self._url(), json=body, headers=self._headers(), timeout=self.timeout_s
            ) as response:
                self._raise_for_status(response, streamed=True)
                for chunk in _events(response.iter_lines()):
                    if "error" in chunk:
                        raise ServerError(None, _error_message(chunk))
                    choice = _first_choice(chunk)
                    if choice is None:
                        continue  # a usage-only chunk
                    text = (choice.get("delta") or {}).get("content") or ""
                    parts.append(text)
                    shown.emit(text)
                    finish = choice.get("finish_reason") or finish
            if finish is None:
                raise _StreamCutShort("the stream ended before a finish reason")
            return _text_of("".join(parts), finish)

        return self._with_retries(attempt, before_retry=shown.before_retry)

    def judge(self, *, claim: str, passage: str) -> bool:
        message, finish = self._complete(JUDGE_SYSTEM, judge_prompt(claim, passage), JUDGE_MAX_TOKENS)
        return read_verdict(_text_of(message.get("content") or "", finish))

    def rewrite(self, *, history: list[str], message: str) -> str:
        if not history:
            return message.strip()
        reply, finish = self._complete(REWRITE_SYSTEM, rewrite_prompt(history, message), REWRITE_MAX_TOKENS)
        return read_rewrite(_text_of(reply.get("content") or "", finish), cut_off=finish == "length")

    def refund_tool_call(self, *, message: str) -> dict[str, object] | None:
        tool = {
            "type": "function",
            "function": {
                "name": REFUND_TOOL.name,
                "description": REFUND_TOOL.description,
                "parameters": REFUND_TOOL.parameters,
            },
        }
        reply, _ = self._complete(TOOLS_SYSTEM, message, TOOL_MAX_TOKENS, tools=[tool])
        for call in reply.get("tool_calls") or []:
            function = call.get("function") or {}
            if function.get("name") != REFUND_TOOL.name:
                continue
            arguments = function.get("arguments") or "{}"
            try:
                parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
            except json.JSONDecodeError as exc:
                raise MalformedReply(f"The request_refund call's arguments are not JSON ({exc.msg}).") from exc
            return parsed if isinstance(parsed, dict) else None
        return None

    def _complete(
        self, system: str, user: str, max_tokens: int, *, tools: list[dict[str, Any]] | None = None
    ) -> tuple[dict[str, Any], str | None]:
        """The reply message and its finish reason, from one non-streamed completion."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
        }
        if tools:
            body["tools"] = tools

        def attempt() -> dict[str, Any]:
            response = self._http.post(self._url(), json=body, headers=self._headers(), timeout=self.timeout_s)
            self._raise_for_status(response, streamed=False)
            try:
                payload = response.json()
            except ValueError as exc:
                raise MalformedReply("The model server's reply is not JSON.") from exc
            return payload if isinstance(payload, dict) else {}

        payload = self._with_retries(attempt)
        choice = _first_choice(payload)
        if choice is None or not isinstance(choice.get("message"), dict):
            raise MalformedReply("The model server's reply has no choices[0].message.")
        return choice["message"], choice.get("finish_reason")

    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _raise_for_status(self, response: httpx2.Response, *, streamed: bool) -> None:
        if response.status_code < 400:
            return
        if streamed:
            response.read()
        try:
            payload = response.json()
        except ValueError:
            payload = {}
        message = _error_message(payload) if isinstance(payload, dict) and "error" in payload else response.text[:200]
        raise ServerError(response.status_code, message or response.reason_phrase, response.headers)

    def _with_retries(self, attempt: Callable[[], T], *, before_retry: Callable[[], None] | None = None) -> T:
        return self._retries.run(attempt, failures=_ATTEMPT_FAILURES, explain=self._failure, before_retry=before_retry)

    def _failure(self, err: BaseException) -> Failure:
        if isinstance(err, httpx2.TimeoutException):
            return Failure(f"timed out (limit {self.timeout_s:g} s)", True)
        if isinstance(err, httpx2.TransportError):
            return Failure(f"connection failed ({type(err).__name__})", True)
        if isinstance(err, _StreamCutShort):
            return Failure(str(err), True)
        assert isinstance(err, ServerError)
        where = f"HTTP {err.status}" if err.status is not None else "error mid-stream"
        reason = self._redact(f"{where}: {err.message}")
        if err.status is None or err.status in RETRYABLE_STATUSES or err.status >= 500:
            return Failure(reason, True, retry_after_s(err.headers))
        hints = {401: "Check LLM_API_KEY.", 403: "Check LLM_API_KEY.", 404: "Check LLM_BASE_URL and LLM_MODEL."}
        return Failure(reason, False, hint=hints.get(err.status, ""))

    def _redact(self, text: str) -> str:
        return text.replace(self.api_key, "[redacted]") if self.api_key else text


def _events(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON payloads of a server-sent event stream, up to `[DONE]`."""
    for line in lines:
        if not line.startswith("data:"):
            continue  # blank separators, comments (": ping"), `event:` lines
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            return
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise MalformedReply(f"The model server streamed a line that is not JSON: {data[:60]!r}.") from exc
        if isinstance(chunk, dict):
            yield chunk


def _first_choice(payload: dict[str, Any]) -> dict[str, Any] | None:
    choices = payload.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _error_message(payload: dict[str, Any]) -> str:
    error = payload.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "no message")
    return str(error)


def _text_of(text: str, finish: str | None) -> str:
    if text.strip():
        return text
    if finish == "length":
        raise MalformedReply("The model reached its token limit before writing any text (finish_reason length).")
    raise MalformedReply(f"The model's reply has no text (finish_reason {finish}).")


__all__ = ["MalformedReply", "OpenAICompatibleClient", "ProviderUnavailable"]
