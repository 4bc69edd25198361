"""The model provider down for a whole run: every request times out, or every one is answered 529
(overloaded). A real HTTP server on loopback plays the provider and the real clients (the anthropic SDK,
the OpenAI-compatible client) talk to it with their configured timeout and retries, so the timeouts are
real ones. Every turn of a conversation of support questions is still answered (by the offline reader,
exactly as without a provider) or referred; none is lost, and no request outlives its timeout.

After a call has failed every attempt the client skips the provider for LLM_COOLDOWN_S (a breaker), so
the later turns of an outage do not each wait out the timeouts again; the run is made with the breaker and
without. The figure (printed) is how long a turn takes in each state.
"""

from __future__ import annotations

import json
import select
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.conf import settings
from django.db.models import Q

from answering.ground.grounding import Grounder
from answering.privacy.masking import mask_pii
from answering.providers.base import LanguageModel
from answering.providers.claude import ClaudeClient, ClaudeUnavailable
from answering.providers.openai_compatible import OpenAICompatibleClient
from answering.services import TurnServices
from conversations.models import Conversation, Message, Role, Turn
from conversations.records.turns import answer_turn
from knowledge.models import Collection
from knowledge.rerank import default_reranker
from tests.answering.fakes import FakeModelAPI, error_response, text_stream
from tests.loopback import free_port

pytestmark = pytest.mark.django_db

# A conversation as customers hold one: follow-ups (each one a rewrite request to the model), an error
# code, something the help centre does not cover.
QUESTIONS = [
    "How long until a card refund shows on my statement?",
    "and if I paid with PayPal?",
    "How many days do I have to return a lamp?",
    "What does error E-4012 mean?",
    "Do you deliver to Mars colonies?",
]
TIMEOUT_S, RETRIES, BACKOFF_S = 1.0, 1, 0.1
# What a request may take past its timeout before it counts as hanging: the client's own scheduling on a
# busy machine, not a wait for the server.
GRACE_S = 3.0


@dataclass
class Request:
    path: str
    received: float
    ended: float | None = None


@dataclass
class DownProvider:
    """Every request hangs unanswered ("timeout") or is answered 529 ("overloaded")."""

    mode: str
    url: str = ""
    requests: list[Request] = field(default_factory=list)


def serve(provider: DownProvider) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = Request(self.path, time.monotonic())
            provider.requests.append(request)
            if provider.mode == "overloaded":
                body = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                self.send_response(529)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())
            else:
                # Say nothing until the client gives up and closes (the socket turns readable at EOF).
                select.select([self.connection], [], [], 600)
            request.ended = time.monotonic()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    provider.url = f"http://127.0.0.1:{server.server_port}"
    return server


@contextmanager
def down_provider(mode: str) -> Iterator[DownProvider]:
    provider = DownProvider(mode)
    server = serve(provider)
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()


def client_for(provider: str, url: str, *, cooldown_s: float) -> LanguageModel:
    if provider == "anthropic":
        return ClaudeClient(
            api_key="sk-test",
            model="claude-test",
            base_url=url,
            timeout_s=TIMEOUT_S,
            max_retries=RETRIES,
            backoff_s=BACKOFF_S,
            cooldown_s=cooldown_s,
        )
    return OpenAICompatibleClient(
        base_url=f"{url}/v1",
        model="local-test",
        timeout_s=TIMEOUT_S,
        max_retries=RETRIES,
        backoff_s=BACKOFF_S,
        cooldown_s=cooldown_s,
    )


def turn_services(embedder, model: LanguageModel | None) -> TurnServices:
    """As the server wires them (answering/services.py): the model also judges claims."""
    reranker = default_reranker()
    grounder = Grounder(
        embedder,
        reranker,
        similarity_threshold=settings.GROUNDING_SIMILARITY_THRESHOLD,
        support_threshold=settings.GROUNDING_SUPPORT_THRESHOLD,
        judge=(lambda claim, passage: model.judge(claim=claim, passage=passage)) if model else None,
    )
    return TurnServices(embedder, reranker, grounder, mask=lambda text: mask_pii(text).text, model=model)


def run_conversation(collection: Collection, services: TurnServices) -> tuple[list[tuple[str, str]], list[float]]:
    conversation = Conversation.objects.create(collection=collection, audience="public")
    outcomes, seconds = [], []
    for question in QUESTIONS:
        started = time.perf_counter()
        result = answer_turn(conversation, question, services=services)
        seconds.append(time.perf_counter() - started)
        outcomes.append((result.decision, result.reply))
    # None lost: each question stored once and answered once.
    messages = list(conversation.messages.order_by("id").values_list("role", flat=True))
    assert messages == [Role.CUSTOMER, Role.ASSISTANT] * len(QUESTIONS)
    assert Turn.objects.filter(conversation=conversation).count() == len(QUESTIONS)
    return outcomes, seconds


