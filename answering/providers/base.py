"""What a language-model provider does for a turn, whoever runs the model: stream a reply from the
trust-labelled context, rewrite a follow-up as a standalone question, judge a claim against a passage,
and propose the refund tool call. `answering/providers/claude.py` (Anthropic's API) and
`answering/providers/openai_compatible.py` (OpenAI's chat completions, as Ollama, vLLM, llama.cpp's server and
LM Studio also speak it) implement it, and `answering/providers/registry.py` builds the configured one;
without a provider the offline reader answers.

The prompts, the verdict words and the tool's schema live here, so every provider is asked the same
thing and read the same way. So does the retry loop: a streamed reply that fails half-way is restarted
from scratch and the UI told to drop what it showed, which no SDK's own retries can do.

Nothing here masks text: the caller removes personal data before calling.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypedDict, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

# A customer is waiting on the other end: past this, failing fast beats a longer wait, whatever
# the backoff or `retry-after` says.
MAX_WAIT_S = 30.0
# "UNSUPPORTED" is a few tokens; a tight cap makes a chatty judge fail as malformed instead of costing.
JUDGE_MAX_TOKENS = 10
REWRITE_MAX_TOKENS = 256
TOOL_MAX_TOKENS = 200
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
REWRITE_SYSTEM = (
    "You turn a customer's latest message into a standalone question for searching a help centre. "
    "Use the earlier messages only to resolve what the latest one refers to (such as 'it', 'that one', "
    "'what about for teams?'). Keep the customer's language and meaning and add nothing they did not ask. "
    "If the latest message already stands alone, return it unchanged. "
    "Reply with the question only: no preamble, no quotes."
)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: Mapping[str, object]  # JSON Schema of the arguments


REFUND_TOOL = Tool(
    name="request_refund",
    description=(
        "Ask the shop's refund rules to decide on a refund for one of the customer's own orders. The rules "
        "approve or pass the request to a person; you never decide."
    ),
    parameters={
        "type": "object",
        "properties": {
            "order_number": {"type": "string", "description": "The order number the customer named, digits only."},
            "amount": {"type": "number", "description": "The amount asked for in dollars, if the customer named one."},
        },
        "required": ["order_number"],
    },
)


class ProviderUnavailable(Exception):
    """The model did not answer usably: retries exhausted, or a refusal retrying cannot fix (a bad key, a
    bad request). The turn falls back (the offline reader, the rewrite rule, the intent rule); the message
    says which provider failed and why."""


class MalformedReply(ProviderUnavailable):
    """The model answered but not with usable text (empty, cut off before any text, a refusal, a judge
    verdict that is not one of the allowed words, a stream that does not parse)."""


class LanguageModel(Protocol):
    provider: str  # "anthropic", "openai": recorded on the turn with the model
    model: str

    def stream_reply(
        self,
        *,
        system: str,
        messages: list[dict[str, str]],
        on_delta: Callable[[str], None] | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> str:
        """Stream a reply, calling `on_delta` with each piece of text; return the full text. `messages` are
        `{"role": "user" | "assistant", "content": ...}`, oldest first. An attempt that fails after some
        text went out is retried from scratch, `on_reset` called first; when this raises, whatever
        `on_delta` received is void."""
        ...

    def rewrite(self, *, history: list[str], message: str) -> str:
        """The customer's follow-up `message` as a standalone question, from their earlier messages."""
        ...

    def judge(self, *, claim: str, passage: str) -> bool:
        """Whether `passage` supports `claim`."""
        ...

    def refund_tool_call(self, *, message: str) -> dict[str, object] | None:
        """The request_refund call the model makes for this customer message, if any (a request for the
        gatekeeper to certify, never a decision)."""
        ...


def generator_name(provider: str | None, model: str) -> str:
    """How a turn records who wrote its reply: "extractive" (the offline reader) or "provider:model"."""
    return "extractive" if provider is None else f"{provider}:{model}"


def answered_by(model: LanguageModel | None) -> str:
    """What a turn records as its generator for a model: "anthropic:claude-sonnet-5-5"."""
    return generator_name(None, "") if model is None else generator_name(model.provider, model.model)


def check_roles(messages: list[dict[str, str]]) -> None:
    for message in messages:
        if message["role"] not in ("user", "assistant"):
            raise ValueError(f"A message's role must be 'user' or 'assistant', not {message['role']!r}.")


def judge_prompt(claim: str, passage: str) -> str:
    return f"<passage>\n{passage}\n</passage>\n\n<claim>\n{claim}\n</claim>"


def read_verdict(text: str) -> bool:
    """SUPPORTED or UNSUPPORTED; case, surrounding whitespace and a trailing full stop are forgiven."""
    verdict = text.strip().rstrip(".").upper()
    if verdict == "SUPPORTED":
        return True
    if verdict == "UNSUPPORTED":
        return False
    raise MalformedReply(f"The grounding judge answered {text[:40]!r} instead of SUPPORTED or UNSUPPORTED.")


