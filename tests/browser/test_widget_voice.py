"""The widget greets customers in the name of the business whose collection the server serves, unless the
page gives a greeting of its own."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from knowledge.models import Collection

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("served_helpcentre", "voiced")]


@pytest.fixture(scope="module")
def voiced(served_helpcentre, django_db_blocker) -> Iterator[None]:
    # Committed outside the tests' transactions, so the server's threads read it.
    with django_db_blocker.unblock():
        Collection.objects.filter(name="helpcentre").update(
            business_name="Brightkettle", helps_with="kettles and lamps"
        )
    yield
    with django_db_blocker.unblock():
        Collection.objects.filter(name="helpcentre").update(business_name="", helps_with="")


def test_the_greeting_says_what_the_business_helps_with(page, live_url):
    page.goto(f"{live_url}/")
    page.locator("[data-role=launcher]").click()
    expect(page.locator("[data-role=intro]")).to_have_text(
        re.compile(r"^Ask us anything about kettles and lamps\. Answers come from the Brightkettle help centre")
    )
    page.goto(f"{live_url}/help/")
    expect(page).to_have_title("Brightkettle help centre")
