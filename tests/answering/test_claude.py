"""The Anthropic client over the real SDK with a faked HTTP transport: streaming, retries, the judge, the rewrite
and the refund tool."""

import httpx2
import pytest

from answering.providers.base import answered_by
from answering.providers.claude import ClaudeClient, ClaudeUnavailable, MalformedReply
from answering.providers.registry import configured_generator, language_model_from_settings
from tests.answering.fakes import (
    MODEL,
    FakeModelAPI,
    Reply,
    error_event,
    error_response,
    message_end,
    message_response,
    message_start,
    sse_response,
    text_block_events,
    text_stream,
    text_stream_events,
)

API_KEY = "sk-ant-test-0123456789"
HISTORY = [{"role": "user", "content": "How long do refunds take?"}]


def make_client(replies: list[Reply], **options) -> tuple[ClaudeClient, FakeModelAPI, list[float]]:
    api = FakeModelAPI(replies)
    sleeps: list[float] = []
    settings = {"max_retries": 3, "backoff_s": 0.5, **options}
    client = ClaudeClient(api_key=API_KEY, model=MODEL, http_client=api.http_client(), sleep=sleeps.append, **settings)
    return client, api, sleeps


def test_it_streams_each_delta_and_returns_the_full_text():
    client, api, sleeps = make_client([text_stream(["Refunds ", "take ", "5 days."])], max_tokens=300, timeout_s=12)
    deltas: list[str] = []

    text = client.stream_reply(system="Answer from the articles.", messages=HISTORY, on_delta=deltas.append)

    assert deltas == ["Refunds ", "take ", "5 days."]
    assert text == "Refunds take 5 days."
    assert client.attempts == 1
    assert sleeps == []
    [request] = api.requests
    assert request.method == "POST"
    assert request.url.path == "/v1/messages"
    # SDK 2.x sends the key as a bearer token, not in an x-api-key header.
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["x-stainless-read-timeout"] == "12"
    body = api.bodies[0]
    assert body["model"] == MODEL
    assert body["system"] == "Answer from the articles."
    assert body["messages"] == HISTORY
    assert body["stream"] is True
    assert body["max_tokens"] == 300


def test_it_retries_an_overloaded_api_after_the_backoff():
    client, _, sleeps = make_client([error_response(529, "overloaded_error", "Overloaded"), text_stream(["Hi!"])])
    resets: list[None] = []

    text = client.stream_reply(system="s", messages=HISTORY, on_reset=lambda: resets.append(None))

    assert text == "Hi!"
    assert client.attempts == 2
    assert sleeps == [0.5]
    assert resets == []  # nothing was shown before the failure, so nothing to take back


def test_it_gives_up_after_max_retries_of_timeouts_backing_off_exponentially():
    client, _, sleeps = make_client([httpx2.ReadTimeout("timed out")] * 4, max_retries=3, timeout_s=5)

    with pytest.raises(ClaudeUnavailable) as caught:
        client.stream_reply(system="s", messages=HISTORY)

    assert not isinstance(caught.value, MalformedReply)
    assert client.attempts == 4
    assert sleeps == [0.5, 1.0, 2.0]
    assert str(caught.value) == "Claude did not answer after 4 attempts; last error: timed out (limit 5 s)"


def test_it_caps_the_backoff():
    client, _, sleeps = make_client([httpx2.ConnectError("refused")] * 3, max_retries=2, backoff_s=20)

    with pytest.raises(ClaudeUnavailable, match="connection failed"):
        client.judge(claim="c", passage="p")

    assert sleeps == [20.0, 30.0]


@pytest.mark.parametrize(
    ("status", "error_type", "message"),
    [
        (400, "invalid_request_error", "messages: roles must alternate"),
        (401, "authentication_error", "invalid x-api-key"),
        (403, "permission_error", "Your API key does not have permission"),
        (404, "not_found_error", "model: claude-nope"),
    ],
)
def test_it_does_not_retry_what_retrying_cannot_fix(status, error_type, message):
    client, _, sleeps = make_client([error_response(status, error_type, message)])

    with pytest.raises(ClaudeUnavailable) as caught:
        client.stream_reply(system="s", messages=HISTORY)

    assert not isinstance(caught.value, MalformedReply)
    assert client.attempts == 1
    assert sleeps == []
    assert f"HTTP {status} {error_type}: {message}" in str(caught.value)
    assert "retrying cannot fix this" in str(caught.value)
    assert API_KEY not in str(caught.value)


