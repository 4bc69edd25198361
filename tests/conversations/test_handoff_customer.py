"""The customer's side of a hand-off over the real websocket: the availability they are told, a request for a
person that silences the assistant until staff hand the conversation back, and the e-mail address frame."""

from __future__ import annotations

import asyncio
from datetime import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from answering.outcome import HandoffReason
from conversations.chat import session
from conversations.chat.protocol import Contact, parse_frame
from conversations.errors import FrameError
from conversations.handoff import actions
from conversations.models import (
    BusinessHours,
    Conversation,
    ConversationStatus,
    Message,
    OpeningPeriod,
    PresenceStatus,
    Referral,
    ReferralStatus,
    StaffAction,
    StaffPresence,
    Turn,
)
from tests.conversations.test_chat_socket import ask, hello, next_frame, open_chat

QUESTION = "When is the phone line open?"


async def frames_within(socket: WebsocketCommunicator, seconds: float) -> list[dict]:
    """Every frame the server sends in the next few seconds (a receive that times out would end the app)."""
    await asyncio.sleep(seconds)
    frames = []
    while not await socket.receive_nothing():
        frames.append(await socket.receive_json_from())
    return frames


@pytest.fixture
def email_on(settings) -> None:
    settings.EMAIL_REPLIES = True


def test_the_contact_frame_takes_an_address_and_names_what_is_wrong_with_a_bad_one():
    assert parse_frame('{"type": "contact", "email": "  jane@example.com "}', max_bytes=4096) == Contact(
        "jane@example.com"
    )
    for bad, says in [
        ('{"type": "contact", "email": "jane@"}', "'jane@' is not an e-mail address"),
        ('{"type": "contact", "email": "jane example.com"}', "should look like name@example.com"),
        ('{"type": "contact"}', "contact.email must be your e-mail address"),
        ('{"type": "contact", "email": 42}', "contact.email must be your e-mail address"),
        ('{"type": "contact", "email": "' + "j" * 250 + '@example.com"}', "the limit is 254"),
    ]:
        with pytest.raises(FrameError) as error:
            parse_frame(bad, max_bytes=4096)
        assert error.value.code == "bad_email" and says in str(error.value)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_asking_for_a_person_silences_the_assistant_until_staff_hand_it_back(small_helpcentre, email_on):
    widget = await open_chat()
    welcome = await hello(widget)
    assert welcome["availability"]["available"] is False
    assert welcome["availability"]["reason"] == "nobody_online"
    assert (welcome["person_requested"], welcome["contact_email"], welcome["email_replies"]) == (False, False, True)
    _, reply, _ = await ask(widget, QUESTION, "q1")
    assert reply["decision"] == "answered"

    # "Talk to a person" on an answered reply.
    await widget.send_json_to({"type": "handoff"})
    status = await next_frame(widget, "status")
    assert (status["status"], status["person_requested"]) == ("referred", True)
    assert status["availability"]["message"] == (
        "Nobody is online right now; a person will answer here as soon as someone is back."
    )
    referral = await Referral.objects.aget()
    assert (referral.reason_code, referral.status) == (HandoffReason.CUSTOMER_ASKED, ReferralStatus.OPEN)

    # The customer goes on writing: stored, shown to staff, never answered by the assistant.
    await widget.send_json_to({"type": "message", "id": "q2", "text": QUESTION})
    assert (await next_frame(widget, "ack"))["id"] == "q2"
    assert not {"token", "reply", "queued"} & {f["type"] for f in await frames_within(widget, 4)}
    assert await Turn.objects.acount() == 1

    # The e-mail address: a bad one is refused by name, a good one is kept for staff replies.
    await widget.send_json_to({"type": "contact", "email": "jane@"})
    error = await next_frame(widget, "error")
    assert error["code"] == "bad_email" and "is not an e-mail address" in error["message"]
    await widget.send_json_to({"type": "contact", "email": "jane@example.com"})
    saved = await next_frame(widget, "contact")
    assert saved["saved"] is True and "jane@example.com" in saved["message"]
    conversation = await Conversation.objects.aget()
    assert conversation.contact_email == "jane@example.com"

    # Resolving leaves it waiting (the customer asked for a person); staff reply, then hand it back.
    sam = await get_user_model().objects.acreate_user("sam", is_staff=True)
    await sync_to_async(actions.resolve)(conversation, sam)
    conversation = await Conversation.objects.aget()
    assert (conversation.status, conversation.person_requested) == (ConversationStatus.REFERRED, True)
    await sync_to_async(actions.send_staff_reply)(conversation, sam, "It's open 9 to 5 on weekdays.")
    await sync_to_async(actions.hand_back)(conversation, sam)
    conversation = await Conversation.objects.aget()
    assert (conversation.status, conversation.person_requested) == (ConversationStatus.OPEN, False)
    assert await Referral.objects.filter(status=ReferralStatus.RESOLVED).acount() == 1
    assert [a.kind async for a in StaffAction.objects.order_by("pk")] == ["resolve", "reply", "hand_back"]
    back = await next_frame(widget, "status")
    while back["status"] != "open" or back["person_requested"]:
        back = await next_frame(widget, "status")

    # The assistant answers again: the new question, not the one the staff reply answered.
    _, answer, _ = await ask(widget, QUESTION, "q3")
    assert answer["id"] == "q3" and answer["decision"] == "answered"
    assert not await Turn.objects.filter(customer_message__client_id="q2").aexists()
    await widget.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_reconnect_after_asking_for_a_person_does_not_answer_what_waits(small_helpcentre):
    conversation = await Conversation.objects.acreate(
        collection=small_helpcentre, status=ConversationStatus.REFERRED, person_requested=True
    )
    await Message.objects.acreate(conversation=conversation, role="customer", text=QUESTION, client_id="waiting")
    token = await sync_to_async(session.issue_token)(conversation)
    widget: WebsocketCommunicator = await open_chat()
    welcome = await hello(widget, token)
    assert welcome["person_requested"] is True
    assert await frames_within(widget, 4) == []
    assert await Turn.objects.acount() == 0
    await widget.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_without_smtp_no_address_is_asked_for_or_taken(small_helpcentre, settings):
    settings.EMAIL_REPLIES = False
    widget = await open_chat()
    assert (await hello(widget))["email_replies"] is False
    await widget.send_json_to({"type": "contact", "email": "jane@example.com"})
    error = await next_frame(widget, "error")
    assert error["code"] == "email_unavailable"
    assert await Conversation.objects.acount() == 0
    await widget.disconnect()


