"""Business hours and presence: whether a person is available at fixed instants, and when one will be back."""

from datetime import UTC, date, datetime, time, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from conversations.handoff.availability import (
    CLOSED_DAY,
    NOBODY_ONLINE,
    OUTSIDE_HOURS,
    Hours,
    Period,
    availability,
    for_collection,
    next_opening,
    valid_time_zone,
)
from conversations.models import BusinessHours, ClosedDay, OpeningPeriod, PresenceStatus, StaffPresence

WEEKDAYS_9_TO_17 = tuple(Period(day, time(9), time(17)) for day in range(5))
BERLIN = Hours("Europe/Berlin", WEEKDAYS_9_TO_17)


def utc(year: int, month: int, day: int, hour: int, minute: int) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_it_is_available_inside_the_hours_with_someone_online():
    # Wednesday 2 December 2026, 10:30 in Berlin (UTC+1).
    result = availability(BERLIN, online=1, at=utc(2026, 12, 2, 9, 30))
    assert (result.available, result.reason, result.back_at) == (True, None, None)


def test_inside_the_hours_with_nobody_online_it_promises_no_time():
    result = availability(BERLIN, online=0, at=utc(2026, 12, 2, 9, 30))
    assert (result.available, result.reason, result.back_at) == (False, NOBODY_ONLINE, None)
    assert result.message == "Nobody is online right now; a person will answer here as soon as someone is back."


def test_without_business_hours_only_presence_counts():
    assert availability(None, online=1, at=utc(2026, 12, 6, 3, 0)).available is True
    nobody = availability(None, online=0, at=utc(2026, 12, 6, 3, 0))
    assert (nobody.reason, nobody.back_at, nobody.time_zone) == (NOBODY_ONLINE, None, None)


def test_friday_evening_in_berlin_is_back_on_monday_at_nine_local():
    # Friday 4 December 2026, 17:00 in Berlin: the period has just closed (it closes at 17:00, exclusive).
    result = availability(BERLIN, online=3, at=utc(2026, 12, 4, 16, 0))
    assert (result.available, result.reason) == (False, OUTSIDE_HOURS)
    assert result.back_at == utc(2026, 12, 7, 8, 0)
    assert result.message == (
        "We're outside our opening hours right now; a person will be back Monday 7 December at 9:00 (Europe/Berlin)."
    )
    assert result.as_frame()["back_at"] == "2026-12-07T08:00:00+00:00"


def test_the_same_instant_is_inside_hours_in_one_zone_and_outside_in_another():
    at = utc(2026, 12, 2, 15, 0)  # 16:00 in Berlin, 10:00 in New York, 00:00 Thursday in Tokyo
    assert availability(Hours("Europe/Berlin", WEEKDAYS_9_TO_17), online=1, at=at).available
    assert availability(Hours("America/New_York", WEEKDAYS_9_TO_17), online=1, at=at).available
    tokyo = availability(Hours("Asia/Tokyo", WEEKDAYS_9_TO_17), online=1, at=at)
    assert tokyo.reason == OUTSIDE_HOURS
    assert tokyo.back_at == datetime(2026, 12, 3, 0, 0, tzinfo=UTC)  # Thursday 9:00 in Tokyo


def test_before_opening_the_same_day_is_back_that_morning():
    # 07:59 in Berlin on a Wednesday.
    assert next_opening(BERLIN, utc(2026, 12, 2, 6, 59)) == utc(2026, 12, 2, 8, 0)


def test_a_closed_day_says_so_and_is_skipped():
    # Christmas Eve and Christmas Day 2026 are a Thursday and a Friday; the next opening is Monday 28th.
    hours = Hours("Europe/Berlin", WEEKDAYS_9_TO_17, frozenset({date(2026, 12, 24), date(2026, 12, 25)}))
    result = availability(hours, online=2, at=utc(2026, 12, 24, 10, 0))
    assert (result.available, result.reason) == (False, CLOSED_DAY)
    assert result.back_at == utc(2026, 12, 28, 8, 0)
    assert result.message.startswith("We're closed today; a person will be back Monday 28 December at 9:00")


