"""Business hours in the admin: weekly periods and closed days as inlines, time zones and periods checked."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from conversations.models import BusinessHours

pytestmark = pytest.mark.django_db

ADD = "/admin/conversations/businesshours/add/"


def form(collection_id: int, time_zone: str, opens: str = "09:00", closes: str = "17:00") -> dict[str, str]:
    return {
        "collection": str(collection_id),
        "time_zone": time_zone,
        "periods-TOTAL_FORMS": "1",
        "periods-INITIAL_FORMS": "0",
        "periods-0-weekday": "0",
        "periods-0-opens": opens,
        "periods-0-closes": closes,
        "closed_days-TOTAL_FORMS": "1",
        "closed_days-INITIAL_FORMS": "0",
        "closed_days-0-date": "2026-12-24",
        "closed_days-0-note": "Christmas Eve",
    }


@pytest.fixture
def admin_client_() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="x" * 12))
    return client


def test_an_unknown_time_zone_is_refused_with_examples(helpcentre, admin_client_):
    page = admin_client_.post(ADD, form(helpcentre.pk, "Europe/Atlantis")).content.decode()
    assert "&#x27;Europe/Atlantis&#x27; is not a time zone this server knows" in page
    assert "Europe/Berlin" in page and not BusinessHours.objects.exists()


def test_a_period_that_closes_before_it_opens_is_refused(helpcentre, admin_client_):
    page = admin_client_.post(ADD, form(helpcentre.pk, "Europe/Berlin", "18:00", "09:00")).content.decode()
    assert "A period must open before it closes (18:00 is not before 09:00)" in page
    assert not BusinessHours.objects.exists()


def test_hours_are_saved_with_their_periods_and_closed_days_and_listed_with_who_is_there(helpcentre, admin_client_):
    response = admin_client_.post(ADD, form(helpcentre.pk, " Europe/Berlin "))
    assert response.status_code == 302
    hours = BusinessHours.objects.get()
    assert hours.time_zone == "Europe/Berlin"
    assert [str(p) for p in hours.periods.all()] == ["Monday 09:00–17:00"]
    assert [(d.date.isoformat(), d.note) for d in hours.closed_days.all()] == [("2026-12-24", "Christmas Eve")]
    listing = admin_client_.get("/admin/conversations/businesshours/").content.decode()
    assert "a person will" in listing  # nobody is online in a test: the list says when one will be back