def test_it_points_at_the_setting_when_the_key_is_rejected():
    client, _, _ = make_client([error_response(401, "authentication_error", "invalid x-api-key")])

    with pytest.raises(ClaudeUnavailable, match=r"Check LLM_API_KEY \(or ANTHROPIC_API_KEY\)"):
        client.judge(claim="c", passage="p")


def test_it_never_shows_the_key_in_a_message_or_repr():
    echo = error_response(401, "authentication_error", f"invalid key {API_KEY}")
    client, _, _ = make_client([echo])

    with pytest.raises(ClaudeUnavailable) as caught:
        client.judge(claim="c", passage="p")

    assert API_KEY not in str(caught.value)
    assert "invalid key [redacted]" in str(caught.value)
    assert API_KEY not in repr(client)


@pytest.mark.parametrize(("retry_after", "expected_sleep"), [("7", 7.0), ("0.25", 0.25), ("120", 30.0)])
def test_it_waits_as_long_as_a_rate_limit_says_up_to_a_cap(retry_after, expected_sleep):
    limited = error_response(429, "rate_limit_error", "Slow down", headers={"retry-after": retry_after})
    client, _, sleeps = make_client([limited, text_stream(["ok"])])

    assert client.stream_reply(system="s", messages=HISTORY) == "ok"
    assert sleeps == [expected_sleep]


def test_it_backs_off_when_retry_after_is_not_a_number():
    limited = error_response(
        429, "rate_limit_error", "Slow down", headers={"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}
    )
    client, _, sleeps = make_client([limited, text_stream(["ok"])])

    client.stream_reply(system="s", messages=HISTORY)

    assert sleeps == [0.5]


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(
            sse_response([message_start(), *text_block_events(["Sorry, I"])[:2], error_event("overloaded_error")]),
            id="error-event",
        ),
        pytest.param(
            sse_response(
                [message_start(), *text_block_events(["Sorry, I"])[:2]],
                then_raise=httpx2.RemoteProtocolError("peer closed connection"),
            ),
            id="connection-dropped",
        ),
        pytest.param(
            sse_response([message_start(), *text_block_events(["Sorry, I"])]),
            id="ended-before-message-stop",
        ),
    ],
)
def test_it_restarts_a_stream_that_breaks_midway_and_tells_the_ui_to_reset(broken):
    client, _, sleeps = make_client([broken, text_stream(["Refunds take ", "5 days."])])
    shown: list[str] = []

    text = client.stream_reply(
        system="s", messages=HISTORY, on_delta=shown.append, on_reset=lambda: shown.append("<reset>")
    )

    assert shown == ["Sorry, I", "<reset>", "Refunds take ", "5 days."]
    assert text == "Refunds take 5 days."
    assert client.attempts == 2
    assert sleeps == [0.5]


def test_it_does_not_retry_an_error_event_that_retrying_cannot_fix():
    broken = sse_response([message_start(), error_event("invalid_request_error", "prompt is too long")])
    client, _, _ = make_client([broken])

    with pytest.raises(ClaudeUnavailable, match="error event mid-stream invalid_request_error: prompt is too long"):
        client.stream_reply(system="s", messages=HISTORY)

    assert client.attempts == 1


@pytest.mark.parametrize(
    ("events", "reason"),
    [
        pytest.param(text_stream_events([]), r"no text \(content blocks: none; stop_reason end_turn\)", id="no-text"),
        pytest.param(text_stream_events(["  ", "\n"]), "no text", id="only-whitespace"),
        pytest.param(text_stream_events([], stop_reason="max_tokens"), "max_tokens", id="max-tokens-before-text"),
        pytest.param(
            [message_start(), *text_block_events(["I can"]), *message_end(stop_reason="refusal")],
            "declined",
            id="refusal",
        ),
    ],
)
def test_a_stream_without_usable_text_is_malformed_and_not_retried(events, reason):
    client, _, _ = make_client([sse_response(events)])

    with pytest.raises(MalformedReply, match=reason):
        client.stream_reply(system="s", messages=HISTORY)

    assert client.attempts == 1


def test_a_reply_cut_at_max_tokens_is_still_returned():
    client, _, _ = make_client([text_stream(["Refunds take"], stop_reason="max_tokens")])

    assert client.stream_reply(system="s", messages=HISTORY) == "Refunds take"


def test_it_rejects_a_role_the_api_does_not_take():
    client, api, _ = make_client([])

    with pytest.raises(ValueError, match="'system'"):
        client.stream_reply(system="s", messages=[{"role": "system", "content": "x"}])

    assert api.requests == []