# Longer than a run takes, so every call after the first failed one is skipped.
COOLDOWN_S = 600.0


@pytest.mark.usefixtures("answers_when_relevant")
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_every_turn_is_answered_by_the_offline_reader_or_referred(helpcentre, embedder, provider, capsys):
    offline, offline_s = run_conversation(helpcentre, turn_services(embedder, None))
    decisions = [decision for decision, _ in offline]
    assert set(decisions) <= {"answered", "suggested", "abstained", "referred"} and "answered" in decisions
    figures = [f"no provider: turn median {statistics.median(offline_s):.2f} s, max {max(offline_s):.2f} s"]
    for mode in ("timeout", "overloaded"):
        for cooldown_s in (0.0, COOLDOWN_S):
            with down_provider(mode) as down:
                model = client_for(provider, down.url, cooldown_s=cooldown_s)
                outage, outage_s = run_conversation(helpcentre, turn_services(embedder, model))
            # Exactly what the offline reader says without any provider, turn for turn.
            assert outage == offline, (mode, cooldown_s)
            turn = Turn.objects.filter(customer_message__text=QUESTIONS[0]).order_by("id").last()
            assert turn is not None and turn.decision == "answered" and turn.generator == "extractive"
            assert any("unavailable" in note for note in turn.notes), turn.notes
            if cooldown_s:
                # Only the first call reached the provider; every later one was skipped at once.
                assert len(down.requests) == RETRIES + 1
                # Every later turn that got as far as writing a reply skipped the provider. (Which questions
                # get that far is the abstention decision's: "return a lamp" sits at its cut, 0.59, and
                # falls on either side from one machine to another.)
                later = Turn.objects.order_by("-id")[: len(QUESTIONS) - 1]
                answered = [t for t in later if t.decision == "answered"]
                assert answered, [t.decision for t in later]
                assert all(any("was skipped" in note for note in t.notes) for t in answered), [
                    t.notes for t in answered
                ]
            else:
                # Asked (and failed) on every turn: each reply, and a rewrite for every follow-up.
                assert len(down.requests) >= (RETRIES + 1) * len(QUESTIONS)
            # No request outlived its timeout.
            if mode == "timeout":
                waits = [r.ended - r.received for r in down.requests if r.ended is not None]
                assert len(waits) == len(down.requests)
                assert max(waits) <= TIMEOUT_S + GRACE_S, waits
            breaker = f"breaker {cooldown_s:g} s" if cooldown_s else "no breaker"
            figures.append(
                f"{mode}, {breaker}: {len(down.requests)} requests; turn median {statistics.median(outage_s):.2f} s, "
                f"max {max(outage_s):.2f} s"
            )
    unanswered = Message.objects.filter(role=Role.CUSTOMER).filter(
        Q(turn__isnull=True) | Q(turn__reply_message__isnull=True)
    )
    assert not unanswered.exists()
    with capsys.disabled():
        print(
            f"\n[{provider} down, timeout {TIMEOUT_S:g} s × {RETRIES + 1} attempts, backoff {BACKOFF_S:g} s, "
            f"{len(QUESTIONS)} turns: {', '.join(f'{decisions.count(d)} {d}' for d in sorted(set(decisions)))}]\n  "
            + "\n  ".join(figures)
        )


def test_a_provider_that_failed_every_attempt_is_skipped_until_its_cooldown_ends():
    overloaded = [error_response(529, "overloaded_error", "Overloaded")] * 2
    api = FakeModelAPI([*overloaded, text_stream(["Back", " again"])])
    client = ClaudeClient(
        api_key="sk-test",
        model="claude-test",
        http_client=api.http_client(),
        sleep=lambda _: None,
        max_retries=1,
        cooldown_s=0.5,
    )
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(ClaudeUnavailable, match="did not answer after 2 attempts"):
        client.stream_reply(system="s", messages=messages)
    with pytest.raises(ClaudeUnavailable, match=r"Claude was skipped: it failed every attempt 0 s ago"):
        client.judge(claim="c", passage="p")
    assert len(api.requests) == 2  # the skipped call sent nothing
    time.sleep(0.6)
    assert client.stream_reply(system="s", messages=messages) == "Back again"
    assert len(api.requests) == 3 and client._retries.failed_at is None
