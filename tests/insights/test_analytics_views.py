"""The analytics page and its CSV over HTTP: staff only, filters validated with clear refusals, the table and
its export agreeing, plots embedded under the pages' Content-Security-Policy."""

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from answering.outcome import Decision
from conversations.models import FeedbackRating
from insights.analytics import COLUMNS
from tests.insights.outcome_helpers import collection, conversation, turn

pytestmark = pytest.mark.django_db

D1 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def utc(settings):
    settings.TIME_ZONE = "UTC"


@pytest.fixture
def shop():
    """Two conversations on 1 March 2026 (long judged): one answered and rated up, one abstained."""
    shop = collection("shop")
    turn(conversation(shop, D1), D1, latency_ms=1200, rating=FeedbackRating.UP)
    turn(conversation(shop, D1), D1, Decision.ABSTAINED, latency_ms=800)
    return shop


def staff_client(username: str = "lee", **flags) -> Client:
    user = get_user_model().objects.create_user(username, password="x" * 12, is_staff=True, **flags)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("url", ["/staff/analytics", "/staff/analytics.csv"])
def test_only_staff_see_the_figures(shop, client, url):
    assert client.get(url).url.startswith("/staff/login/")
    customer = get_user_model().objects.create_user("pat", password="x" * 12)
    client.force_login(customer)
    refused = client.get(url)
    assert refused.status_code == 302 and refused.url.startswith("/staff/login/")
    assert staff_client().get(url).status_code == 200


def test_the_page_shows_totals_days_plots_and_definitions(shop):
    response = staff_client().get("/staff/analytics", {"start": "2026-03-01", "end": "2026-03-03"})
    page = response.content.decode()
    assert response.status_code == 200
    totals = page.split('data-role="totals">')[1].split("</tr>")[0]
    # Conversations, turns, answered, suggested, abstained, referred shares, then the hand-off rates.
    assert "<td>2</td><td>2</td><td>50.0%</td><td>0.0%</td><td>50.0%</td><td>0.0%</td><td>0.0%</td>" in totals
    assert "<td>1,000 ms</td>" in totals  # the median of 800 and 1200
    assert "<td>100.0%</td>" in totals  # the one rated reply was rated up
    assert "Tue 2026-03-03" in page and page.count("data:image/png;base64,") == 3
    assert "Resolution rate" in page and "Durable resolution" in page and "UTC" in page
    assert 'href="/staff/analytics.csv?start=2026-03-01&amp;end=2026-03-03&amp;collection="' in page
    # Plots are data: images, which the page's policy allows (and only that, besides our own files).
    assert "img-src 'self' data:" in response["Content-Security-Policy"]


def test_a_day_without_data_shows_dashes(shop):
    page = staff_client().get("/staff/analytics", {"start": "2026-03-02", "end": "2026-03-02"}).content.decode()
    day = page.split("Mon 2026-03-02</th>")[1].split("</tr>")[0]
    assert day.startswith("<td>0</td><td>0</td><td>—</td>")
    assert "No conversations, turns or hand-offs in this range." in page


def test_the_range_defaults_to_the_last_30_days(shop):
    page = staff_client().get("/staff/analytics").content.decode()
    today = timezone.localdate()
    assert f'value="{today - timedelta(days=29):%Y-%m-%d}"' in page and f'value="{today:%Y-%m-%d}"' in page


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            {"start": "2026-03-05", "end": "2026-03-01"},
            "The start date (2026-03-05) is after the end date (2026-03-01).",
        ),
        ({"start": "2024-01-01", "end": "2026-03-01"}, "The range covers 791 days; at most 366 can be shown at once."),
        ({"start": "1 March", "end": "2026-03-01"}, "Start date: Enter the start date as YYYY-MM-DD."),
        ({"end": "2026-02-30"}, "End date: Enter the end date as YYYY-MM-DD."),
        ({"collection": "999999"}, "Collection: There is no such collection."),
        ({"collection": "no-such-shop"}, "Collection: There is no such collection."),
    ],
)
def test_a_bad_filter_is_refused_with_what_is_wrong(shop, query, message):
    client = staff_client()
    page = client.get("/staff/analytics", query)
    assert page.status_code == 400
    assert message in page.content.decode() and 'data-role="totals"' not in page.content.decode()
    exported = client.get("/staff/analytics.csv", query)
    assert exported.status_code == 400 and exported.content.decode() == message


def test_the_csv_is_the_per_day_table_with_the_same_filters(shop):
    other = collection("trade")
    turn(conversation(other, D1), D1, latency_ms=5000)
    response = staff_client().get(
        "/staff/analytics.csv", {"start": "2026-03-01", "end": "2026-03-02", "collection": shop.pk}
    )
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="analytics-20260301-20260302-shop.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == ["day", "collection", *[column.key for column in COLUMNS]]
    assert [(r["day"], r["collection"], r["conversations"], r["turns"]) for r in rows] == [
        ("2026-03-01", "shop", "2", "2"),
        ("2026-03-02", "shop", "0", "0"),
    ]
    first, empty = rows
    assert float(first["answered_share"]) == 0.5 and float(first["thumbs_up_share"]) == 1.0
    assert float(first["latency_median_ms"]) == 1000  # the trade conversation's 5000 ms is filtered out
    assert float(first["resolution_rate"]) == 0.5  # the abstained one is not resolved
    assert empty["answered_share"] == empty["latency_median_ms"] == empty["resolution_rate"] == ""
    # The collection by its name, as the docs call it: the same table.
    by_name = staff_client(username="kim").get(
        "/staff/analytics.csv", {"start": "2026-03-01", "end": "2026-03-02", "collection": "shop"}
    )
    assert by_name.status_code == 200 and by_name.content == response.content


def test_the_queue_links_to_the_page():
    assert 'href="/staff/analytics"' in staff_client().get("/staff/queue").content.decode()
