"""The chat websocket under random and malformed frames (hypothesis): the server never raises, never closes
the connection, never stores a message it refused, and still answers a real question afterwards."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from conversations.chat.protocol import CustomerMessage, parse_frame
from conversations.errors import FrameError
from conversations.models import Conversation, Message
from supportbot.asgi import application
from tests.conversations.test_chat_socket import ORIGIN, WAIT_S

pytestmark = pytest.mark.django_db(transaction=True)

MAX_FRAME_BYTES = 16_384

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
types = st.sampled_from(["hello", "message", "typing", "handoff", "welcome", "ack", "", "HELLO", "message "])
# Frames shaped like the protocol's, with wrong, missing or extra fields of any JSON type.
shaped = st.fixed_dictionaries(
    {"type": types | json_values},
    optional={
        "id": json_values | st.text(max_size=80),
        "text": json_values | st.text(max_size=3000),
        "token": json_values | st.text(max_size=200),
        "after": json_values,
        "customer_token": json_values,
        "seq": json_values,
    },
).map(json.dumps)
frames = st.one_of(
    shaped,
    json_values.map(json.dumps),
    # (Not empty: the test client cannot send an empty frame.)
    st.text(min_size=1, max_size=300),  # not JSON, or JSON of the wrong shape
    st.binary(min_size=1, max_size=300),  # binary frames are refused
    st.just("x" * (MAX_FRAME_BYTES + 10)),  # over the size limit
    st.just('{"type": "message", "id": "a", "text": "' + "\\u0000" * 50 + '"}'),  # only NUL characters
)


def refused_messages(sent: list[str | bytes]) -> list[str | bytes]:
    """The frames that are not a valid customer message (any of them storing a message is a bug)."""
    refused = []
    for frame in sent:
        try:
            parsed = parse_frame(
                frame if isinstance(frame, str) else None, max_bytes=MAX_FRAME_BYTES, binary=isinstance(frame, bytes)
            )
        except FrameError:
            refused.append(frame)
            continue
        if not isinstance(parsed, CustomerMessage):
            refused.append(frame)
    return refused


async def _session(sent: list[str | bytes], question_id: str) -> list[dict[str, Any]]:
    socket = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
    connected, _ = await socket.connect()
    assert connected
    await socket.send_json_to({"type": "hello", "token": None, "after": 0})
    for frame in sent:
        if isinstance(frame, bytes):
            await socket.send_to(bytes_data=frame)
        else:
            await socket.send_to(text_data=frame)
    await socket.send_json_to({"type": "message", "id": question_id, "text": "When is the phone line open?"})
    received: list[dict[str, Any]] = []
    while True:
        # A close frame or an exception raised in the consumer surfaces here and fails the test.
        frame = await socket.receive_json_from(timeout=WAIT_S)
        received.append(frame)
        if frame["type"] == "reply" and frame["id"] == question_id:
            break
    await socket.disconnect()
    return received


def test_random_frames_never_break_the_chat(small_helpcentre, settings) -> None:
    # Rate limits are by design; lifted so that every frame reaches the parser.
    settings.CHAT_FRAME_BURST = settings.CHAT_MESSAGE_BURST = 10_000
    settings.RATE_LIMIT_CONNECTIONS_PER_IP = 10_000
    settings.CHAT_MAX_FRAME_BYTES = MAX_FRAME_BYTES
    examples = iter(range(10_000))

    @hypothesis_settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
        database=None,
        # Shrinking replays failing examples with a turn and a reply timeout each: minutes, not seconds.
        phases=[Phase.explicit, Phase.generate],
    )
    @given(sent=st.lists(frames, max_size=12))
    def check(sent: list[str | bytes]) -> None:
        question_id = f"q{next(examples)}"
        before = set(Message.objects.values_list("pk", flat=True))
        received = async_to_sync(_session)(sent, question_id)
        new = Message.objects.exclude(pk__in=before)
        stored_texts = {m.text for m in new.filter(role="customer")}
        # Only valid messages are stored: the question, and any frame that happened to be a valid message.
        valid_texts = {
            json.loads(frame)["text"].replace("\x00", "").strip()
            for frame in sent
            if frame not in refused_messages([frame])
        }
        assert stored_texts <= valid_texts | {"When is the phone line open?"}
        assert "When is the phone line open?" in stored_texts
        errors = [frame for frame in received if frame["type"] == "error"]
        assert all(error["message"] and error["code"] for error in errors)
        assert received[-1]["decision"] in {"answered", "abstained", "referred"}

    check()


def test_a_bare_hello_leaves_no_conversation_behind(small_helpcentre) -> None:
    async def storm() -> list[str]:
        ids = []
        for _ in range(20):
            socket = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
            assert (await socket.connect())[0]
            await socket.send_json_to({"type": "hello", "token": None, "after": 0})
            welcome = await socket.receive_json_from(timeout=WAIT_S)
            await socket.send_json_to({"type": "typing"})
            await socket.send_json_to({"type": "handoff"})
            refused = await socket.receive_json_from(timeout=WAIT_S)
            assert refused["code"] == "nothing_to_hand_off"
            ids.append(welcome["conversation"])
            await socket.disconnect()
        return ids

    ids = async_to_sync(storm)()
    assert len(set(ids)) == 20 and not Conversation.objects.exists()

    async def resume_then_ask(token: str) -> dict[str, Any]:
        socket = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
        assert (await socket.connect())[0]
        await socket.send_json_to({"type": "hello", "token": token, "after": 0})
        welcome = await socket.receive_json_from(timeout=WAIT_S)  # no "session_expired": nothing was lost
        await socket.send_json_to({"type": "message", "id": "m1", "text": "When is the phone line open?"})
        while (await socket.receive_json_from(timeout=WAIT_S))["type"] != "reply":
            pass
        await socket.disconnect()
        return welcome

    async def first_token() -> str:
        socket = WebsocketCommunicator(application, "/ws/chat/", headers=[ORIGIN])
        assert (await socket.connect())[0]
        await socket.send_json_to({"type": "hello", "token": None, "after": 0})
        token = (await socket.receive_json_from(timeout=WAIT_S))["token"]
        await socket.disconnect()
        return token

    welcome = async_to_sync(resume_then_ask)(async_to_sync(first_token)())
    assert welcome["type"] == "welcome" and welcome["messages"] == []
    # The first message stores the conversation, under the id the welcome gave.
    conversation = Conversation.objects.get()
    assert str(conversation.public_id) == welcome["conversation"] and conversation.messages.count() == 2
