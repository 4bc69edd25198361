"""A sync run's admin page in a real browser follows the run as a worker writes it: the counts change on
the page without a reload, and the page says when the run has ended. Screenshot var/test-artifacts/sync-run.png."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from knowledge.models import Collection, SyncRun, SyncStatus, SyncTrigger
from tests.browser.test_insights_pages import signed_in
from tests.browser.test_queue_presence import in_own_thread

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("served_helpcentre")]

PASSWORD = "a-third-long-test-password"


def indexing_run() -> int:
    get_user_model().objects.create_superuser("editor", password=PASSWORD)
    run = SyncRun.objects.create(
        collection=Collection.objects.get(name="helpcentre"),
        trigger=SyncTrigger.API,
        description="https://help.example.com/sitemap.xml",
        status=SyncStatus.INDEXING,
        articles=4,
        articles_done=1,
        new=1,
        started_at=timezone.now(),
    )
    return run.pk


def test_the_run_page_follows_the_run_until_it_ends(browser, live_url, artifacts):
    run_id = in_own_thread(indexing_run)
    page = signed_in(browser, f"{live_url}/admin/knowledge/syncrun/{run_id}/change/", "editor", PASSWORD)
    expect(page.locator(".field-progress .readonly")).to_have_text("1 of 4")
    expect(page.locator("[data-role=sync-progress]")).to_contain_text("follows the run")

    # What a worker writes as it goes reaches the open page.
    in_own_thread(lambda: SyncRun.objects.filter(pk=run_id).update(articles_done=3, new=2, changed=1, chunks=17))
    expect(page.locator(".field-progress .readonly")).to_have_text("3 of 4")
    expect(page.locator(".field-documents .readonly")).to_contain_text("2 new, 1 changed")

    error = {"path": "https://help.example.com/hc/huge", "line": None, "field": None, "message": "over 5,000,000 bytes"}
    in_own_thread(
        lambda: SyncRun.objects.filter(pk=run_id).update(
            articles_done=4, failed=1, errors=[error], status=SyncStatus.FINISHED, finished_at=timezone.now()
        )
    )
    expect(page.locator("[data-role=sync-progress]")).to_have_text("The run has ended: Finished.")
    expect(page.locator(".field-problems .readonly")).to_contain_text("hc/huge: over 5,000,000 bytes")
    expect(page.locator(".field-status .readonly")).to_have_text("Finished")
    expect(page.locator(".field-finished_at .readonly")).not_to_have_text("-")
    page.screenshot(path=artifacts / "sync-run.png", full_page=True)
