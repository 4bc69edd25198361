"""A suggestion answered "No": the handoff frame's optional seq, the referral made for the suggestion's own turn
with the reason "suggestion_declined" and the customer's question (masked) in it, the staff card showing it,
and the reply frame carrying the units the widget builds the suggestion's card from."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.utils import timezone

from answering.outcome import Decision, HandoffReason
from conversations.chat import session
from conversations.chat.protocol import Handoff, parse_frame
from conversations.errors import ChatError, FrameError
from conversations.handoff import actions
from conversations.handoff.staff import render_card
from conversations.models import (
    Conversation,
    ConversationStatus,
    Message,
    Referral,
    ReferralStatus,
    Role,
    Turn,
    TurnFeedback,
)
from tests.conversations.suggestion_helpers import UNITS, suggested_turn
from tests.conversations.test_chat_socket import hello, next_frame, open_chat
from tests.insights.outcome_helpers import collection

LIMIT = 2048
QUESTION = "I'm jane.doe@example.com: how long do I have to send a sofa back?"


def test_a_handoff_frame_may_name_the_reply_that_did_not_answer():
    assert parse_frame('{"type": "handoff"}', max_bytes=LIMIT) == Handoff(None)
    assert parse_frame('{"type": "handoff", "seq": null}', max_bytes=LIMIT) == Handoff(None)
    assert parse_frame('{"type": "handoff", "seq": 17}', max_bytes=LIMIT) == Handoff(17)


@pytest.mark.parametrize("seq", [0, -3, True, "17", 1.5, [17]])
def test_a_bad_handoff_seq_is_refused_with_what_it_must_be(seq):
    with pytest.raises(FrameError) as caught:
        parse_frame(json.dumps({"type": "handoff", "seq": seq}), max_bytes=LIMIT)
    assert caught.value.code == "bad_frame"
    assert str(caught.value) == (
        "handoff.seq must be the seq of the reply that did not answer (a whole number ≥ 1), or left out."
    )


@pytest.fixture
def shop(db):
    return collection("shop")


def _answered(conversation: Conversation, question: str) -> Turn:
    asked = Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text=question)
    replied = Message.objects.create(conversation=conversation, role=Role.ASSISTANT, text="Delivery takes 3 days.")
    return Turn.objects.create(
        conversation=conversation, customer_message=asked, reply_message=replied, decision=Decision.ANSWERED
    )


def test_the_reply_frame_carries_the_units(shop):
    turn = suggested_turn(Conversation.objects.create(collection=shop), QUESTION, client_id="q1")
    frame = session.reply_frame(turn)
    assert (frame["decision"], frame["units"], frame["seq"], frame["id"]) == (
        "suggested",
        UNITS,
        turn.reply_message_id,
        "q1",
    )


def test_declining_a_suggestion_refers_its_turn_with_the_question_masked(shop):
    conversation = Conversation.objects.create(collection=shop)
    suggestion = suggested_turn(conversation, QUESTION)
    _answered(conversation, "How long does delivery take?")  # a later turn: not the one handed off

    referral = actions.request_handoff(conversation, declined_seq=suggestion.reply_message_id)

    assert referral.turn_id == suggestion.pk
    assert referral.reason_code == HandoffReason.SUGGESTION_DECLINED
    assert referral.reason == (
        "the suggested section did not answer: “I'm <EMAIL_ADDRESS_1>: how long do I have to send a sofa back?”"
    )
    conversation.refresh_from_db()
    assert (conversation.status, conversation.person_requested) == (ConversationStatus.REFERRED, True)

    # Staff see the reason, with what was suggested, on the queue card; the raw address nowhere.
    card = render_card(conversation, get_user_model().objects.create_user("sam", is_staff=True))
    assert "Suggestion did not answer" in card and "the suggested section did not answer:" in card
    assert 'data-role="suggested"' in card and "Suggested a section" in card
    assert 'href="/help/returns#return-window"' in card and "Oak Circle members have 60 days" in card
    assert "jane.doe@example.com" not in card
    # What was suggested is shown as what the customer declined, never offered again as a draft to send.
    assert 'data-role="draft"' not in card


def test_without_a_seq_or_on_an_answer_the_customer_asked_for_a_person(shop):
    conversation = Conversation.objects.create(collection=shop)
    suggested_turn(conversation, QUESTION)
    latest = _answered(conversation, "How long does delivery take?")
    referral = actions.request_handoff(conversation)
    assert (referral.turn_id, referral.reason_code) == (latest.pk, HandoffReason.CUSTOMER_ASKED)

    other = Conversation.objects.create(collection=shop)
    answer = _answered(other, "How long does delivery take?")
    declined_answer = actions.request_handoff(other, declined_seq=answer.reply_message_id)
    assert (declined_answer.turn_id, declined_answer.reason_code) == (answer.pk, HandoffReason.CUSTOMER_ASKED)


def test_a_resolved_referral_of_the_suggestion_reopens_with_the_new_reason(shop):
    conversation = Conversation.objects.create(collection=shop)
    suggestion = suggested_turn(conversation, "Can I return a sofa?")
    Referral.objects.create(
        turn=suggestion,
        conversation=conversation,
        reason_code=HandoffReason.CUSTOMER_ASKED,
        reason="the customer asked for a person",
        status=ReferralStatus.RESOLVED,
        resolved_at=timezone.now(),
    )
    referral = actions.request_handoff(conversation, declined_seq=suggestion.reply_message_id)
    assert (referral.status, referral.reason_code) == (ReferralStatus.OPEN, HandoffReason.SUGGESTION_DECLINED)
    assert referral.reason == (
        "the customer asked for a person; the suggested section did not answer: “Can I return a sofa?”"
    )


def test_only_a_reply_of_this_conversation_can_be_handed_off_by_seq(shop):
    mine, theirs = Conversation.objects.create(collection=shop), Conversation.objects.create(collection=shop)
    my_suggestion = suggested_turn(mine, "Can I return a sofa?")
    their_suggestion = suggested_turn(theirs, "Can I return a lamp?")
    for seq, code, says in [
        (their_suggestion.reply_message_id, "not_your_reply", "hand off only its replies"),
        (my_suggestion.customer_message_id, "not_a_reply", "only those can be handed off"),
        (10**9, "unknown_reply", f"There is no reply {10**9} to hand off."),
    ]:
        with pytest.raises(ChatError) as caught:
            actions.request_handoff(mine, declined_seq=seq)
        assert caught.value.code == code and says in str(caught.value), (code, str(caught.value))
    assert not Referral.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_no_over_the_socket_rates_the_suggestion_down_and_hands_off_its_turn():
    shop = await sync_to_async(collection)("shop")
    conversation = await Conversation.objects.acreate(collection=shop)
    suggestion = await sync_to_async(suggested_turn)(conversation, "Can I return a sofa?", client_id="q1")
    token = await sync_to_async(session.issue_token)(conversation)
    widget = await open_chat()
    welcome = await hello(widget, token)
    [replayed] = [m for m in welcome["messages"] if m["type"] == "reply"]
    assert (replayed["decision"], replayed["units"], replayed["rating"]) == ("suggested", UNITS, None)

    seq = suggestion.reply_message_id
    await widget.send_json_to({"type": "feedback", "seq": seq, "rating": "down"})
    assert await next_frame(widget, "feedback") == {"type": "feedback", "seq": seq, "rating": "down"}
    await widget.send_json_to({"type": "handoff", "seq": seq})
    status = await next_frame(widget, "status")
    assert (status["status"], status["person_requested"]) == ("referred", True)
    referral = await Referral.objects.aget()
    assert (referral.turn_id, referral.reason_code) == (suggestion.pk, HandoffReason.SUGGESTION_DECLINED)
    assert (await TurnFeedback.objects.aget(turn=suggestion)).rating == "down"

    await widget.send_json_to({"type": "handoff", "seq": 0})
    refused = await next_frame(widget, "error")
    assert refused["code"] == "bad_frame" and "handoff.seq" in refused["message"]
    await widget.disconnect()

    resumed_socket = await open_chat()
    resumed = await hello(resumed_socket, token)
    [again] = [m for m in resumed["messages"] if m["type"] == "reply"]
    assert (again["decision"], again["units"], again["rating"]) == ("suggested", UNITS, "down")
    await resumed_socket.disconnect()
