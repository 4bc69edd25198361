"""Thumbs up / down on the assistant's replies: the frame's rules alone, then over the real chat consumer
(real ASGI application, Postgres, the channel layer in memory and in Redis): stored one per reply,
changeable, carried by the history, refused for another conversation's reply, shown on the staff card."""

from __future__ import annotations

import json

import pytest
from channels.testing import WebsocketCommunicator

from conversations.chat.protocol import Feedback, parse_frame
from conversations.errors import FrameError
from conversations.models import Conversation, FeedbackRating, Message, TurnFeedback
from supportbot.asgi import application
from tests.conversations.test_chat_socket import (  # noqa: F401 (channel_layer is a fixture, used by name)
    ask,
    card_showing,
    channel_layer,
    hello,
    next_frame,
    open_chat,
    staff_session,
)

LIMIT = 2048
QUESTION = "When is the phone line open?"


def feedback_error(frame: dict) -> FrameError:
    with pytest.raises(FrameError) as caught:
        parse_frame(json.dumps(frame), max_bytes=LIMIT)
    return caught.value


def test_a_feedback_frame_parses_with_its_reason_trimmed():
    frame = {"type": "feedback", "seq": 12, "rating": "down", "reason": "  too vague \x00 "}
    assert parse_frame(json.dumps(frame), max_bytes=LIMIT) == Feedback(12, "down", "too vague")
    assert parse_frame('{"type": "feedback", "seq": 3, "rating": "up"}', max_bytes=LIMIT) == Feedback(3, "up", "")
    assert parse_frame('{"type": "feedback", "seq": 3, "rating": "up", "reason": null}', max_bytes=LIMIT) == Feedback(
        3, "up", ""
    )


@pytest.mark.parametrize(
    ("frame", "code", "words"),
    [
        ({"type": "feedback", "rating": "up"}, "bad_frame", "feedback.seq"),
        ({"type": "feedback", "seq": 0, "rating": "up"}, "bad_frame", "feedback.seq"),
        ({"type": "feedback", "seq": True, "rating": "up"}, "bad_frame", "feedback.seq"),
        ({"type": "feedback", "seq": "4", "rating": "up"}, "bad_frame", "feedback.seq"),
        ({"type": "feedback", "seq": 4, "rating": "meh"}, "bad_rating", "'meh'"),
        ({"type": "feedback", "seq": 4}, "bad_rating", '"up" or "down"'),
        ({"type": "feedback", "seq": 4, "rating": "down", "reason": 5}, "bad_frame", "feedback.reason"),
        ({"type": "feedback", "seq": 4, "rating": "down", "reason": "x" * 301}, "reason_too_long", "301 characters"),
        ({"type": "feedback", "seq": 4, "rating": "up", "reason": "great"}, "bad_frame", "thumbs down only"),
    ],
)
def test_a_bad_feedback_frame_says_what_is_wrong(frame, code, words):
    error = feedback_error(frame)
    assert error.code == code and words in str(error), (error.code, str(error))


def test_a_reason_of_exactly_the_limit_is_taken():
    frame = {"type": "feedback", "seq": 4, "rating": "down", "reason": "é" * 300}
    assert parse_frame(json.dumps(frame), max_bytes=LIMIT) == Feedback(4, "down", "é" * 300)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.usefixtures("channel_layer")
async def test_a_thumbs_down_with_a_reason_is_stored_masked_and_a_thumbs_up_replaces_it(small_helpcentre):
    socket = await open_chat()
    welcome = await hello(socket)
    _, reply, _ = await ask(socket, QUESTION, "q1")
    other_tab = await open_chat()
    await hello(other_tab, welcome["token"], after=reply["seq"])

    reason = "It did not say about Saturdays. Write to jane.doe@example.com"
    await socket.send_json_to({"type": "feedback", "seq": reply["seq"], "rating": "down", "reason": reason})
    stored = {"type": "feedback", "seq": reply["seq"], "rating": "down"}
    assert await next_frame(socket, "feedback") == stored
    assert await next_frame(other_tab, "feedback") == stored  # the customer's other tab shows it pressed too
    feedback = await TurnFeedback.objects.select_related("turn").aget()
    assert feedback.turn.reply_message_id == reply["seq"] and feedback.rating == FeedbackRating.DOWN
    # Kept like every copy of the customer's words outside Message: masked.
    assert feedback.reason.startswith("It did not say about Saturdays.") and "jane.doe" not in feedback.reason
    assert "<EMAIL_ADDRESS_1>" in feedback.reason

    await socket.send_json_to({"type": "feedback", "seq": reply["seq"], "rating": "up"})
    assert await next_frame(socket, "feedback") == {**stored, "rating": "up"}
    changed = await TurnFeedback.objects.aget()
    assert (changed.pk, changed.rating, changed.reason) == (feedback.pk, "up", "")
    assert await TurnFeedback.objects.acount() == 1
    await socket.disconnect()
    await other_tab.disconnect()

    # A reload asks for the whole history: the reply comes back with the stored rating.
    resumed_socket = await open_chat()
    resumed = await hello(resumed_socket, welcome["token"], after=0)
    replies = [m for m in resumed["messages"] if m["type"] == "reply"]
    assert replies == [{**reply, "rating": "up"}]
    assert reply["rating"] is None  # the live reply, before any rating
    await resumed_socket.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.usefixtures("channel_layer")
