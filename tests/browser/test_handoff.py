"""Reaching a person from the widget in a real browser: the banner when nobody can answer, the e-mail
address asked for and checked, "Talk to a person" on an answered reply silencing the assistant until staff
hand the chat back, and the e-mailed reply (through a real SMTP server on loopback) whose link reopens it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import time as clock
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from django.utils import timezone
from playwright.sync_api import Page, expect

from conversations.handoff import actions, availability, notifications
from conversations.models import (
    BusinessHours,
    ClosedDay,
    Conversation,
    OpeningPeriod,
    PresenceStatus,
    StaffPresence,
    Turn,
)
from knowledge.models import Collection
from tests.browser.test_widget import REFUND_QUESTION, TURN_TIMEOUT_MS, ask, open_widget
from tests.mailbox import Mailbox, smtp_server

# No database marker: the module's committed help centre is what the server's threads see, and so must be
# what these tests add (they remove it again).
# answers_when_relevant: these test the hand-off after an answer, not where the answer cut sits.
pytestmark = pytest.mark.usefixtures("served_helpcentre", "answers_when_relevant")

SECOND_QUESTION = "Can I also return the box it came in?"


@pytest.fixture
def page(browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


@pytest.fixture
def closed_today(served_helpcentre) -> Iterator[availability.Availability]:
    """Weekday hours in Berlin, and today closed there: whenever the test runs, nobody is available."""
    collection = Collection.objects.get(name="helpcentre")
    hours = BusinessHours.objects.create(collection=collection, time_zone="Europe/Berlin")
    for weekday in range(5):
        OpeningPeriod.objects.create(hours=hours, weekday=weekday, opens=clock(9), closes=clock(17))
    today = timezone.now().astimezone(ZoneInfo("Europe/Berlin")).date()
    ClosedDay.objects.create(hours=hours, date=today, note="test")
    yield availability.for_collection(collection)
    hours.delete()


@pytest.fixture
def someone_online(served_helpcentre) -> Iterator[None]:
    presence = StaffPresence.objects.create(
        user=get_user_model().objects.get(username="sam"), status=PresenceStatus.ONLINE, seen_at=timezone.now()
    )
    yield
    presence.delete()


@pytest.fixture
def smtp(settings, live_url) -> Iterator[Mailbox]:
    with smtp_server(settings, public_url=live_url) as mailbox:
        yield mailbox


def as_staff(action: Callable[..., object], *args: object) -> None:
    """A staff action, from another thread: it tells the widget through async_to_sync, which refuses to run
    in this one, where Playwright keeps an event loop."""

    def run() -> None:
        try:
            action(*args)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(run).result()


def stored_request(question: str) -> Conversation:
    """The conversation once the server has stored the customer's request for a person (the widget shows its
    notice as soon as the button is clicked)."""
    deadline = time.monotonic() + 15
    while True:
        found = Conversation.objects.filter(messages__text=question, person_requested=True).first()
        if found is not None or time.monotonic() > deadline:
            assert found is not None, "the request for a person was not stored"
            return found
        time.sleep(0.1)


def quiet_for(page: Page, seconds: float) -> None:
    """Nothing new from the assistant for a while (it answers a question in under a second once warm)."""
    time.sleep(seconds)
    expect(page.locator("[data-role=assistant][aria-busy=true]")).to_have_count(0)


def test_nobody_available_the_widget_says_when_asks_an_address_and_the_reply_comes_by_email(
    browser, page, live_url, artifacts, closed_today, smtp
):
    assert closed_today.reason == availability.CLOSED_DAY and closed_today.back_at is not None
    assert re.fullmatch(
        r"We're closed today; a person will be back \w+day \d+ \w+ at 9:00 \(Europe/Berlin\)\.", closed_today.message
    )
    open_widget(page, live_url)
    ask(page, REFUND_QUESTION)
    answer = page.locator("[data-role=assistant][data-decision=answered]")
    expect(answer).to_contain_text("5 to 10 business days", timeout=TURN_TIMEOUT_MS)
    expect(page.locator("[data-role=presence]")).to_have_text(closed_today.message)

    answer.locator("[data-role=talk-to-person]").click()
    expect(page.locator("[data-role=notice]", has_text="the assistant won't answer")).to_be_visible()
    expect(page.locator("[data-role=talk-to-person]")).to_have_count(0)
    form = page.locator("[data-role=contact-form]")
    expect(form).to_contain_text(closed_today.message)
    conversation = stored_request(REFUND_QUESTION)

    # Checked in the browser first: nothing reaches the server.
    form.locator("[data-role=contact-email]").fill("jane@")
    form.locator("[data-role=contact-send]").click()
    expect(form.locator("[data-role=contact-problem]")).to_have_text(
        "That doesn't look like an e-mail address; it should look like name@example.com."
    )
    form.locator("[data-role=contact-email]").fill("jane@example.com")
    form.locator("[data-role=contact-send]").click()
    expect(page.locator("[data-role=notice]", has_text="We'll e-mail jane@example.com")).to_be_visible()
    page.screenshot(path=artifacts / "handoff-offline.png")
    conversation.refresh_from_db()
    assert conversation.contact_email == "jane@example.com"

    # The customer writes on; the assistant stays silent, staff see it.
    ask(page, SECOND_QUESTION)
    expect(page.locator("[data-role=customer][data-state=sent]", has_text=SECOND_QUESTION)).to_be_visible()
    quiet_for(page, 3)
    assert Turn.objects.filter(conversation=conversation).count() == 1
    expect(page.locator("[data-role=assistant]")).to_have_count(1)

    sam = get_user_model().objects.get(username="sam")
    as_staff(actions.send_staff_reply, conversation, sam, "Yes, the box can go back with the item.")
    expect(page.locator("[data-role=staff]")).to_contain_text("the box can go back")
    [mail] = smtp.wait_for(1)
    body = mail.get_payload(decode=True).decode()
    link = re.search(rf"{re.escape(live_url)}/help/\?{notifications.LINK_PARAMETER}=\S+", body)
    assert mail["To"] == "jane@example.com" and link, body

    # The link, opened elsewhere (the customer's mail on another device), reopens this chat.
    elsewhere = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    elsewhere.goto(link.group(0))
    expect(elsewhere.locator("[data-role=staff]")).to_contain_text("the box can go back")
    expect(elsewhere.locator("[data-role=customer]", has_text=REFUND_QUESTION)).to_be_visible()
    assert notifications.LINK_PARAMETER not in elsewhere.url
    elsewhere.screenshot(path=artifacts / "handoff-email-link.png")
    elsewhere.context.close()

    # Handed back: the assistant answers again.
    as_staff(actions.hand_back, conversation, sam)
    expect(page.locator("[data-role=notice]", has_text="The assistant is back.")).to_be_visible()
    ask(page, "How long will my refund take?")
    expect(page.locator("[data-role=assistant][data-decision]")).to_have_count(2, timeout=TURN_TIMEOUT_MS)


def test_talk_to_a_person_on_an_answered_reply_with_someone_online(page, live_url, artifacts, someone_online):
    open_widget(page, live_url)
    ask(page, REFUND_QUESTION)
    answer = page.locator("[data-role=assistant][data-decision=answered]")
    expect(answer).to_contain_text("5 to 10 business days", timeout=TURN_TIMEOUT_MS)
    expect(page.locator("[data-role=presence]")).to_be_hidden()  # a person is there: nothing to warn of
    answer.locator("[data-role=talk-to-person]").click()
    expect(page.locator("[data-role=notice]", has_text="A person will follow up here.")).to_be_visible()
    conversation = stored_request(REFUND_QUESTION)
    referral = conversation.referrals.get()
    assert referral.reason_code == "customer_asked"
    page.screenshot(path=artifacts / "handoff-talk-to-person.png")
    expect(page.locator("[data-role=contact-form]")).to_have_count(0)  # someone will answer here

    ask(page, SECOND_QUESTION)
    expect(page.locator("[data-role=customer][data-state=sent]", has_text=SECOND_QUESTION)).to_be_visible()
    quiet_for(page, 3)
    assert Turn.objects.filter(conversation=conversation).count() == 1
    assert conversation.messages.filter(text=SECOND_QUESTION, turn__isnull=True).exists()
    assert timezone.now() - conversation.updated_at < timedelta(minutes=5)
