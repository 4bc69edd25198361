"""The Anthropic provider: the only module that talks to the Claude API. It implements
`answering.providers.base.LanguageModel`; the prompts and the retry loop are the providers' own.

The SDK is built with `max_retries=0`: the retries are the providers' (see there why). The API key never
appears in a message, a log line or the client's repr.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anthropic
import httpx2
from anthropic.types import (
    AssistantMessageParam,
    Message,
    MessageParam,
    RawContentBlockDeltaEvent,
    TextBlock,
    TextDelta,
    UserMessageParam,
)
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

# 408 and 429 are "try again later"; every 5xx, 529 overloaded included, is the API's own trouble.
RETRYABLE_STATUSES = frozenset({408, 429})
# An `error` event in a stream arrives on a 200 response, so only its type tells what went wrong.
RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})
_TOOL = {"name": REFUND_TOOL.name, "description": REFUND_TOOL.description, "input_schema": REFUND_TOOL.parameters}


class ClaudeUnavailable(ProviderUnavailable):
    """Retries exhausted, or the API refused for a reason retrying cannot fix (401, 400...). Message says which."""


__all__ = ["ClaudeClient", "ClaudeUnavailable", "MalformedReply"]


class _StreamCutShort(Exception):
    """The stream closed cleanly but before `message_stop`: the reply may be incomplete."""


# What one attempt can fail with that is the API's or the network's doing. Anything else is a bug
# here and propagates as is. Transport errors raised while a stream is read are not wrapped by the SDK.
_ATTEMPT_FAILURES = (anthropic.APIError, httpx2.TransportError, _StreamCutShort)


@dataclass
class ClaudeClient:
    api_key: str = field(repr=False)
    model: str
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_s: float = 1.0
    max_tokens: int = 1024
    cooldown_s: float = 0.0  # after a call fails every attempt, skip the API this long (providers.Retries)
    # The SDK is built on httpx2 and rejects an `httpx.Client`; tests hand in an httpx2.MockTransport client.
    http_client: httpx2.Client | None = field(default=None, repr=False)
    base_url: str | None = None  # a proxy in front of the API; None for Anthropic's own
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    provider: str = field(default="anthropic", init=False)
    _sdk: anthropic.Anthropic = field(init=False, repr=False, compare=False)
    _retries: Retries = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._retries = Retries("Claude", self.max_retries, self.backoff_s, self.sleep, self.cooldown_s)
        self._sdk = anthropic.Anthropic(
            api_key=self.api_key,
            base_url=self.base_url,
            http_client=self.http_client,
            max_retries=0,
            timeout=self.timeout_s,
        )

    @property
    def attempts(self) -> int:
        """HTTP attempts made over this client's life, so tests can see retries happen."""
        return self._retries.attempts

    @classmethod
    def from_settings(cls) -> ClaudeClient:
        return cls(**limits_from_settings(), base_url=settings.LLM_BASE_URL or None)

    def stream_reply(
        self,
        *,
        system: str,
        messages: list[dict[str, str]],
        on_delta: Callable[[str], None] | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> str:
        """See `LanguageModel.stream_reply`; `on_reset` is called only before a retry, never on success."""
        params = _message_params(messages)
        shown = StreamedText(on_delta, on_reset)

        def attempt() -> str:
            finished = False
            with self._sdk.messages.stream(
                model=self.model,
                max_tokens=self.max_tokens,
                system=system,
                messages=params,
                timeout=self.timeout_s,
            ) as stream:
                for event in stream:
                    if isinstance(event, RawContentBlockDeltaEvent) and isinstance(event.delta, TextDelta):
                        shown.emit(event.delta.text)
                    elif event.type == "message_stop":
                        finished = True
                if not finished:
                    raise _StreamCutShort("the stream ended before message_stop")
                message = stream.get_final_message()
            return self._reply_text(message)

        return self._with_retries(attempt, before_retry=shown.before_retry)

    def judge(self, *, claim: str, passage: str) -> bool:
        message = self._complete(system=JUDGE_SYSTEM, user=judge_prompt(claim, passage), max_tokens=JUDGE_MAX_TOKENS)
        return read_verdict(self._reply_text(message))

    def rewrite(self, *, history: list[str], message: str) -> str:
        """Rewrite a follow-up customer `message` as a standalone question, using the customer's earlier
        messages (`history`, oldest first). Returns just the question.

        With no history there is nothing to resolve against, so the message comes back stripped without a call.
        """
        if not history:
            return message.strip()
        reply = self._complete(
            system=REWRITE_SYSTEM, user=rewrite_prompt(history, message), max_tokens=REWRITE_MAX_TOKENS
        )
        return read_rewrite(self._reply_text(reply), cut_off=reply.stop_reason == "max_tokens")

    def refund_tool_call(self, *, message: str) -> dict[str, object] | None:
        """The request_refund tool call Claude makes for this (masked) customer message, if any: only a
        request for the gatekeeper to certify, never a decision."""
        reply = self._with_retries(
            lambda: self._sdk.messages.create(
                model=self.model,
                max_tokens=TOOL_MAX_TOKENS,
                system=TOOLS_SYSTEM,
                messages=[{"role": "user", "content": message}],
                tools=[_TOOL],  # type: ignore[list-item]
                timeout=self.timeout_s,
            )
        )
        for block in reply.content:
            if block.type == "tool_use" and block.name == REFUND_TOOL.name:
                return dict(block.input) if isinstance(block.input, dict) else None
        return None

    def _complete(self, *, system: str, user: str, max_tokens: int) -> Message:
        params: list[MessageParam] = [{"role": "user", "content": user}]
        return self._with_retries(
            lambda: self._sdk.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                system=system,
                messages=params,
                timeout=self.timeout_s,
            )
        )

    def _with_retries(self, attempt: Callable[[], T], *, before_retry: Callable[[], None] | None = None) -> T:
        return self._retries.run(
            attempt,
            failures=_ATTEMPT_FAILURES,
            explain=self._failure,
            unavailable=ClaudeUnavailable,
            before_retry=before_retry,
        )

    def _failure(self, err: BaseException) -> Failure:
        retry_after = retry_after_s(err.response.headers) if isinstance(err, anthropic.APIStatusError) else None
        hint = "Check LLM_API_KEY (or ANTHROPIC_API_KEY)." if isinstance(err, anthropic.AuthenticationError) else ""
        return Failure(self._describe(err), _is_retryable(err), retry_after, hint)

    def _reply_text(self, message: Message) -> str:
        if message.stop_reason == "refusal":
            raise MalformedReply("Claude declined to answer (stop_reason refusal).")
        text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
        if text.strip():
            return text
        if message.stop_reason == "max_tokens":
            raise MalformedReply("Claude reached max_tokens before writing any text (stop_reason max_tokens).")
        blocks = ", ".join(block.type for block in message.content) or "none"
        raise MalformedReply(
            f"Claude's reply has no text (content blocks: {blocks}; stop_reason {message.stop_reason})."
        )

    def _describe(self, err: BaseException) -> str:
        if isinstance(err, anthropic.APITimeoutError | httpx2.TimeoutException):
            reason = f"timed out (limit {self.timeout_s:g} s)"
        elif isinstance(err, anthropic.APIConnectionError):
            cause = err.__cause__
            reason = f"connection failed ({type(cause).__name__ if cause else 'no cause given'})"
        elif isinstance(err, httpx2.TransportError):
            reason = f"connection dropped mid-reply ({type(err).__name__})"
        elif isinstance(err, anthropic.APIStatusError):
            # Built from the parsed fields rather than str(err), which embeds the whole response body.
            where = f"HTTP {err.status_code}" if err.status_code >= 400 else "error event mid-stream"
            reason = f"{where} {err.type or 'unknown_error'}: {err.api_message or 'no message'}"
            if err.request_id:
                reason += f" (request-id {err.request_id})"
        else:
            reason = f"{type(err).__name__}: {err}"
        return self._redact(reason)

    def _redact(self, text: str) -> str:
        # The API never echoes the key today; this keeps it out of messages and logs if it ever does.
        return text.replace(self.api_key, "[redacted]") if self.api_key else text


def _is_retryable(err: BaseException) -> bool:
    if isinstance(err, anthropic.APIConnectionError | httpx2.TransportError | _StreamCutShort):
        return True
    if isinstance(err, anthropic.APIStatusError):
        if err.status_code >= 400:
            return err.status_code in RETRYABLE_STATUSES or err.status_code >= 500
        return err.type in RETRYABLE_STREAM_ERRORS
    return False


def _message_params(messages: list[dict[str, str]]) -> list[MessageParam]:
    check_roles(messages)
    return [
        UserMessageParam(role="user", content=m["content"])
        if m["role"] == "user"
        else AssistantMessageParam(role="assistant", content=m["content"])
        for m in messages
    ]