async def test_a_customer_rates_only_the_assistant_replies_of_their_own_conversation(small_helpcentre):
    theirs = await open_chat()
    await hello(theirs)
    _, their_reply, _ = await ask(theirs, QUESTION, "t1")

    mine = await open_chat()
    await hello(mine)
    # Before a first message this conversation is not even stored: still not theirs to rate.
    await mine.send_json_to({"type": "feedback", "seq": their_reply["seq"], "rating": "down"})
    refused = await next_frame(mine, "error")
    assert refused["code"] == "not_your_reply" and str(their_reply["seq"]) in refused["message"]

    ack, my_reply, _ = await ask(mine, "Are you open on public holidays?", "m1")
    await mine.send_json_to({"type": "feedback", "seq": their_reply["seq"], "rating": "down", "reason": "bad"})
    assert (await next_frame(mine, "error"))["code"] == "not_your_reply"
    await mine.send_json_to({"type": "feedback", "seq": ack["seq"], "rating": "up"})
    not_a_reply = await next_frame(mine, "error")
    assert not_a_reply["code"] == "not_a_reply" and "not an assistant reply" in not_a_reply["message"]
    await mine.send_json_to({"type": "feedback", "seq": my_reply["seq"] + 10_000, "rating": "up"})
    assert (await next_frame(mine, "error"))["code"] == "unknown_reply"
    await mine.send_json_to({"type": "feedback", "seq": my_reply["seq"], "rating": "thumbs"})
    assert (await next_frame(mine, "error"))["code"] == "bad_rating"
    await mine.send_json_to({"type": "feedback", "seq": my_reply["seq"], "rating": "down", "reason": "y" * 301})
    assert (await next_frame(mine, "error"))["code"] == "reason_too_long"
    assert await TurnFeedback.objects.acount() == 0

    # The connection survives every refusal, and the customer's own reply takes a rating.
    await mine.send_json_to({"type": "feedback", "seq": my_reply["seq"], "rating": "down"})
    assert (await next_frame(mine, "feedback"))["rating"] == "down"
    rated = await TurnFeedback.objects.select_related("turn__conversation").aget()
    assert rated.turn.reply_message_id == my_reply["seq"]
    assert await Message.objects.filter(pk=their_reply["seq"], answered_turn__feedback__isnull=True).aexists()
    await theirs.disconnect()
    await mine.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.usefixtures("channel_layer")
async def test_a_rating_in_a_conversation_waiting_for_a_person_shows_on_its_queue_card(small_helpcentre):
    _, staff_headers, _ = await staff_session()
    queue = WebsocketCommunicator(application, "/ws/staff/", headers=staff_headers)
    assert (await queue.connect())[0]
    widget = await open_chat()
    welcome = await hello(widget)
    _, reply, _ = await ask(widget, "Do you sell replacement sofa legs in walnut?", "q1")
    await widget.send_json_to({"type": "handoff"})
    await card_showing(queue, "sofa legs")

    await widget.send_json_to({"type": "feedback", "seq": reply["seq"], "rating": "down", "reason": "No answer"})
    card = await card_showing(queue, "Not helpful")
    assert card["conversation"] == welcome["conversation"]
    assert 'data-rating="down"' in card["html"] and "No answer" in card["html"]
    conversation = await Conversation.objects.aget(public_id=welcome["conversation"])
    assert conversation.status in ("referred", "human")
    await widget.disconnect()
    await queue.disconnect()
