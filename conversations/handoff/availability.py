"""Whether a person can take a collection's hand-off now, and if not, why and when one will be back.

A person is available when the collection is inside its business hours (no business hours: always) and at
least one staff member is online. The rules are plain functions over small dataclasses, so they are tested
with fixed instants; ``for_collection`` reads the rows they need.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils import timezone

from conversations.models import BusinessHours, StaffPresence
from knowledge.models import Collection

# Closed days can run into weeks (a holiday shutdown); past a year of them nobody will be back.
SEARCH_DAYS = 366

NOBODY_ONLINE = "nobody_online"
OUTSIDE_HOURS = "outside_hours"
CLOSED_DAY = "closed_day"


@dataclass(frozen=True)
class Period:
    weekday: int  # Monday is 0, as datetime.weekday() counts
    opens: time
    closes: time


@dataclass(frozen=True)
class Hours:
    time_zone: str
    periods: tuple[Period, ...]
    closed_days: frozenset[date] = frozenset()

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str | None  # NOBODY_ONLINE, OUTSIDE_HOURS or CLOSED_DAY when not available
    back_at: datetime | None  # the next opening; None when it is not known
    time_zone: str | None

    @property
    def message(self) -> str:
        """What the customer reads, plainly."""
        if self.available:
            return "A person is online and will answer here."
        first = {
            NOBODY_ONLINE: "Nobody is online right now",
            OUTSIDE_HOURS: "We're outside our opening hours right now",
            CLOSED_DAY: "We're closed today",
        }[self.reason or NOBODY_ONLINE]
        if self.back_at is None or self.time_zone is None:
            return f"{first}; a person will answer here as soon as someone is back."
        local = self.back_at.astimezone(ZoneInfo(self.time_zone))
        when = f"{local:%A} {local.day} {local:%B} at {local.hour}:{local:%M} ({self.time_zone})"
        return f"{first}; a person will be back {when}."

    def as_frame(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "reason": self.reason,
            "back_at": self.back_at.astimezone(UTC).isoformat() if self.back_at else None,
            "time_zone": self.time_zone,
            "message": self.message,
        }


def valid_time_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def closed_reason(hours: Hours | None, at: datetime) -> str | None:
    """Why ``at`` is outside the hours (CLOSED_DAY or OUTSIDE_HOURS), None when inside them. Compared on the
    local wall clock, so an opening at 9:00 stays at 9:00 across a daylight-saving change."""
    if hours is None:
        return None
    local = at.astimezone(hours.zone)
    if local.date() in hours.closed_days:
        return CLOSED_DAY
    now = local.time()
    for period in hours.periods:
        if period.weekday == local.weekday() and period.opens <= now < period.closes:
            return None
    return OUTSIDE_HOURS


def next_opening(hours: Hours, at: datetime) -> datetime | None:
    """The start (in UTC) of the first opening period after ``at``, skipping closed days; None when there is none
    within SEARCH_DAYS (no periods at all, or closed for a year)."""
    zone = hours.zone
    today = at.astimezone(zone).date()
    for offset in range(SEARCH_DAYS):
        day = today + timedelta(days=offset)
        if day in hours.closed_days:
            continue
        starts = sorted(p.opens for p in hours.periods if p.weekday == day.weekday())
        for opens in starts:
            # In UTC: aware datetimes sharing a zone compare by wall clock, blind to a fall-back hour, and a
            # start in a spring-forward gap (02:30 that day) becomes the real instant, an hour later locally.
            candidate = datetime.combine(day, opens, tzinfo=zone).astimezone(UTC)
            if candidate > at.astimezone(UTC):
                return candidate
    return None


def availability(hours: Hours | None, *, online: int, at: datetime) -> Availability:
    """Whether a person is available at ``at``, given the collection's hours (None: always open) and how many
    staff are online. Inside the hours with nobody online, the return is not known, so it is not promised."""
    zone = hours.time_zone if hours is not None else None
    reason = closed_reason(hours, at)
    if reason is None and online > 0:
        return Availability(True, None, None, zone)
    if reason is None:
        return Availability(False, NOBODY_ONLINE, None, zone)
    assert hours is not None  # closed_reason says open when there are no hours
    return Availability(False, reason, next_opening(hours, at), zone)


def hours_of(collection: Collection) -> Hours | None:
    record = BusinessHours.objects.filter(collection=collection).first()
    if record is None:
        return None
    return Hours(
        time_zone=record.time_zone,
        periods=tuple(Period(p.weekday, p.opens, p.closes) for p in record.periods.all()),
        closed_days=frozenset(record.closed_days.values_list("date", flat=True)),
    )


def staff_online() -> int:
    return StaffPresence.objects.taking_handoffs(timezone.now()).count()


def for_collection(collection: Collection, at: datetime | None = None) -> Availability:
    """Whether a person can take this collection's hand-offs now (or at ``at``)."""
    return availability(hours_of(collection), online=staff_online(), at=at or timezone.now())
