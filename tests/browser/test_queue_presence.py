"""A staff member in the hand-off queue in a real browser: going online, being assigned a hand-off, the
mine / unassigned / all filter, staying online across a reload, and away once the page closes. Screenshot in
var/test-artifacts/queue-assignment.png."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from django.db import connection
from playwright.sync_api import expect

from answering.outcome import Decision, HandoffReason
from conversations.handoff.assignment import assign
from conversations.models import Conversation, ConversationStatus, Message, Referral, Role, StaffPresence, Turn
from knowledge.models import Collection
from tests.browser.conftest import STAFF_PASSWORD

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("served_helpcentre")]

T = TypeVar("T")


def eventually(check: Callable[[], bool], within_s: float = 15) -> None:
    """The server acts on the page's frames in its own threads: wait for what it stores."""
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "the server did not store it in time"
        time.sleep(0.1)


def presence_is(status: str, sockets: int) -> Callable[[], bool]:
    def check() -> bool:
        row = StaffPresence.objects.filter(user__username="sam").first()
        return row is not None and (row.status, row.open_sockets) == (status, sockets)

    return check


def referred_conversation() -> Conversation:
    conversation = Conversation.objects.create(
        collection=Collection.objects.get(name="helpcentre"), status=ConversationStatus.REFERRED
    )
    question = Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text="Can I pay by cheque?")
    turn = Turn.objects.create(conversation=conversation, customer_message=question, decision=Decision.REFERRED)
    Referral.objects.create(
        turn=turn, conversation=conversation, reason_code=HandoffReason.UNSUPPORTED_CLAIM, reason="a claim was cut"
    )
    assign(conversation)
    return conversation


def in_own_thread(work: Callable[[], T]) -> T:
    """Run ``work`` on a connection of its own, committed as it goes, as the server would: the test's own
    connection is inside the test's transaction (the server would wait on its lock and never see its
    writes), and its thread holds Playwright's event loop, where the channel layer cannot be called."""
    done: list[T] = []

    def run() -> None:
        try:
            done.append(work())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert done, "the work failed in its thread (see the captured log)"
    return done[0]


def test_staff_go_online_are_assigned_a_hand_off_and_are_away_when_the_page_closes(browser, live_url, artifacts):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    queue = context.new_page()
    queue.goto(f"{live_url}/staff/queue")
    queue.locator("#id_username").fill("sam")
    queue.locator("#id_password").fill(STAFF_PASSWORD)
    queue.locator("button[type=submit]").click()
    expect(queue.locator("[data-role=queue-status]")).to_have_text("Live updates: on")
    online = queue.locator("[data-role=presence-online]")
    expect(queue.locator("[data-role=presence-away]")).to_be_checked()
    online.check()
    eventually(presence_is("online", 1))

    conversation = in_own_thread(referred_conversation)
    card = queue.locator(f'[data-role=card][data-conversation="{conversation.public_id}"]')
    expect(card.locator("[data-role=assignee]")).to_contain_text("Assigned to you")
    expect(card.locator("[data-role=reason-code]")).to_have_text("Unsupported claim cut")
    queue.locator("input[name=show][value=unassigned]").check()
    expect(card).to_be_hidden()
    queue.locator("input[name=show][value=mine]").check()
    expect(card).to_be_visible()
    queue.screenshot(path=artifacts / "queue-assignment.png", full_page=True)

    queue.reload()  # the tab says "online" again on reconnecting
    expect(queue.locator("[data-role=queue-status]")).to_have_text("Live updates: on")
    expect(online).to_be_checked()
    eventually(presence_is("online", 1))

    conversation.refresh_from_db()
    assert conversation.assignee is not None and conversation.assignee.get_username() == "sam"

    context.close()  # the last queue page closed: away, and nobody else is online to take it
    eventually(presence_is("away", 0))
    conversation.refresh_from_db()
    assert conversation.assignee is None
