"""The Anthropic provider: the only module that talks to the Claude API.

Retries are ours, not the SDK's (it is built with `max_retries=0`): a streamed reply that fails
half-way must be restarted from scratch and the UI told to drop what it showed, which the SDK's
retry loop cannot do, and counting attempts here lets tests prove a retry happened.

Nothing here masks text: the caller removes PII before calling. The API key never appears in a
message, a log line or the client's repr.
"""

from __future__ import annotations

import logging
import math
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

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A customer is waiting on the other end: past this, failing fast beats a longer wait, whatever
# the backoff or `retry-after` says.
MAX_WAIT_S = 30.0

# 408 and 429 are "try again later"; every 5xx, 529 overloaded included, is the API's own trouble.
RETRYABLE_STATUSES = frozenset({408, 429})
# An `error` event in a stream arrives on a 200 response, so only its type tells what went wrong.
RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})

# "UNSUPPORTED" is a few tokens; a tight cap makes a chatty judge fail as malformed instead of costing.
JUDGE_MAX_TOKENS = 10
REWRITE_MAX_TOKENS = 256
QUOTE_PAIRS = {'"': '"', "'": "'", "`": "`", "“": "”", "‘": "’", "«": "»"}

JUDGE_SYSTEM = (
    "You check answers written for customers against help-centre articles. "
    "Given a passage and a claim, decide whether the passage supports the claim: it must state the claim "
    "or directly imply it. General knowledge does not count, only the passage. "
    "Answer with exactly one word: SUPPORTED or UNSUPPORTED. No punctuation, no explanation."
)

TOOLS_SYSTEM = (
    "You route a signed-in customer's message for an online shop. If, and only if, the customer asks for a "
    "refund of a specific order, call request_refund with that order number (and the amount, if they name "
    "one). Otherwise do not call any tool and reply with the single word NONE. You cannot approve anything: "
    "the shop's rules decide."
)
REFUND_TOOL = {
    "name": "request_refund",
    "description": (
        "Ask the shop's refund rules to decide on a refund for one of the customer's own orders. The rules "
        "approve or pass the request to a person; you never decide."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "order_number": {"type": "string", "description": "The order number the customer named, digits only."},
            "amount": {"type": "number", "description": "The amount asked for in dollars, if the customer named one."},
        },
        "required": ["order_number"],
    },
}
TOOL_MAX_TOKENS = 200
REWRITE_SYSTEM = (
    "You turn a customer's latest message into a standalone question for searching a help centre. "
    "Use the earlier messages only to resolve what the latest one refers to (such as 'it', 'that one', "
    "'what about for teams?'). Keep the customer's language and meaning and add nothing they did not ask. "
    "If the latest message already stands alone, return it unchanged. "
    "Reply with the question only: no preamble, no quotes."
)


class ClaudeUnavailable(Exception):
    """Retries exhausted, or the API refused for a reason retrying cannot fix (401, 400...). Message says which."""


