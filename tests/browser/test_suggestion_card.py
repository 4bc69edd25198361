"""A suggestion in a real browser: the card (the quoted sections under their linked headings, a procedure's
steps one a line) with "Did this answer your question?"; No hands the question to a person (the referral says
so, the staff queue shows it) and Yes counts on the analytics page. Both answers still show after a reload.

The suggestion is stored with the ORM, not decided by a real turn: what the widget and the server do with a
suggestion should not depend on which questions today's decision cuts happen to suggest for. Screenshots in
var/test-artifacts/ (suggestion-card.png, suggestion-handoff.png, suggestion-queue.png)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from answering.outcome import Decision, HandoffReason
from conversations.chat import events, session
from conversations.models import Conversation, Referral, Turn, TurnFeedback
from knowledge.models import Collection
from tests.browser.conftest import STAFF_PASSWORD
from tests.browser.test_insights_pages import signed_in
from tests.browser.test_queue_presence import in_own_thread
from tests.conversations.suggestion_helpers import SECTION_URL, STEPS_URL, suggested_turn

# What the test stores is written in a thread of its own and committed (in_own_thread), so the server's
# threads see it; the test's own connection only reads.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("served_helpcentre")]

QUESTION = "How long can I wait before sending a lamp back?"
OTHER_QUESTION = "Can I return a rug I have already unrolled?"
LEAD = "This part of our help centre looks like what you're asking about:"


@pytest.fixture
def phone(browser) -> Iterator[Page]:
    """A phone, where the panel fills the screen: the whole card fits in the screenshots."""
    context = browser.new_context(viewport={"width": 430, "height": 932}, is_mobile=True, has_touch=True)
    yield context.new_page()
    context.close()


@pytest.fixture
def email_replies(settings) -> None:
    """Replies by e-mail are offered, so a hand-off with nobody online asks for an address."""
    settings.EMAIL_REPLIES = True


def new_conversation() -> tuple[int, str]:
    conversation = Conversation.objects.create(collection=Collection.objects.get(name="helpcentre"))
    return conversation.pk, session.issue_token(conversation)


def suggest_live(conversation_id: int, question: str, client_id: str) -> int:
    """The customer's question and the suggestion in reply, stored and sent to the open widget as the turn's
    worker sends them (conversations/chat/session.py answer_in_worker)."""
    conversation = Conversation.objects.get(pk=conversation_id)
    turn = suggested_turn(conversation, question, client_id=client_id)
    events.to_customer(conversation, session.message_frame(turn.customer_message))
    events.to_customer(conversation, session.reply_frame(turn))
    assert turn.reply_message_id is not None
    return turn.reply_message_id


def open_chat_by_link(page: Page, live_url: str, token: str) -> None:
    """The chat opened the way an e-mailed link opens it: the page's widget resumes that conversation."""
    page.goto(f"{live_url}/?supportbot_chat={token}")
    # The availability banner is set up by the welcome: the widget has joined the conversation.
    expect(page.locator("[data-role=presence]")).to_have_count(1)


