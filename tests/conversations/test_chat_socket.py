"""The chat and staff websockets end to end: the real ASGI application (origin check, sessions, routing),
real Postgres, the real models, and the channel layer in memory and (when REDIS_URL is set, as in CI) in
a real Redis."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.test import AsyncClient

from conversations.chat import session
from conversations.models import (
    Conversation,
    ConversationStatus,
    Message,
    Referral,
    ReferralStatus,
    StaffAction,
    Turn,
)
from customers import tokens
from customers.models import Customer
from supportbot.asgi import application
from tests.answering.fakes import claude_says, services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ORIGIN = (b"origin", b"http://127.0.0.1")
REFUND_QUESTION = "How long will my refund take to show on my card?"
WAIT_S = 90  # the first turn of a run loads the models


@pytest.fixture(params=["memory", "redis"])
def channel_layer(request, settings) -> str:
    if request.param == "redis":
        url = os.environ.get("REDIS_URL")
        if not url:
            pytest.skip("REDIS_URL is not set (.ci/run starts a Redis and sets it)")
        config = {
            "hosts": [{"address": url, "socket_timeout": settings.REDIS_SOCKET_TIMEOUT_S}],
            "prefix": f"test-{uuid.uuid4().hex[:8]}",
        }
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": config}}
    else:
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    return request.param


async def open_chat(headers: list[tuple[bytes, bytes]] | None = None) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(application, "/ws/chat/", headers=headers or [ORIGIN])
    connected, _ = await socket.connect()
    assert connected
    return socket


async def hello(socket: WebsocketCommunicator, token: str | None = None, after: int = 0) -> dict[str, Any]:
    await socket.send_json_to({"type": "hello", "token": token, "after": after})
    return await next_frame(socket, "welcome")


async def next_frame(socket: WebsocketCommunicator, kind: str, seen: list[dict[str, Any]] | None = None) -> dict:
    """Frames until one of this type (the others are kept in ``seen``)."""
    while True:
        frame = await socket.receive_json_from(timeout=WAIT_S)
        if frame["type"] == kind:
            return frame
        if seen is not None:
            seen.append(frame)


async def card_showing(queue: WebsocketCommunicator, text: str) -> dict[str, Any]:
    """The first queue update whose card shows this text (earlier actions send updates of their own)."""
    while True:
        card = await next_frame(queue, "card")
        if text in card["html"]:
            return card


async def ask(socket: WebsocketCommunicator, text: str, message_id: str) -> tuple[dict, dict, list[dict]]:
    await socket.send_json_to({"type": "message", "id": message_id, "text": text})
    seen: list[dict[str, Any]] = []
    ack = await next_frame(socket, "ack", seen)
    reply = await next_frame(socket, "reply", seen)
    return ack, reply, seen


@pytest.mark.usefixtures("answers_when_relevant")
async def test_a_question_streams_its_answer_then_a_reply_with_citations(helpcentre, channel_layer):
    socket = await open_chat()
    welcome = await hello(socket)
    assert welcome["status"] == "open" and welcome["messages"] == [] and welcome["token"]

    await socket.send_json_to({"type": "message", "id": "q1", "text": REFUND_QUESTION})
    ack = await next_frame(socket, "ack")
    # Stored before it is acknowledged: nothing is lost if the browser drops now.
    stored = await Message.objects.aget(client_id="q1")
    assert ack == {"type": "ack", "id": "q1", "seq": stored.pk} and stored.text == REFUND_QUESTION

    seen: list[dict[str, Any]] = []
    reply = await next_frame(socket, "reply", seen)
    tokens = [f["text"] for f in seen if f["type"] == "token" and f["id"] == "q1"]
    assert reply["decision"] == "answered", reply
    assert "5 to 10 business days" in reply["text"]
    assert "".join(tokens) == reply["text"]
    cited = {(c["title"], c["heading_path"], c["url"]) for c in reply["citations"]}
    assert ("Refunds", "Refunds › When the money arrives", "/help/refunds#when-the-money-arrives") in cited
    await socket.disconnect()


async def test_a_resend_after_a_reconnect_is_answered_once(small_helpcentre, channel_layer):
    socket = await open_chat()
    welcome = await hello(socket)
    first_ack, first_reply, _ = await ask(socket, "When is the phone line open?", "m-1")
    await socket.disconnect()

    # The client never saw the ack (say), reconnects and resends the same id.
    socket = await open_chat()
    again = await hello(socket, welcome["token"], after=first_reply["seq"])
    assert again["conversation"] == welcome["conversation"] and again["messages"] == []
    await socket.send_json_to({"type": "message", "id": "m-1", "text": "When is the phone line open?"})
    assert await next_frame(socket, "ack") == first_ack
    assert await next_frame(socket, "reply") == first_reply
    assert await Turn.objects.filter(conversation__public_id=welcome["conversation"]).acount() == 1
    assert await Message.objects.filter(client_id="m-1").acount() == 1
    await socket.disconnect()


async def test_a_reconnect_receives_what_it_missed(small_helpcentre, channel_layer):
    socket = await open_chat()
    welcome = await hello(socket)
    _, reply, _ = await ask(socket, "When is the phone line open?", "m-1")
    await socket.disconnect()

    socket = await open_chat()
    resumed = await hello(socket, welcome["token"], after=0)
    assert [(m["type"], m.get("role"), m.get("id")) for m in resumed["messages"]] == [
        ("message", "customer", "m-1"),
        ("reply", None, "m-1"),
    ]
    assert resumed["messages"][1] == reply
    await socket.disconnect()


async def test_a_message_stored_but_never_answered_is_answered_on_resume(small_helpcentre, channel_layer):
    conversation = await Conversation.objects.acreate(collection=small_helpcentre)
    # As if the server stopped between the acknowledgement and the turn.
    await Message.objects.acreate(conversation=conversation, role="customer", text="Phone hours?", client_id="lost")
    token = await sync_to_async(session.issue_token)(conversation)

    socket = await open_chat()
    await hello(socket, token, after=0)
    reply = await next_frame(socket, "reply")
    assert reply["id"] == "lost" and reply["decision"] in ("answered", "abstained")
    await socket.disconnect()


async def test_only_the_signed_token_reopens_a_conversation(small_helpcentre, channel_layer):
    victim = await Conversation.objects.acreate(collection=small_helpcentre)
    await Message.objects.acreate(conversation=victim, role="customer", text="my card is 4111 1111 1111 1111")
    for guess in (str(victim.public_id), "not-a-token", (await sync_to_async(session.issue_token)(victim))[:-2] + "xx"):
        socket = await open_chat()
        await socket.send_json_to({"type": "hello", "token": guess, "after": 0})
        error = await socket.receive_json_from(timeout=WAIT_S)
        welcome = await next_frame(socket, "welcome")
        assert error["code"] == "session_expired"
        assert welcome["conversation"] != str(victim.public_id) and welcome["messages"] == []
        await socket.disconnect()


async def test_bad_frames_get_clear_errors_and_the_connection_survives(small_helpcentre, channel_layer):
    socket = await open_chat()
    await socket.send_json_to({"type": "message", "id": "early", "text": "hi"})
    assert (await socket.receive_json_from())["code"] == "hello_first"
    await hello(socket)

    await socket.send_to(text_data="{garbage")
    garbage = await socket.receive_json_from()
    assert garbage["code"] == "bad_json" and "not valid JSON" in garbage["message"]
    await socket.send_to(bytes_data=b"\x00\x01")
    assert (await socket.receive_json_from())["code"] == "not_text"
    await socket.send_to(text_data=json.dumps({"type": "message", "id": "big", "text": "x" * 20_000}))
    oversized = await socket.receive_json_from()
    assert oversized["code"] == "too_large" and "limit" in oversized["message"]
    await socket.send_json_to({"type": "message", "id": "long", "text": "x" * 2001})
    assert await socket.receive_json_from() == {
        "type": "error",
        "code": "too_long",
        "message": "The message is 2001 characters long; the limit is 2000.",
        "id": "long",
    }
    await socket.send_json_to({"type": "handoff"})
    assert (await socket.receive_json_from())["code"] == "nothing_to_hand_off"

    ack, reply, _ = await ask(socket, "When is the phone line open?", "after-errors")
    assert ack["id"] == "after-errors" and reply["id"] == "after-errors"
    await socket.disconnect()


async def test_a_flood_of_messages_is_limited_and_the_chat_keeps_working(small_helpcentre, channel_layer, settings):
    settings.CHAT_MESSAGE_BURST, settings.CHAT_MESSAGES_PER_S = 2, 0.01
    socket = await open_chat()
    await hello(socket)
    for n in range(5):
        await socket.send_json_to({"type": "message", "id": f"flood-{n}", "text": f"question {n}"})
    frames = [await socket.receive_json_from(timeout=WAIT_S) for _ in range(5)]
    immediate = [f for f in frames if f["type"] in ("ack", "error")]
    while len(immediate) < 5:
        frame = await socket.receive_json_from(timeout=WAIT_S)
        if frame["type"] in ("ack", "error"):
            immediate.append(frame)
    assert [f["type"] for f in immediate] == ["ack", "ack", "error", "error", "error"]
    assert {f["code"] for f in immediate[2:]} == {"rate_limited"} and "too fast" in immediate[2]["message"]
    assert await Message.objects.filter(client_id__startswith="flood-").acount() == 2
    await socket.send_json_to({"type": "typing"})  # other frames still go through
    await socket.disconnect()


async def test_a_page_on_another_site_cannot_open_the_chat(small_helpcentre):
    socket = WebsocketCommunicator(application, "/ws/chat/", headers=[(b"origin", b"https://evil.example")])
    connected, _ = await socket.connect()
    assert not connected


async def test_the_staff_socket_is_for_signed_in_staff_only(small_helpcentre):
    socket = WebsocketCommunicator(application, "/ws/staff/", headers=[ORIGIN])
    connected, code = await socket.connect()
    assert not connected and code == 4403


async def staff_session() -> tuple[AsyncClient, list[tuple[bytes, bytes]], Any]:
    user = await get_user_model().objects.acreate(username="sam", first_name="Sam", is_staff=True)
    client = AsyncClient()
    await client.aforce_login(user)
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={client.cookies[django_settings.SESSION_COOKIE_NAME].value}"
    return client, [ORIGIN, (b"cookie", cookie.encode())], user


@pytest.mark.usefixtures("answers_when_relevant")
async def test_a_referred_turn_reaches_the_queue_and_the_staff_reply_reaches_the_widget(
    helpcentre, embedder, channel_layer, monkeypatch
):
    # Claude (over the real SDK, HTTP faked) invents a figure the articles do not state: the turn is referred.
    api = claude_says("Refunds reach your card within 2 hours [1].")
    monkeypatch.setattr(session, "turn_services", lambda: services(embedder, api=api))
    client, staff_headers, user = await staff_session()
    queue = WebsocketCommunicator(application, "/ws/staff/", headers=staff_headers)
    assert (await queue.connect())[0]

    widget = await open_chat()
    welcome = await hello(widget)
    _, reply, seen = await ask(widget, REFUND_QUESTION, "q1")
    assert reply["decision"] == "referred" and reply["citations"] == []
    assert "".join(f["text"] for f in seen if f["type"] == "token") == "Refunds reach your card within 2 hours [1]."
    assert (await next_frame(widget, "status"))["status"] == "referred"

    card = await card_showing(queue, "Refunds reach your card within 2 hours")
    assert card["conversation"] == welcome["conversation"] and card["waiting"] and "Unsupported" in card["html"]
    await widget.send_json_to({"type": "typing"})
    assert await next_frame(queue, "typing") == {"type": "typing", "conversation": welcome["conversation"]}
    await queue.send_json_to({"type": "typing", "conversation": welcome["conversation"]})
    assert await next_frame(widget, "typing") == {"type": "typing", "role": "staff"}
    await queue.send_json_to({"type": "resolve", "conversation": welcome["conversation"]})
    assert (await next_frame(queue, "error"))["code"] == "read_only"

    conversation = await Conversation.objects.aget(public_id=welcome["conversation"])
    response = await client.post(
        f"/staff/conversations/{conversation.public_id}/reply",
        {"text": "Refunds show on your card 5 to 10 business days after approval."},
        headers={"accept": "application/json"},
    )
    assert response.status_code == 200, response.content
    live = await next_frame(widget, "message")
    assert live["role"] == "staff" and live["author"] == "Sam" and "5 to 10 business days" in live["text"]
    action = await StaffAction.objects.select_related("message").aget(conversation=conversation)
    assert (action.username, action.kind, action.message.text) == ("sam", "reply", live["text"])

    await client.post(f"/staff/conversations/{conversation.public_id}/take-over")
    assert (await next_frame(widget, "status"))["status"] == "human"
    # While a person has the conversation, the assistant stays silent; staff see the message.
    await widget.send_json_to({"type": "message", "id": "q2", "text": "Thanks, and can I pay by invoice?"})
    assert (await next_frame(widget, "ack"))["id"] == "q2"
    assert await card_showing(queue, "pay by invoice")
    await client.post(f"/staff/conversations/{conversation.public_id}/resolve")
    assert (await next_frame(widget, "status"))["status"] == "open"
    while (await next_frame(queue, "card"))["waiting"]:
        pass  # updates sent before the resolution

    referral = await Referral.objects.aget(conversation=conversation)
    assert referral.status == ReferralStatus.RESOLVED and referral.assignee_id == user.pk
    assert [a.kind async for a in StaffAction.objects.filter(conversation=conversation).order_by("pk")] == [
        "reply",
        "take_over",
        "resolve",
    ]
    assert await Turn.objects.filter(conversation=conversation).acount() == 1  # q2 was never answered by the bot
    assert (await Conversation.objects.aget(pk=conversation.pk)).status == ConversationStatus.OPEN
    await widget.disconnect()
    await queue.disconnect()


async def test_asking_for_a_person_after_an_abstention_joins_the_queue(small_helpcentre, channel_layer):
    widget = await open_chat()
    await hello(widget)
    _, reply, _ = await ask(widget, "Do you sell replacement sofa legs in walnut?", "q1")
    assert reply["decision"] == "abstained" and "I don't have that information" in reply["text"]
    await widget.send_json_to({"type": "handoff"})
    assert (await next_frame(widget, "status"))["status"] == "referred"
    referral = await Referral.objects.select_related("turn__customer_message").aget()
    assert referral.reason == "the customer asked for a person" and referral.turn.customer_message.client_id == "q1"
    await widget.disconnect()


async def test_a_signed_customer_token_makes_the_conversation_theirs(small_helpcentre, channel_layer, settings):
    settings.CUSTOMER_TOKEN_SECRET = "s" * 40
    alex = await Customer.objects.acreate(external_id="c-1001", name="Alex Morgan", is_member=True)
    valid = tokens.sign("c-1001", secret=settings.CUSTOMER_TOKEN_SECRET)

    socket = await open_chat()
    await socket.send_json_to({"type": "hello", "token": None, "after": 0, "customer_token": valid})
    welcome = await next_frame(socket, "welcome")
    assert welcome["signed_in"] is True
    await ask(socket, "When is the phone line open?", "q1")
    conversation = await Conversation.objects.aget(public_id=welcome["conversation"])
    assert conversation.customer_id == alex.pk and conversation.audience == "member"
    await socket.disconnect()

    # The chat token alone (no customer token) does not reopen a signed-in customer's conversation.
    socket = await open_chat()
    await socket.send_json_to({"type": "hello", "token": welcome["token"], "after": 0})
    assert (await socket.receive_json_from(timeout=WAIT_S))["code"] == "session_expired"
    guest = await next_frame(socket, "welcome")
    assert guest["conversation"] != welcome["conversation"] and not guest["signed_in"] and guest["messages"] == []
    await socket.disconnect()


@pytest.mark.parametrize(
    ("make_token", "why"),
    [
        (lambda secret: tokens.sign("c-1001", secret="another-secret-" + "x" * 30), "signature is not valid"),
        (lambda secret: tokens.sign("c-1001", secret=secret, ttl_s=-10), "expired"),
        (lambda secret: tokens.sign("c-9999", secret=secret), "not known here"),
        (lambda secret: "garbage", "malformed"),
    ],
)
async def test_a_bad_customer_token_is_refused_and_the_chat_stays_anonymous(
    small_helpcentre, settings, make_token, why
):
    settings.CUSTOMER_TOKEN_SECRET = "s" * 40
    await Customer.objects.acreate(external_id="c-1001", name="Alex Morgan")
    socket = await open_chat()
    await socket.send_json_to(
        {"type": "hello", "token": None, "after": 0, "customer_token": make_token(settings.CUSTOMER_TOKEN_SECRET)}
    )
    error = await socket.receive_json_from(timeout=WAIT_S)
    assert error["code"] == "customer_token_refused" and why in error["message"] and "guest" in error["message"]
    welcome = await next_frame(socket, "welcome")
    assert welcome["signed_in"] is False
    await ask(socket, "When is the phone line open?", "q1")
    assert (await Conversation.objects.aget(public_id=welcome["conversation"])).customer_id is None
    await socket.disconnect()


async def test_a_chat_left_idle_stays_open(small_helpcentre, channel_layer):
    """redis-py gives up on a read after 5 s by default, as long as the channel layer's blocking wait: a chat
    idle for longer was closed over Redis until the layer's reads were allowed more time."""
    socket = await open_chat()
    await hello(socket)
    await asyncio.sleep(7)
    _, reply, _ = await ask(socket, "When is the phone line open?", "after-a-pause")
    assert reply["decision"] == "answered"
    await socket.disconnect()
