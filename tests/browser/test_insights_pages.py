"""The staff's outcome analytics and the authors' content gaps in a real browser: the analytics page with its
totals, plots and CSV download (an evaluation's conversation left out), and the gap list with the clustering
run from the admin and a draft started from a gap. Screenshots in var/test-artifacts/ (analytics.png,
content-gaps.png)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import Browser, Page, expect

from answering.outcome import Decision
from conversations.models import FeedbackRating
from insights.models import ContentGap
from knowledge.models import Collection, VersionStatus
from tests.browser.conftest import STAFF_PASSWORD
from tests.browser.test_queue_presence import in_own_thread
from tests.insights.gap_helpers import GIFT_WRAP, SWITZERLAND, asked
from tests.insights.outcome_helpers import conversation, hand_off, turn

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("served_helpcentre")]

AUTHOR_PASSWORD = "another-long-test-password"


def known_outcomes() -> None:
    """Three days ago: three answered conversations (one thumbs up), one abstained, one referred; and one
    conversation of `evaluate answers`, which the page must not count."""
    helpcentre = Collection.objects.get(name="helpcentre")
    then = timezone.now() - timedelta(days=3)
    for n in range(3):
        turn(
            conversation(helpcentre, then), then, latency_ms=800 + 100 * n, rating=FeedbackRating.UP if n == 0 else None
        )
    turn(conversation(helpcentre, then), then, Decision.ABSTAINED, latency_ms=600)
    hand_off(turn(conversation(helpcentre, then), then, Decision.REFERRED, latency_ms=900), then)
    turn(conversation(helpcentre, then, from_lab=True), then, Decision.REFERRED, latency_ms=50_000)


def signed_in(browser: Browser, url: str, username: str, password: str) -> Page:
    """A new page at ``url`` once its sign-in form (the staff one, or the admin's) is filled in."""
    page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    page.goto(url)
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.locator("[type=submit]").click()
    return page


def test_staff_read_the_outcomes_with_plots_and_download_them(browser, live_url, artifacts):
    in_own_thread(known_outcomes)
    page = signed_in(browser, f"{live_url}/staff/analytics", "sam", STAFF_PASSWORD)

    totals = page.locator("[data-role=totals] td")
    expect(totals.nth(0)).to_have_text("5")  # conversations: the evaluation's is not one of them
    expect(totals.nth(1)).to_have_text("5")  # turns
    plots = page.locator("img[src^='data:image/png']")
    expect(plots).to_have_count(3)
    assert all(page.evaluate("(img) => img.naturalWidth > 0", plots.nth(i).element_handle()) for i in range(3))
    page.screenshot(path=artifacts / "analytics.png", full_page=True)

    href = page.locator("[data-role=csv]").get_attribute("href")
    assert href is not None
    download = page.request.get(f"{live_url}{href}")
    assert download.ok and download.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(download.text())))
    assert sum(int(row["conversations"]) for row in rows) == 5
    [day] = [row for row in rows if row["conversations"] != "0"]
    assert (float(day["abstained_share"]), float(day["referred_share"]), float(day["thumbs_up_share"])) == (
        0.2,
        0.2,
        1.0,
    )
    page.context.close()


def abstained_questions() -> None:
    helpcentre = Collection.objects.get(name="helpcentre")
    for question in SWITZERLAND + GIFT_WRAP:
        asked(helpcentre, question)
    get_user_model().objects.create_superuser("author", password=AUTHOR_PASSWORD)


def test_an_author_finds_the_gaps_and_starts_a_draft_from_one(browser, live_url, artifacts):
    in_own_thread(abstained_questions)
    page = signed_in(browser, f"{live_url}/admin/insights/contentgap/", "author", AUTHOR_PASSWORD)

    page.locator("[data-role=find-gaps]").click()
    page.locator("#id_collection").select_option(label="helpcentre")
    page.locator("#id_since_days").fill("1")  # today's questions, not the analytics test's of three days ago
    page.locator("[data-role=run-gaps]").click()
    expect(page.locator("[data-role=start-draft]")).to_have_count(2)  # Switzerland, gift wrapping
    expect(page.locator("body")).to_contain_text(SWITZERLAND[0])
    page.screenshot(path=artifacts / "content-gaps.png", full_page=True)

    switzerland = ContentGap.objects.get(size=3)
    page.locator(f"[data-role=start-draft][href*='/{switzerland.pk}/']").click()
    expect(page.locator("[data-role=gap-questions] li")).to_have_count(3)
    page.locator("[data-role=confirm-draft]").click()
    page.wait_for_url("**/admin/knowledge/articleversion/*/change/")
    draft = ContentGap.objects.get(pk=switzerland.pk).draft
    assert draft is not None and page.url.endswith(f"/articleversion/{draft.pk}/change/")
    assert draft.status == VersionStatus.DRAFT
    assert all(f"- {q}" in draft.body for q in SWITZERLAND)
    page.context.close()