def test_several_periods_a_day_the_lunch_break_is_outside_and_back_after_it():
    split = Hours("Europe/Paris", (Period(0, time(9), time(12)), Period(0, time(13, 30), time(18))))
    # Monday 7 December 2026, 12:15 in Paris (UTC+1).
    lunch = availability(split, online=1, at=utc(2026, 12, 7, 11, 15))
    assert (lunch.reason, lunch.back_at) == (OUTSIDE_HOURS, utc(2026, 12, 7, 12, 30))
    assert availability(split, online=1, at=utc(2026, 12, 7, 12, 30)).available  # 13:30 local, opens inclusive


def test_opening_stays_at_local_nine_across_the_spring_daylight_saving_change():
    # Berlin moves to UTC+2 on Sunday 29 March 2026: Friday 9:00 is 08:00 UTC, Monday 9:00 is 07:00 UTC.
    assert next_opening(BERLIN, utc(2026, 3, 27, 16, 30)) == utc(2026, 3, 30, 7, 0)
    assert availability(BERLIN, online=1, at=utc(2026, 3, 30, 7, 0)).available
    assert not availability(BERLIN, online=1, at=utc(2026, 3, 30, 6, 59)).available


def test_the_autumn_change_and_an_opening_in_the_spring_gap():
    # New York falls back on Sunday 1 November 2026 (UTC-4 to UTC-5): Monday 9:00 is 14:00 UTC.
    new_york = Hours("America/New_York", WEEKDAYS_9_TO_17)
    assert next_opening(new_york, utc(2026, 10, 30, 22, 0)) == utc(2026, 11, 2, 14, 0)
    # A Sunday period opening at 02:30, which does not exist in Berlin on 29 March 2026: it opens at 03:30 CEST.
    night = Hours("Europe/Berlin", (Period(6, time(2, 30), time(6)),))
    assert next_opening(night, utc(2026, 3, 28, 12, 0)) == utc(2026, 3, 29, 1, 30)


def test_no_periods_or_a_year_closed_means_nobody_knows_when():
    assert availability(Hours("UTC", ()), online=1, at=utc(2026, 12, 2, 12, 0)).back_at is None
    result = availability(Hours("UTC", ()), online=1, at=utc(2026, 12, 2, 12, 0))
    assert result.message == (
        "We're outside our opening hours right now; a person will answer here as soon as someone is back."
    )


def test_time_zone_names_are_checked():
    assert valid_time_zone("Europe/Berlin") and valid_time_zone("UTC")
    assert not valid_time_zone("Europe/Atlantis") and not valid_time_zone("../etc/passwd") and not valid_time_zone("")


@pytest.mark.django_db
def test_for_collection_reads_the_hours_closed_days_and_who_is_online(helpcentre):
    at = utc(2026, 12, 2, 9, 30)  # Wednesday 10:30 in Berlin
    assert for_collection(helpcentre, at).reason == NOBODY_ONLINE  # no hours: always within them
    user = get_user_model().objects.create_user("sam", is_staff=True)
    presence = StaffPresence.objects.create(user=user, status=PresenceStatus.AWAY)
    assert not for_collection(helpcentre, at).available
    presence.status = PresenceStatus.ONLINE
    presence.seen_at = timezone.now()
    presence.save()
    assert for_collection(helpcentre, at).available
    # Online by the row, but none of their sockets heard from lately (the server holding them stopped).
    StaffPresence.objects.filter(pk=presence.pk).update(seen_at=timezone.now() - timedelta(minutes=5))
    assert for_collection(helpcentre, at).reason == NOBODY_ONLINE
    StaffPresence.objects.filter(pk=presence.pk).update(seen_at=timezone.now())
    hours = BusinessHours.objects.create(collection=helpcentre, time_zone="Europe/Berlin")
    OpeningPeriod.objects.create(hours=hours, weekday=2, opens=time(9), closes=time(12))
    OpeningPeriod.objects.create(hours=hours, weekday=4, opens=time(10), closes=time(12))
    assert for_collection(helpcentre, at).available
    ClosedDay.objects.create(hours=hours, date=date(2026, 12, 2), note="staff training")
    closed = for_collection(helpcentre, at)
    assert (closed.reason, closed.back_at) == (CLOSED_DAY, utc(2026, 12, 4, 9, 0))  # Friday 10:00 Berlin
    user.is_active = False
    user.save()
    assert for_collection(helpcentre, utc(2026, 12, 4, 9, 30)).reason == NOBODY_ONLINE
