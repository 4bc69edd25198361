"""The three users in a real browser: a customer in the widget on the demo page, a staff member in the
hand-off queue. Screenshots go to var/test-artifacts/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from conversations.chat import session
from conversations.models import Referral, StaffAction
from tests.answering.fakes import claude_says, services
from tests.browser.conftest import STAFF_PASSWORD

# The marker has pytest-django create the test database; the data the server needs is committed by the
# module's fixture, outside any test's transaction, so the server's own connections see it.
# answers_when_relevant: these test what the widget does with an answer, not where the answer cut sits.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("served_helpcentre", "answers_when_relevant")]

REFUND_QUESTION = "How long will my refund take to show on my card?"
TURN_TIMEOUT_MS = 90_000  # the server's first turn loads the models


def open_widget(page: Page, live_url: str, path: str = "/") -> None:
    page.goto(f"{live_url}{path}")
    page.locator("[data-role=launcher]").click()
    expect(page.locator("[data-role=input]")).to_be_focused()


def ask(page: Page, text: str) -> None:
    page.locator("[data-role=input]").fill(text)
    page.keyboard.press("Enter")


def test_a_customer_gets_the_answer_with_a_citation_to_the_section(page, live_url, artifacts):
    open_widget(page, live_url)
    ask(page, REFUND_QUESTION)
    answer = page.locator("[data-role=assistant][data-decision=answered]")
    expect(answer).to_contain_text("5 to 10 business days", timeout=TURN_TIMEOUT_MS)
    link = answer.locator("[data-role=citations] a", has_text="When the money arrives").first
    expect(link).to_have_attribute("href", f"{live_url}/help/refunds#when-the-money-arrives")
    page.screenshot(path=artifacts / "widget-answer.png")

    page.goto(link.get_attribute("href"))
    section = page.locator("#when-the-money-arrives")
    expect(section).to_have_text("When the money arrives")
    expect(page.locator("main")).to_contain_text("5 to 10 business days")


def test_on_a_phone_the_panel_fills_the_screen_and_works_by_keyboard(browser, live_url, artifacts):
    context = browser.new_context(viewport={"width": 375, "height": 667}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(f"{live_url}/")
    launcher = page.locator("[data-role=launcher]")
    launcher.focus()
    page.keyboard.press("Enter")
    panel = page.locator("[data-role=panel]")
    expect(panel).to_be_visible()
    box = panel.bounding_box()
    assert box is not None and box["width"] >= 370, box
    expect(page.locator("[data-role=input]")).to_be_focused()
    page.screenshot(path=artifacts / "widget-phone.png")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(launcher).to_be_focused()
    expect(launcher).to_have_attribute("aria-expanded", "false")
    context.close()


def test_an_unanswerable_question_says_so_and_offers_a_person(page, live_url, artifacts):
    open_widget(page, live_url)
    ask(page, "do you sell gift wrapping in Mars colonies?")
    reply = page.locator("[data-role=assistant][data-decision=abstained]")
    expect(reply).to_contain_text("I don't have that information", timeout=TURN_TIMEOUT_MS)
    page.locator("[data-role=handoff]").click()
    expect(page.locator("[data-role=notice]", has_text="A person will follow up here.")).to_be_visible()
    page.screenshot(path=artifacts / "widget-abstained.png")
    referral = Referral.objects.select_related("turn__customer_message").get(
        turn__customer_message__text__contains="Mars colonies"
    )
    assert referral.reason == "the customer asked for a person"


def test_staff_edit_a_referred_reply_and_it_appears_in_the_open_widget(
    browser, page, live_url, artifacts, embedder, monkeypatch
):
    # Claude (real SDK, HTTP faked) states a figure the articles do not: the turn is referred.
    api = claude_says("Refunds reach your card within 2 hours [1].")
    monkeypatch.setattr(session, "turn_services", lambda: services(embedder, api=api))

    staff_context = browser.new_context(viewport={"width": 1280, "height": 1000})
    queue = staff_context.new_page()
    queue.goto(f"{live_url}/staff/queue")
    queue.locator("#id_username").fill("sam")
    queue.locator("#id_password").fill(STAFF_PASSWORD)
    queue.locator("button[type=submit]").click()
    expect(queue.locator("[data-role=queue-status]")).to_have_text("Live updates: on")
    queue.evaluate("window.stillTheSamePage = true")

    open_widget(page, live_url)
    ask(page, REFUND_QUESTION)
    expect(page.locator("[data-role=assistant][data-decision=referred]")).to_be_visible(timeout=TURN_TIMEOUT_MS)
    expect(page.locator("[data-role=notice]", has_text="A person will follow up here.")).to_be_visible()

    card = queue.locator("[data-role=card]", has_text=REFUND_QUESTION)
    expect(card).to_be_visible()
    expect(card.locator("[data-role=claims]")).to_contain_text("Unsupported")
    reply_box = card.locator("[data-role=reply-text]")
    expect(reply_box).to_have_value("Refunds reach your card within 2 hours [1].")
    queue.screenshot(path=artifacts / "queue-referral.png", full_page=True)
    reply_box.fill("Refunds show on your card 5 to 10 business days after we approve them.")
    card.locator("[data-role=send-reply]").click()

    staff_reply = page.locator("[data-role=staff]")
    expect(staff_reply).to_contain_text("5 to 10 business days after we approve them")
    expect(staff_reply).to_contain_text("Sam")
    page.screenshot(path=artifacts / "widget-staff-reply.png")
    assert queue.evaluate("window.stillTheSamePage") is True
    expect(card.locator("[data-role=transcript]")).to_contain_text("after we approve them")
    queue.screenshot(path=artifacts / "queue-after-reply.png", full_page=True)
    action = StaffAction.objects.get(message__text__contains="after we approve them")
    assert (action.username, action.kind) == ("sam", "reply")
    staff_context.close()


def test_a_signed_in_customer_sees_their_order_and_another_customer_does_not(browser, page, live_url, artifacts):
    open_widget(page, live_url, "/?as=c-1001")
    ask(page, "Where is my order 1042?")
    answer = page.locator("[data-role=assistant][data-decision=answered]")
    expect(answer).to_contain_text("Order #1042 was delivered on 20 November 2026", timeout=TURN_TIMEOUT_MS)
    expect(answer.locator("[data-role=citations]")).to_contain_text("Order #1042")
    page.screenshot(path=artifacts / "widget-order.png")

    other = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    open_widget(other, live_url, "/?as=c-2002")
    ask(other, "Where is my order 1042?")
    reply = other.locator("[data-role=assistant][data-decision]")
    expect(reply).to_contain_text("I can't find order #1042 on your account", timeout=TURN_TIMEOUT_MS)
    expect(reply).not_to_contain_text("Parcelforce")
    other.context.close()


ABUSE = """async (url) => {
  const frames = [];
  const socket = new WebSocket(url);
  socket.onmessage = (event) => frames.push(JSON.parse(event.data));
  await new Promise((resolve) => { socket.onopen = resolve; });
  socket.send(JSON.stringify({type: "hello", token: null, after: 0}));
  socket.send("{this is not json");
  socket.send(JSON.stringify({type: "message", id: "huge", text: "x".repeat(50000)}));
  for (let n = 0; n < 12; n++) socket.send(JSON.stringify({type: "message", id: "flood-" + n, text: "flood " + n}));
  await new Promise((resolve) => setTimeout(resolve, 1500));
  return {frames, open: socket.readyState === WebSocket.OPEN};
}"""


def test_garbage_oversized_and_flooding_frames_get_clear_errors_and_the_chat_keeps_working(page, live_url):
    open_widget(page, live_url)
    result = page.evaluate(ABUSE, re.sub("^http", "ws", live_url) + "/ws/chat/")
    errors = {f["code"]: f["message"] for f in result["frames"] if f["type"] == "error"}
    assert result["open"], "the server closed the connection"
    assert "not valid JSON" in errors["bad_json"]
    assert "limit is" in errors["too_large"]
    assert "too fast" in errors["rate_limited"]
    acks = [f["id"] for f in result["frames"] if f["type"] == "ack"]
    assert acks == [f"flood-{n}" for n in range(5)]

    ask(page, REFUND_QUESTION)
    expect(page.locator("[data-role=assistant][data-decision=answered]")).to_contain_text(
        "5 to 10 business days", timeout=TURN_TIMEOUT_MS
    )