def eventually(condition: Callable[[], Any], within_s: float = 10) -> Any:
    """The server stores what the widget sends a moment after the click."""
    deadline = time.monotonic() + within_s
    while not (found := condition()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found, "the server did not store it in time"
    return found


def test_no_under_a_suggestion_hands_the_question_to_a_person(phone, live_url, artifacts, browser, email_replies):
    page = phone
    conversation_id, token = in_own_thread(new_conversation)
    open_chat_by_link(page, live_url, token)
    seq = in_own_thread(lambda: suggest_live(conversation_id, QUESTION, "q-live"))

    card = page.locator(f"[data-role=assistant][data-seq='{seq}']")
    expect(card).to_have_attribute("data-decision", "suggested")
    expect(card).to_have_class("bubble assistant suggestion")
    expect(card.locator(".lead")).to_have_text(LEAD)
    sections = card.locator("[data-role=unit-section]")
    expect(sections).to_have_text(["Returns › Return window", "Returns › How to start a return"])
    expect(sections.nth(0)).to_have_attribute("href", f"{live_url}{SECTION_URL}")
    expect(sections.nth(1)).to_have_attribute("href", f"{live_url}{STEPS_URL}")
    expect(sections.nth(0)).to_have_attribute("target", "_blank")
    quotes = card.locator("[data-role=unit-text]")
    expect(quotes.nth(0)).to_have_text("Oak Circle members have 60 days. [1]")
    expect(quotes.nth(0).locator("a.ref")).to_have_attribute("href", f"{live_url}{SECTION_URL}")
    # The procedure's steps keep their lines.
    assert quotes.nth(1).inner_text().splitlines() == [
        "1. Sign in at lumenoak.example and go to Orders. [2]",
        "2. Choose the order and select Return items. [2]",
        "3. Pick the items and a reason for each one. [2]",
    ]
    expect(card.locator("[data-role=suggestion-ask]")).to_have_text("Did this answer your question?")
    expect(card.locator("[data-role=thumb-up]")).to_have_count(0)  # Yes and No instead of the thumbs
    expect(card.locator("[data-role=talk-to-person]")).to_have_count(0)
    # A card, not an answer's bubble: bordered, on white.
    assert card.evaluate("(node) => getComputedStyle(node).borderTopWidth") == "2px"
    assert card.evaluate("(node) => getComputedStyle(node).backgroundColor") == "rgb(255, 255, 255)"
    card.evaluate("(node) => node.scrollIntoView({block: 'start'})")
    page.screenshot(path=artifacts / "suggestion-card.png")

    card.locator("[data-role=suggestion-no]").click()
    expect(card.locator("[data-role=suggestion-no]")).to_have_attribute("aria-pressed", "true")
    expect(card.locator("[data-role=feedback-said]")).to_have_text(
        "Thanks for letting us know; we've asked a person to help."
    )
    expect(page.locator("[data-role=notice]", has_text="the assistant won't answer")).to_be_visible()
    form = page.locator("[data-role=contact-form]")  # nobody is online: the usual address form
    expect(form).to_contain_text("Nobody is online right now")
    page.screenshot(path=artifacts / "suggestion-handoff.png")

    referral = eventually(lambda: Referral.objects.filter(turn__reply_message_id=seq).first())
    assert referral.reason_code == HandoffReason.SUGGESTION_DECLINED
    assert referral.reason == f"the suggested section did not answer: “{QUESTION}”"
    assert eventually(lambda: TurnFeedback.objects.filter(turn__reply_message_id=seq, rating="down").exists())
    assert Conversation.objects.get(pk=conversation_id).person_requested is True

    queue = signed_in(browser, f"{live_url}/staff/queue", "sam", STAFF_PASSWORD)
    waiting = queue.locator("[data-role=card]", has_text=QUESTION)
    expect(waiting.locator("[data-role=reason-code]")).to_have_text("Suggestion did not answer")
    expect(waiting.locator("[data-role=referral]")).to_contain_text(
        f"the suggested section did not answer: “{QUESTION}”"
    )
    expect(waiting.locator("[data-role=suggested] a").first).to_have_text("Returns › Return window")
    queue.screenshot(path=artifacts / "suggestion-queue.png", full_page=True)
    queue.context.close()

    # After a reload the card is built again from the history, the No still chosen.
    page.reload()
    page.locator("[data-role=launcher]").click()
    again = page.locator(f"[data-role=assistant][data-seq='{seq}']")
    expect(again).to_have_attribute("data-decision", "suggested")
    expect(again.locator("[data-role=unit-section]")).to_have_count(2)
    expect(again.locator("[data-role=suggestion-no]")).to_have_attribute("aria-pressed", "true")
    expect(again.locator("[data-role=suggestion-yes]")).to_have_attribute("aria-pressed", "false")
    expect(again.locator("[data-role=feedback-said]")).to_contain_text("we've asked a person to help")


def stored_suggestion() -> tuple[int, str]:
    conversation = Conversation.objects.create(collection=Collection.objects.get(name="helpcentre"))
    turn = suggested_turn(conversation, OTHER_QUESTION, client_id="q-stored")
    assert turn.reply_message_id is not None
    return turn.reply_message_id, session.issue_token(conversation)


def test_yes_under_a_suggestion_counts_as_resolved_on_the_analytics_page(page, live_url, browser):
    seq, token = in_own_thread(stored_suggestion)
    open_chat_by_link(page, live_url, token)
    card = page.locator(f"[data-role=assistant][data-seq='{seq}']")  # from the welcome's history
    expect(card).to_have_attribute("data-decision", "suggested")
    card.locator("[data-role=suggestion-yes]").click()
    expect(card.locator("[data-role=suggestion-yes]")).to_have_attribute("aria-pressed", "true")
    expect(card.locator("[data-role=feedback-said]")).to_have_text("Glad that helped. Thanks for letting us know.")
    assert eventually(lambda: TurnFeedback.objects.filter(turn__reply_message_id=seq, rating="up").exists())
    expect(page.locator("[data-role=contact-form]")).to_have_count(0)
    assert Referral.objects.filter(turn__reply_message_id=seq).count() == 0

    page.reload()
    page.locator("[data-role=launcher]").click()
    expect(page.locator(f"[data-role=assistant][data-seq='{seq}'] [data-role=suggestion-yes]")).to_have_attribute(
        "aria-pressed", "true"
    )

    # The page's totals: every suggestion stored so far in this module (the other test's No among them when
    # it ran first), and the share answered Yes.
    count, yes = in_own_thread(suggestions_and_yes)
    analytics = signed_in(browser, f"{live_url}/staff/analytics", "sam", STAFF_PASSWORD)
    headings = analytics.locator("[data-role=days] thead th").all_text_contents()[1:]
    totals = analytics.locator("[data-role=totals] td").all_text_contents()
    shown = dict(zip(headings, totals, strict=True))
    assert yes >= 1 and shown["Suggestions"] == str(count)
    assert shown["Suggestion: yes"] == f"{yes / count:.1%}"
    assert shown["Suggested"] not in ("0.0%", "—")
    analytics.context.close()


def suggestions_and_yes() -> tuple[int, int]:
    suggestions = Turn.objects.filter(decision=Decision.SUGGESTED, conversation__from_lab=False)
    return suggestions.count(), suggestions.filter(feedback__rating="up").count()