@pytest.mark.django_db
def test_inside_business_hours_with_someone_online_the_widget_is_told_a_person_is_there(helpcentre, settings):
    sam = get_user_model().objects.create_user("sam", is_staff=True)
    StaffPresence.objects.create(user=sam, status=PresenceStatus.ONLINE, seen_at=timezone.now())
    hours = BusinessHours.objects.create(collection=helpcentre, time_zone="UTC")
    for weekday in range(7):
        OpeningPeriod.objects.create(hours=hours, weekday=weekday, opens=time(0), closes=time(23, 59, 59))
    conversation = Conversation.objects.create(collection=helpcentre)
    assert session.welcome_frame(conversation, 0)["availability"]["available"] is True


@pytest.mark.django_db
def test_hand_back_is_a_staff_button_and_a_post_for_staff_only(helpcentre):
    conversation = Conversation.objects.create(
        collection=helpcentre, status=ConversationStatus.REFERRED, person_requested=True
    )
    question = Message.objects.create(conversation=conversation, role="customer", text="A person please")
    turn = Turn.objects.create(conversation=conversation, customer_message=question)
    Referral.objects.create(
        turn=turn, conversation=conversation, reason_code=HandoffReason.CUSTOMER_ASKED, reason="asked"
    )
    url = f"/staff/conversations/{conversation.public_id}/hand-back"
    customer = Client()
    customer.force_login(get_user_model().objects.create_user("pat"))
    assert customer.post(url).status_code == 302  # to the staff sign-in
    assert Conversation.objects.get().person_requested is True

    staff = Client()
    staff.force_login(get_user_model().objects.create_user("sam", is_staff=True))
    page = staff.get("/staff/queue").content.decode()
    assert 'data-role="hand-back"' in page and "Hand back to the assistant" in page
    assert "The customer asked for a person" in page
    assert staff.post(url).status_code == 302
    conversation.refresh_from_db()
    assert (conversation.status, conversation.person_requested) == (ConversationStatus.OPEN, False)
    assert Referral.objects.get().status == ReferralStatus.RESOLVED
    again = staff.post(url, HTTP_ACCEPT="application/json")
    assert again.status_code == 400 and again.json()["error"] == "not_waiting"
