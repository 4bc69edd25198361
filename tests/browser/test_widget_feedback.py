"""Thumbs on a reply in a real browser: a thumbs down with a reason, still pressed after a reload, then
changed to a thumbs up; what the server stored at each step. Screenshots go to var/test-artifacts/."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from conversations.models import TurnFeedback
from tests.browser.test_widget import REFUND_QUESTION, TURN_TIMEOUT_MS, ask, open_widget

# answers_when_relevant: these test what the widget does with an answer, not where the answer cut sits.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("served_helpcentre", "answers_when_relevant")]


def test_a_thumbs_down_with_a_reason_stays_pressed_after_a_reload_and_changes_to_up(page, live_url, artifacts):
    open_widget(page, live_url)
    ask(page, REFUND_QUESTION)
    answer = page.locator("[data-role=assistant][data-decision=answered]")
    expect(answer).to_contain_text("5 to 10 business days", timeout=TURN_TIMEOUT_MS)
    up, down = answer.locator("[data-role=thumb-up]"), answer.locator("[data-role=thumb-down]")
    expect(up).to_have_attribute("aria-pressed", "false")
    expect(down).to_have_attribute("aria-pressed", "false")
    seq = int(answer.get_attribute("data-seq") or 0)

    down.click()
    expect(down).to_have_attribute("aria-pressed", "true")
    reason = answer.locator("[data-role=feedback-reason]")
    expect(reason).to_be_focused()
    expect(reason).to_have_attribute("maxlength", "300")
    reason.fill("It doesn't say when PayPal refunds arrive.")
    page.screenshot(path=artifacts / "widget-feedback-reason.png")
    answer.locator("[data-role=feedback-send]").click()
    expect(answer.locator("[data-role=feedback-said]")).to_have_text("Thanks, we'll use that to improve.")
    expect(answer.locator("[data-role=feedback-form]")).to_be_hidden()
    page.screenshot(path=artifacts / "widget-feedback.png")

    def stored() -> tuple[str, str]:
        feedback = TurnFeedback.objects.filter(turn__reply_message_id=seq).first()
        return (feedback.rating, feedback.reason) if feedback else ("", "")

    _wait_for(lambda: stored() == ("down", "It doesn't say when PayPal refunds arrive."), page)

    page.reload()
    page.locator("[data-role=launcher]").click()
    resumed = page.locator(f"[data-role=assistant][data-seq='{seq}']")
    expect(resumed).to_contain_text("5 to 10 business days")
    expect(resumed.locator("[data-role=thumb-down]")).to_have_attribute("aria-pressed", "true")
    expect(resumed.locator("[data-role=thumb-up]")).to_have_attribute("aria-pressed", "false")

    resumed.locator("[data-role=thumb-up]").click()
    expect(resumed.locator("[data-role=thumb-up]")).to_have_attribute("aria-pressed", "true")
    expect(resumed.locator("[data-role=thumb-down]")).to_have_attribute("aria-pressed", "false")
    _wait_for(lambda: stored() == ("up", ""), page)
    assert TurnFeedback.objects.filter(turn__reply_message_id=seq).count() == 1
    page.screenshot(path=artifacts / "widget-feedback-changed.png")


def _wait_for(condition, page: Page, within_ms: int = 10_000) -> None:
    """The server stores a rating a moment after the click; poll the database the test shares with it."""
    for _ in range(within_ms // 100):
        if condition():
            return
        page.wait_for_timeout(100)
    assert condition(), "the server did not store the rating in time"
