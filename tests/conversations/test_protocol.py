"""The websocket frame rules, alone: every bad frame gets a code and a message that says what to fix."""

import json
import uuid

import pytest

from conversations.chat.protocol import (
    CustomerMessage,
    Handoff,
    Hello,
    Presence,
    StaffTyping,
    TokenBucket,
    Typing,
    parse_frame,
    parse_staff_frame,
)
from conversations.errors import FrameError

LIMIT = 2048


def error_of(text: str | None, binary: bool = False) -> FrameError:
    with pytest.raises(FrameError) as caught:
        parse_frame(text, max_bytes=LIMIT, binary=binary)
    return caught.value


def test_well_formed_frames_parse_to_their_types():
    assert parse_frame('{"type": "hello", "token": null, "after": 0}', max_bytes=LIMIT) == Hello(None, 0)
    assert parse_frame('{"type": "hello", "token": "t", "after": 7}', max_bytes=LIMIT) == Hello("t", 7)
    assert parse_frame('{"type": "message", "id": "a-1_B", "text": "  hi  "}', max_bytes=LIMIT) == CustomerMessage(
        "a-1_B", "hi"
    )
    assert parse_frame('{"type": "typing"}', max_bytes=LIMIT) == Typing()
    assert parse_frame('{"type": "handoff"}', max_bytes=LIMIT) == Handoff()


@pytest.mark.parametrize(
    ("text", "code", "words"),
    [
        ("{not json", "bad_json", "not valid JSON"),
        ("[1, 2]", "bad_frame", "JSON object"),
        ('{"type": "launch"}', "unknown_type", "Unknown frame type 'launch'"),
        ('{"type": "hello", "after": -1}', "bad_frame", "after"),
        ('{"type": "hello", "after": true}', "bad_frame", "after"),
        ('{"type": "hello", "token": 5}', "bad_frame", "token"),
        ('{"type": "message", "id": "has space", "text": "x"}', "bad_frame", "message.id"),
        ('{"type": "message", "text": "x"}', "bad_frame", "message.id"),
        ('{"type": "message", "id": "m1", "text": "   "}', "bad_message", "empty"),
        ('{"type": "message", "id": "m1", "text": 42}', "bad_message", "must be text"),
        (json.dumps({"type": "message", "id": "m1", "text": "x" * 2001}), "too_long", "limit is 2000"),
        ('{"type": "message", "id": "m1", "text": "\\ud800"}', "invalid_text", "UTF-8"),
    ],
)
def test_bad_frames_are_refused_with_a_code_and_a_reason(text, code, words):
    error = error_of(text)
    assert error.code == code
    assert words in str(error)


def test_an_error_about_one_message_names_it():
    error = error_of('{"type": "message", "id": "m9", "text": ""}')
    assert error.as_frame() == {"type": "error", "code": "bad_message", "message": "The message is empty.", "id": "m9"}


def test_binary_and_oversized_frames_are_refused_before_parsing():
    assert error_of(None, binary=True).code == "not_text"
    oversized = error_of(json.dumps({"type": "message", "id": "m", "text": "é" * 1100}))
    assert oversized.code == "too_large"
    assert f"limit is {LIMIT}" in str(oversized)


def test_the_token_bucket_allows_a_burst_then_refills_at_its_rate():
    now = [0.0]
    bucket = TokenBucket(3, 0.5, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    assert bucket.wait_s() == pytest.approx(2.0)
    now[0] = 1.0
    assert not bucket.take()
    now[0] = 2.0
    assert bucket.take()
    now[0] = 100.0
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]


def test_the_staff_socket_takes_only_typing_with_a_conversation_id_and_presence():
    conversation = uuid.uuid4()
    typing = json.dumps({"type": "typing", "conversation": str(conversation)})
    assert parse_staff_frame(typing) == StaffTyping(conversation)
    assert parse_staff_frame('{"type": "presence", "status": "away"}') == Presence("away")
    for text, code in [
        ('{"type": "reply", "text": "hi"}', "read_only"),
        ('{"type": "typing", "conversation": "42"}', "bad_frame"),
        ('{"type": "presence", "status": "busy"}', "bad_status"),
        ('{"type": "presence"}', "bad_status"),
        ("nope", "bad_json"),
        ("x" * 2000, "too_large"),
    ]:
        with pytest.raises(FrameError) as caught:
            parse_staff_frame(text)
        assert caught.value.code == code
