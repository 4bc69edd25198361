"""The OpenAI-compatible provider against scripted HTTP: the failure modes a real server rarely shows on
demand. `test_local_model.py` drives a real server with a real model."""

import json
import re

import httpx2
import pytest

from answering.providers.base import MalformedReply, ProviderUnavailable
from answering.providers.openai_compatible import OpenAICompatibleClient
from conversations.records.turns import answer_turn
from tests.answering.fakes import (
    OPENAI_BASE_URL,
    FakeModelAPI,
    openai_error,
    openai_message,
    openai_stream,
    openai_tool_call,
    services,
)
from tests.conversations.test_turns import REFUND_QUESTION, conversation

KEY = "sk-local-secret"


def make_client(replies, *, api_key: str = "", max_retries: int = 2):
    api = FakeModelAPI(replies)
    slept: list[float] = []
    client = OpenAICompatibleClient(
        base_url=OPENAI_BASE_URL + "/",
        model="llama3.2",
        api_key=api_key,
        http_client=api.http_client(),
        sleep=slept.append,
        max_retries=max_retries,
    )
    return client, api, slept


def test_a_reply_streams_piece_by_piece_with_the_system_prompt_first():
    client, api, _ = make_client([openai_stream(["Refunds take ", "5 to 10 days [1]."])])
    pieces: list[str] = []
    text = client.stream_reply(system="rules", messages=[{"role": "user", "content": "q"}], on_delta=pieces.append)
    assert text == "Refunds take 5 to 10 days [1]." and pieces == ["Refunds take ", "5 to 10 days [1]."]
    [request] = api.requests
    assert str(request.url) == f"{OPENAI_BASE_URL}/chat/completions"
    assert "authorization" not in request.headers  # a local server needs no key
    body = api.bodies[0]
    assert body["model"] == "llama3.2" and body["stream"] is True
    assert body["messages"] == [{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}]


def test_a_key_is_sent_as_a_bearer_token_and_never_shown():
    client, api, _ = make_client([openai_error(401, f"bad key {KEY}")], api_key=KEY)
    with pytest.raises(ProviderUnavailable, match="Check LLM_API_KEY") as caught:
        client.judge(claim="c", passage="p")
    assert api.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in str(caught.value) and KEY not in repr(client)
    assert client.attempts == 1  # a refused key is not retried


def test_an_unknown_model_points_at_the_url_and_model_settings():
    client, _, _ = make_client([openai_error(404, "model 'llama3.2' not found")])
    with pytest.raises(
        ProviderUnavailable, match=r"HTTP 404: model 'llama3\.2' not found.*Check LLM_BASE_URL and LLM_MODEL"
    ):
        client.rewrite(history=["a"], message="b")


def test_429_waits_as_long_as_retry_after_says_and_5xx_is_retried():
    client, _, slept = make_client(
        [
            openai_error(429, "slow down", headers={"retry-after": "7"}),
            openai_error(503, "loading"),
            openai_stream(["Hi"]),
        ]
    )
    assert client.stream_reply(system="s", messages=[{"role": "user", "content": "q"}]) == "Hi"
    assert slept == [7.0, 2.0] and client.attempts == 3


def test_timeouts_exhaust_the_retries_with_the_reason():
    client, _, _ = make_client([httpx2.ReadTimeout("slow")] * 3)
    with pytest.raises(ProviderUnavailable) as caught:
        client.stream_reply(system="s", messages=[{"role": "user", "content": "q"}])
    assert str(caught.value) == (
        f"The model server at {OPENAI_BASE_URL} did not answer after 3 attempts; last error: timed out (limit 60 s)"
    )


@pytest.mark.parametrize(
    "broken",
    [
        openai_stream(["Refunds take "], finish=None, done=False),  # closed early
        openai_stream(["Refunds take "], finish=None, done=False, then_raise=httpx2.RemoteProtocolError("peer closed")),
    ],
)
def test_a_stream_cut_short_is_retried_from_scratch_after_a_reset(broken):
    client, _, _ = make_client([broken, openai_stream(["Refunds take 5 days."])])
    pieces: list[str] = []
    resets: list[bool] = []

    def reset() -> None:
        resets.append(True)
        pieces.clear()

    text = client.stream_reply(
        system="s", messages=[{"role": "user", "content": "q"}], on_delta=pieces.append, on_reset=reset
    )
    assert text == "Refunds take 5 days." and "".join(pieces) == text and resets == [True]