class MalformedReply(ClaudeUnavailable):
    """The API answered but not with usable text (empty, no text block, stop_reason max_tokens with no text,
    a refusal, a judge verdict that is not one of the allowed words)."""


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
    # The SDK is built on httpx2 and rejects an `httpx.Client`; tests hand in an httpx2.MockTransport client.
    http_client: httpx2.Client | None = field(default=None, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    attempts: int = 0  # HTTP attempts made over this client's life, so tests can see retries happen
    _sdk: anthropic.Anthropic = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._sdk = anthropic.Anthropic(
            api_key=self.api_key,
            http_client=self.http_client,
            max_retries=0,
            timeout=self.timeout_s,
        )

    @classmethod
    def from_settings(cls) -> ClaudeClient | None:
        """A client configured from settings, or None when ANTHROPIC_API_KEY is empty (Claude is off)."""
        if not settings.ANTHROPIC_API_KEY:
            return None
        return cls(
            api_key=settings.ANTHROPIC_API_KEY,
            model=settings.ANTHROPIC_MODEL,
            timeout_s=settings.ANTHROPIC_TIMEOUT_S,
            max_retries=settings.ANTHROPIC_MAX_RETRIES,
            backoff_s=settings.ANTHROPIC_BACKOFF_S,
            max_tokens=settings.ANTHROPIC_MAX_TOKENS,
        )

    def stream_reply(
        self,
        *,
        system: str,
        messages: list[dict[str, str]],
        on_delta: Callable[[str], None] | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> str:
        """Stream a reply, calling `on_delta` with each piece of text as it arrives; return the full text.

        `messages` are `{"role": "user" | "assistant", "content": ...}`, oldest first, passed through as given.

        An attempt that fails after some text went to `on_delta` is retried from scratch; `on_reset` is
        called first, so a UI can clear that text before the new attempt's deltas arrive. It is called
        only before a retry, never on success. When this raises, whatever `on_delta` received is void.
        """
        params = _message_params(messages)
        emitted = False

        def attempt() -> str:
            nonlocal emitted
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
                        if on_delta is not None and event.delta.text:
                            emitted = True
                            on_delta(event.delta.text)
                    elif event.type == "message_stop":
                        finished = True
                if not finished:
                    raise _StreamCutShort("the stream ended before message_stop")
                message = stream.get_final_message()
            return self._reply_text(message)

        def before_retry() -> None:
            nonlocal emitted
            if emitted and on_reset is not None:
                on_reset()
            emitted = False

        return self._with_retries(attempt, before_retry=before_retry)

    def judge(self, *, claim: str, passage: str) -> bool:
        """Whether `passage` supports `claim`, as an LLM judge for grounding sees it.

        The judge must answer SUPPORTED or UNSUPPORTED; case, surrounding whitespace and a trailing
        full stop are forgiven, anything else raises MalformedReply.
        """
        message = self._complete(
            system=JUDGE_SYSTEM,
            user=f"<passage>\n{passage}\n</passage>\n\n<claim>\n{claim}\n</claim>",
            max_tokens=JUDGE_MAX_TOKENS,
        )
        text = self._reply_text(message)
        verdict = text.strip().rstrip(".").upper()
        if verdict == "SUPPORTED":
            return True
        if verdict == "UNSUPPORTED":
            return False
        raise MalformedReply(f"The grounding judge answered {text[:40]!r} instead of SUPPORTED or UNSUPPORTED.")

    def rewrite(self, *, history: list[str], message: str) -> str:
        """Rewrite a follow-up customer `message` as a standalone question, using the customer's earlier
        messages (`history`, oldest first). Returns just the question.

        With no history there is nothing to resolve against, so the message comes back stripped without a call.
        """
        if not history:
            return message.strip()
        earlier = "\n".join(f"{number}. {text}" for number, text in enumerate(history, start=1))
        reply = self._complete(
            system=REWRITE_SYSTEM,
            user=f"<earlier_messages>\n{earlier}\n</earlier_messages>\n\n<latest_message>\n{message}\n</latest_message>",
            max_tokens=REWRITE_MAX_TOKENS,
        )
        if reply.stop_reason == "max_tokens":
            # A question cut off mid-way would search for the wrong thing.
            raise MalformedReply(f"The rewritten question ran past {REWRITE_MAX_TOKENS} tokens.")
        question = _strip_quotes(self._reply_text(reply))
        if not question:
            raise MalformedReply("The rewritten question is empty.")
        return question

    def refund_tool_call(self, *, message: str) -> dict[str, object] | None:
        """The request_refund tool call Claude makes for this (masked) customer message, if any: only a
        request for the gatekeeper to certify, never a decision."""
        reply = self._with_retries(
            lambda: self._sdk.messages.create(
                model=self.model,
                max_tokens=TOOL_MAX_TOKENS,
                system=TOOLS_SYSTEM,
                messages=[{"role": "user", "content": message}],
                tools=[REFUND_TOOL],  # type: ignore[list-item]
                timeout=self.timeout_s,
            )
        )
        for block in reply.content:
            if block.type == "tool_use" and block.name == REFUND_TOOL["name"]:
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
        last_error: BaseException | None = None
        last_reason = ""
        for retry in range(self.max_retries + 1):
            self.attempts += 1
            try:
                return attempt()
            except _ATTEMPT_FAILURES as err:
                reason = self._describe(err)
                if not _is_retryable(err):
                    raise ClaudeUnavailable(self._refusal_message(err, reason)) from err
                last_error, last_reason = err, reason
                if retry == self.max_retries:
                    break
                delay = self._delay(retry, err)
            logger.warning(
                "Claude attempt %d of %d failed (%s); retrying in %.1f s",
                retry + 1,
                self.max_retries + 1,
                last_reason,
                delay,
            )
            if before_retry is not None:
                before_retry()
            self.sleep(delay)
        raise ClaudeUnavailable(
            f"Claude did not answer after {self.max_retries + 1} attempts; last error: {last_reason}"
        ) from last_error

    def _delay(self, retry: int, err: BaseException) -> float:
        if isinstance(err, anthropic.APIStatusError):
            retry_after = _retry_after_s(err.response.headers)
            if retry_after is not None:
                return min(retry_after, MAX_WAIT_S)
        return min(self.backoff_s * 2**retry, MAX_WAIT_S)

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

    def _refusal_message(self, err: BaseException, reason: str) -> str:
        hint = " Check ANTHROPIC_API_KEY." if isinstance(err, anthropic.AuthenticationError) else ""
        return f"The Anthropic API refused the request ({reason}); retrying cannot fix this.{hint}"

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


def _retry_after_s(headers: httpx2.Headers) -> float | None:
    """Seconds from a `retry-after` header; None when absent or not a number (the HTTP-date form, which
    the API does not send, falls back to our backoff)."""
    try:
        seconds = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _message_params(messages: list[dict[str, str]]) -> list[MessageParam]:
    params: list[MessageParam] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "user":
            params.append(UserMessageParam(role="user", content=content))
        elif role == "assistant":
            params.append(AssistantMessageParam(role="assistant", content=content))
        else:
            raise ValueError(f"A message's role must be 'user' or 'assistant', not {role!r}.")
    return params


def _strip_quotes(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and QUOTE_PAIRS.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    return text