@pytest.mark.parametrize(
    ("answer", "verdict"), [("SUPPORTED", True), ("UNSUPPORTED", False), (" unsupported.\n", False)]
)
def test_the_judge_returns_the_verdict(answer, verdict):
    client, api, _ = make_client([message_response(answer)])

    assert client.judge(claim="Refunds take 5 days.", passage="We refund within five working days.") is verdict
    body = api.bodies[0]
    assert "stream" not in body
    assert body["max_tokens"] == 10
    assert "exactly one word: SUPPORTED or UNSUPPORTED" in body["system"]
    [question] = body["messages"]
    assert question["role"] == "user"
    assert "<passage>\nWe refund within five working days.\n</passage>" in question["content"]
    assert "<claim>\nRefunds take 5 days.\n</claim>" in question["content"]


@pytest.mark.parametrize("answer", ["MAYBE", "SUPPORTED, mostly", "The passage supports it."])
def test_a_judge_answer_that_is_not_a_verdict_is_malformed(answer):
    client, _, _ = make_client([message_response(answer)])

    with pytest.raises(MalformedReply, match="instead of SUPPORTED or UNSUPPORTED"):
        client.judge(claim="c", passage="p")


def test_a_judge_reply_without_a_text_block_is_malformed():
    client, _, _ = make_client([message_response(None, content=[])])

    with pytest.raises(MalformedReply, match="no text"):
        client.judge(claim="c", passage="p")


def test_the_judge_retries_like_a_stream():
    client, _, sleeps = make_client([error_response(500, "api_error", "Internal"), message_response("SUPPORTED")])

    assert client.judge(claim="c", passage="p") is True
    assert client.attempts == 2
    assert sleeps == [0.5]


def test_it_rewrites_a_follow_up_into_a_standalone_question():
    client, api, _ = make_client([message_response('  "How long do refunds for annual plans take?"\n')])

    question = client.rewrite(history=["How long do refunds take?", "I'm on a plan"], message="and for annual ones?")

    assert question == "How long do refunds for annual plans take?"
    content = api.bodies[0]["messages"][0]["content"]
    assert "1. How long do refunds take?\n2. I'm on a plan" in content
    assert "<latest_message>\nand for annual ones?\n</latest_message>" in content


def test_a_rewrite_keeps_quotes_inside_the_question():
    client, _, _ = make_client([message_response('Can I downgrade to the "Basic" plan?')])

    assert client.rewrite(history=["hi"], message="downgrade?") == 'Can I downgrade to the "Basic" plan?'


@pytest.mark.parametrize("answer", ['""', "  \n", "“ ”"])
def test_an_empty_rewrite_is_malformed(answer):
    client, _, _ = make_client([message_response(answer)])

    with pytest.raises(MalformedReply):
        client.rewrite(history=["How long do refunds take?"], message="and for annual ones?")


def test_a_rewrite_cut_at_max_tokens_is_malformed():
    client, _, _ = make_client([message_response("How long do refunds", stop_reason="max_tokens")])

    with pytest.raises(MalformedReply, match="ran past"):
        client.rewrite(history=["x"], message="y")


def test_a_first_message_needs_no_rewrite():
    client, api, _ = make_client([])

    assert client.rewrite(history=[], message="  How long do refunds take? ") == "How long do refunds take?"
    assert api.requests == []
    assert client.attempts == 0


def test_without_a_provider_there_is_no_model(settings):
    settings.LLM_PROVIDER = "none"

    assert language_model_from_settings() is None
    assert configured_generator() == answered_by(None) == "extractive"


def test_from_settings_reads_every_setting(settings):
    settings.LLM_PROVIDER = "anthropic"
    settings.LLM_API_KEY = API_KEY
    settings.LLM_MODEL = "claude-haiku-4-5"
    settings.LLM_TIMEOUT_S = 12.0
    settings.LLM_MAX_RETRIES = 5
    settings.LLM_BACKOFF_S = 2.0
    settings.LLM_MAX_TOKENS = 512

    client = language_model_from_settings()

    assert isinstance(client, ClaudeClient)
    assert (client.api_key, client.model, client.timeout_s) == (API_KEY, "claude-haiku-4-5", 12.0)
    assert (client.max_retries, client.backoff_s, client.max_tokens) == (5, 2.0, 512)
    # What evaluation runs record, read without building a client: what the turn will record.
    assert configured_generator() == answered_by(client) == "anthropic:claude-haiku-4-5"