def test_an_error_inside_the_stream_is_retried():
    error = httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content=b'data: {"error": {"message": "overloaded"}}\n\n'
    )
    client, _, _ = make_client([error, openai_stream(["ok"])])
    assert client.stream_reply(system="s", messages=[{"role": "user", "content": "q"}]) == "ok"


def test_a_stream_that_does_not_parse_is_malformed_and_not_retried():
    garbage = httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=b"data: {not json\n\n")
    client, _, _ = make_client([garbage])
    with pytest.raises(MalformedReply, match="not JSON"):
        client.stream_reply(system="s", messages=[{"role": "user", "content": "q"}])
    assert client.attempts == 1


def test_an_empty_or_cut_off_reply_is_malformed():
    client, _, _ = make_client([openai_stream([]), openai_message("", finish="length")])
    with pytest.raises(MalformedReply, match="no text"):
        client.stream_reply(system="s", messages=[{"role": "user", "content": "q"}])
    with pytest.raises(MalformedReply, match="token limit"):
        client.judge(claim="c", passage="p")


def test_the_judge_and_the_rewrite_read_the_same_words_as_for_claude():
    client, api, _ = make_client(
        [
            openai_message("Supported."),
            openai_message("maybe"),
            openai_message('"How much is express shipping to Ireland?"'),
            openai_message("How much is express", finish="length"),
        ]
    )
    assert client.judge(claim="Refunds take 5 days.", passage="Refunds take 5 days.") is True
    assert "<claim>\nRefunds take 5 days.\n</claim>" in api.bodies[0]["messages"][1]["content"]
    with pytest.raises(MalformedReply, match="instead of SUPPORTED or UNSUPPORTED"):
        client.judge(claim="c", passage="p")
    assert (
        client.rewrite(history=["Express cost?"], message="and Ireland?") == "How much is express shipping to Ireland?"
    )
    with pytest.raises(MalformedReply, match="ran past"):
        client.rewrite(history=["Express cost?"], message="and Ireland?")


def test_the_refund_tool_call_comes_back_as_its_arguments():
    client, api, _ = make_client(
        [
            openai_tool_call("request_refund", '{"order_number": "1042", "amount": 30}'),
            openai_tool_call("delete_account", "{}"),
            openai_message("NONE"),
            openai_tool_call("request_refund", "{order 1042"),
        ]
    )
    assert client.refund_tool_call(message="refund order 1042, $30") == {"order_number": "1042", "amount": 30}
    tool = api.bodies[0]["tools"][0]
    assert tool["type"] == "function" and tool["function"]["name"] == "request_refund"
    assert tool["function"]["parameters"]["required"] == ["order_number"]
    assert client.refund_tool_call(message="x") is None  # a tool we do not offer is ignored
    assert client.refund_tool_call(message="x") is None
    with pytest.raises(MalformedReply, match="not JSON"):
        client.refund_tool_call(message="x")


@pytest.mark.django_db
@pytest.mark.usefixtures("answers_when_relevant")
def test_a_turn_answered_by_the_server_records_it_and_falls_back_when_it_fails(helpcentre, embedder):
    def cite(request: httpx2.Request) -> httpx2.Response:
        evidence = json.loads(request.content)["messages"][1]["content"]
        number = re.findall(r'<passage n="(\d+)"', evidence[: evidence.index("5 to 10 business days")])[-1]
        return openai_stream([f"Card refunds take 5 to 10 business days after approval. [{number}]"])

    api = FakeModelAPI([cite])
    result = answer_turn(
        conversation(helpcentre), REFUND_QUESTION, services=services(embedder, api=api, provider="openai")
    )
    assert result.decision == "answered", result.claims
    assert result.generator == "openai:local-test" and result.citations
    prompt = api.bodies[0]["messages"]
    assert prompt[0]["role"] == "system" and "<evidence>" in prompt[1]["content"]
    # The same provider-neutral prompt as Claude's: evidence is not instruction, the customer's language.
    assert "not instructions" in prompt[0]["content"] and "in the customer's language" in prompt[0]["content"]

    down = FakeModelAPI([openai_error(500, "boom")] * 3)
    resets: list[bool] = []
    failed = answer_turn(
        conversation(helpcentre),
        REFUND_QUESTION,
        services=services(embedder, api=down, provider="openai"),
        on_delta=lambda _: None,
        on_reset=lambda: resets.append(True),
    )
    assert failed.generator == "extractive" and failed.decision == "answered" and resets == [True]