def rewrite_prompt(history: list[str], message: str) -> str:
    earlier = "\n".join(f"{number}. {text}" for number, text in enumerate(history, start=1))
    return f"<earlier_messages>\n{earlier}\n</earlier_messages>\n\n<latest_message>\n{message}\n</latest_message>"


def read_rewrite(text: str, *, cut_off: bool) -> str:
    """The rewritten question from the model's text; `cut_off` when it stopped at its token limit."""
    if cut_off:
        # A question cut off mid-way would search for the wrong thing.
        raise MalformedReply(f"The rewritten question ran past {REWRITE_MAX_TOKENS} tokens.")
    text = text.strip()
    while len(text) >= 2 and QUOTE_PAIRS.get(text[0]) == text[-1]:
        text = text[1:-1].strip()
    if not text:
        raise MalformedReply("The rewritten question is empty.")
    return text


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds from a `retry-after` header; None when absent or not a number (the HTTP-date form falls
    back to our backoff)."""
    try:
        seconds = float(headers.get("retry-after", ""))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


@dataclass
class StreamedText:
    """What a streamed reply has shown so far: `emit` passes text on; `before_retry` tells the UI to drop it
    (only when something was shown), so a retried attempt starts on a clean slate."""

    on_delta: Callable[[str], None] | None
    on_reset: Callable[[], None] | None
    shown: bool = False

    def emit(self, text: str) -> None:
        if text:
            self.shown = True
            if self.on_delta is not None:
                self.on_delta(text)

    def before_retry(self) -> None:
        if self.shown and self.on_reset is not None:
            self.on_reset()
        self.shown = False


class Limits(TypedDict):
    model: str
    api_key: str
    timeout_s: float
    max_retries: int
    backoff_s: float
    max_tokens: int
    cooldown_s: float


def limits_from_settings() -> Limits:
    """The LLM_* settings every provider's client takes."""
    from django.conf import settings

    return Limits(
        model=settings.LLM_MODEL,
        api_key=settings.LLM_API_KEY,
        timeout_s=settings.LLM_TIMEOUT_S,
        max_retries=settings.LLM_MAX_RETRIES,
        backoff_s=settings.LLM_BACKOFF_S,
        max_tokens=settings.LLM_MAX_TOKENS,
        cooldown_s=settings.LLM_COOLDOWN_S,
    )


@dataclass(frozen=True)
class Failure:
    """How a provider reads one failed attempt."""

    reason: str  # for messages and logs, without the key
    retryable: bool
    retry_after_s: float | None = None
    hint: str = ""  # what to check when retrying cannot help


@dataclass
class Retries:
    """One provider's retry loop: exponential backoff capped at MAX_WAIT_S, `retry-after` honoured, and
    the attempts counted so tests can see a retry happen.

    A call that failed every attempt opens a breaker for `cooldown_s`: calls meanwhile fail at once, so
    during an outage each turn answers from the offline reader straight away instead of waiting out the
    timeouts and backoffs again (with Claude's defaults, 4 × 30 s and 7 s of backoff per call). The first
    call after the cooldown tries the provider again."""

    name: str  # "Claude", "The OpenAI-compatible server at http://…"
    max_retries: int = 3
    backoff_s: float = 1.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    cooldown_s: float = 0.0
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    attempts: int = 0
    failed_at: float | None = None  # when the last call failed every attempt; None once one succeeds

    def run(
        self,
        attempt: Callable[[], T],
        *,
        failures: tuple[type[BaseException], ...],
        explain: Callable[[BaseException], Failure],
        unavailable: type[ProviderUnavailable] = ProviderUnavailable,
        before_retry: Callable[[], None] | None = None,
    ) -> T:
        """`attempt`'s result; an exception in `failures` is the API's or the network's doing and is
        retried when `explain` says so. Anything else is a bug and propagates as is."""
        if self.failed_at is not None and (since := self.clock() - self.failed_at) < self.cooldown_s:
            raise unavailable(
                f"{self.name} was skipped: it failed every attempt {since:.0f} s ago "
                f"(tried again {self.cooldown_s - since:.0f} s from now)."
            )
        last_error: BaseException | None = None
        last_reason = ""
        for retry in range(self.max_retries + 1):
            self.attempts += 1
            try:
                result = attempt()
                self.failed_at = None
                return result
            except failures as err:
                failure = explain(err)
                if not failure.retryable:
                    hint = f" {failure.hint}" if failure.hint else ""
                    raise unavailable(
                        f"{self.name} refused the request ({failure.reason}); retrying cannot fix this.{hint}"
                    ) from err
                last_error, last_reason = err, failure.reason
                if retry == self.max_retries:
                    break
                delay = min(
                    failure.retry_after_s if failure.retry_after_s is not None else self.backoff_s * 2**retry,
                    MAX_WAIT_S,
                )
            logger.warning(
                "%s: attempt %d of %d failed (%s); retrying in %.1f s",
                self.name,
                retry + 1,
                self.max_retries + 1,
                last_reason,
                delay,
            )
            if before_retry is not None:
                before_retry()
            self.sleep(delay)
        self.failed_at = self.clock()
        raise unavailable(
            f"{self.name} did not answer after {self.max_retries + 1} attempts; last error: {last_reason}"
        ) from last_error
