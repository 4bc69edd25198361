"""Staff replies by e-mail through a real SMTP server on loopback (aiosmtpd): what the customer receives, the
link back that resumes their chat and nobody else's, and a refused send that loses nothing."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from conversations.chat import session
from conversations.handoff import actions, notifications
from conversations.models import Conversation, ConversationStatus, Message, Referral, Turn
from tests.loopback import free_port
from tests.mailbox import GREYLISTED, REFUSED, Mailbox, smtp_server

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def smtp(settings) -> Iterator[Mailbox]:
    with smtp_server(settings) as mailbox:
        yield mailbox


def waiting_for_a_person(helpcentre: Any, contact_email: str) -> Conversation:
    conversation = Conversation.objects.create(
        collection=helpcentre, status=ConversationStatus.REFERRED, person_requested=True, contact_email=contact_email
    )
    question = Message.objects.create(conversation=conversation, role="customer", text="Where is my parcel?")
    turn = Turn.objects.create(conversation=conversation, customer_message=question)
    Referral.objects.create(turn=turn, conversation=conversation, reason_code="customer_asked", reason="asked")
    return conversation


def link_token(body: str) -> str:
    match = re.search(r"https://support\.shop\.example/help/\?\S+", body)
    assert match, body
    return parse_qs(urlsplit(match.group(0)).query)[notifications.LINK_PARAMETER][0]


def test_a_staff_reply_is_mailed_with_a_link_that_resumes_this_chat_only(helpcentre, smtp):
    conversation = waiting_for_a_person(helpcentre, "jane@example.com")
    other = waiting_for_a_person(helpcentre, "")
    sam = get_user_model().objects.create_user("sam", first_name="Sam", is_staff=True)

    actions.send_staff_reply(conversation, sam, "Your parcel left our warehouse this morning.")
    [mail] = smtp.wait_for(1)
    assert mail["To"] == "jane@example.com"
    assert mail["From"] == "Support <support@shop.example>"
    assert mail["Subject"] == "A reply from our support team"
    body = mail.get_payload(decode=True).decode()
    assert "Sam from our support team replied" in body
    assert "Your parcel left our warehouse this morning." in body
    assert "The link works for 7 days." in body

    token = link_token(body)
    resumed, refused = session.resume_or_start(token)
    assert resumed.pk == conversation.pk and refused == []
    # A link altered to name another conversation is not signed by us: a new chat starts, nothing is shown.
    forged, refused = session.resume_or_start(token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB"))
    assert forged.pk is None and [e.code for e in refused] == ["session_expired"]

    # A conversation without an address gets no e-mail.
    actions.send_staff_reply(other, sam, "Nobody mails this one.")
    time.sleep(1)
    assert len(smtp.received) == 1


def test_an_expired_link_resumes_nothing(helpcentre, smtp, settings):
    conversation = waiting_for_a_person(helpcentre, "jane@example.com")
    actions.send_staff_reply(conversation, get_user_model().objects.create_user("sam", is_staff=True), "Hello.")
    token = link_token(smtp.wait_for(1)[0].get_payload(decode=True).decode())
    settings.CHAT_SESSION_MAX_AGE_S = 0
    time.sleep(1.1)
    resumed, refused = session.resume_or_start(token)
    assert resumed.pk is None and [e.code for e in refused] == ["session_expired"]


def test_a_refused_send_is_logged_masked_shown_on_the_card_and_the_reply_kept(helpcentre, smtp, caplog):
    conversation = waiting_for_a_person(helpcentre, REFUSED)
    sam = get_user_model().objects.create_user("sam", is_staff=True)
    staff = Client()
    staff.force_login(sam)

    response = staff.post(f"/staff/conversations/{conversation.public_id}/reply", {"text": "We are looking into it."})
    assert response.status_code == 302
    message = Message.objects.get(role="staff")
    assert message.text == "We are looking into it."  # stored, and shown in the widget, whatever SMTP says
    deadline = time.monotonic() + 15
    while not notifications.failed_replies(conversation) and time.monotonic() < deadline:
        time.sleep(0.05)
    [reason] = notifications.failed_replies(conversation).values()
    assert "SMTPRecipientsRefused" in reason and "r***@example.com" in reason and REFUSED not in reason
    logged = [r.getMessage() for r in caplog.records if r.name == "conversations.handoff.notifications"]
    # Masked here, and again by the conversations loggers' personal-data filter.
    assert logged and "SMTPRecipientsRefused" in logged[0] and REFUSED not in " ".join(logged)
    assert smtp.received == []

    card = staff.get("/staff/queue").content.decode()
    assert 'data-role="email-failed"' in card and "did not go out" in card and REFUSED not in card
    # Refused for good (550): tried once, not again.
    assert [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()] == []


def test_a_greylisted_send_is_tried_again_and_goes(helpcentre, smtp, caplog, monkeypatch):
    monkeypatch.setattr(notifications, "RETRY_PAUSES_S", (0.2, 0.2))
    conversation = waiting_for_a_person(helpcentre, GREYLISTED)
    actions.send_staff_reply(conversation, get_user_model().objects.create_user("sam", is_staff=True), "On its way.")
    [mail] = smtp.wait_for(1)
    assert mail["To"] == GREYLISTED and smtp.greylisted_once
    assert any("451" in r.getMessage() and "trying again" in r.getMessage() for r in caplog.records)
    assert notifications.failed_replies(conversation) == {}


def test_a_send_that_keeps_failing_is_stored_on_the_message_and_cleared_by_a_later_success(
    helpcentre, settings, monkeypatch, caplog
):
    conversation = waiting_for_a_person(helpcentre, "jane@example.com")
    sam = get_user_model().objects.create_user("sam", is_staff=True)
    message = Message.objects.create(conversation=conversation, role="staff", text="Hello.", author=sam)
    email = notifications.reply_email(message, token="t", author="Sam")
    # Nothing listens on this port: a refused connection is temporary, so it is tried 1 + 2 times.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 2
    monkeypatch.setattr(notifications, "RETRY_PAUSES_S", (0.0, 0.0))
    assert notifications.send(email) is False
    assert sum("trying again" in r.getMessage() for r in caplog.records) == 2
    [reason] = notifications.failed_replies(conversation).values()
    assert "ConnectionRefusedError" in reason
    message.refresh_from_db()
    assert message.email_error == reason  # in the database, so every server process's card shows it

    with smtp_server(settings) as mailbox:
        assert notifications.send(email) is True
        assert len(mailbox.wait_for(1)) == 1
    assert notifications.failed_replies(conversation) == {}
