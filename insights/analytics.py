"""Outcome analytics: what the assistant's conversations came to, per day and per collection.

Three SQL queries, each aggregated in Postgres over GROUPING SETS, so one pass gives the per-day-and-
collection figures, the per-day ones, the per-collection ones and the totals (medians and percentiles
cannot be added up from smaller groups, so Postgres computes each level itself):

- turns: turns asked in the range (decision shares, thumbs, reply latency), by the turn's day;
- conversations: conversations started in the range (hand-off rate by reason, resolution and durable
  resolution), by the conversation's first day, judged with what is known now;
- hand-offs: referrals made in the range and the staff's first reply after each, by the referral's day.

Suggestions (a quoted help-centre section with "Did this answer your question?") are a decision of their own
beside answered, abstained and referred. The customer's Yes is a thumbs up on the reply and their No a thumbs
down followed by a hand-off of the suggestion's turn (reason "suggestion_declined"; conversations/chat/session.py). So:
- turns: a suggestion's outcome is Yes (rated up), No (rated down, or handed off as declined) or unanswered;
- conversations: a judged reply that is a suggestion answered Yes resolves the conversation like an answer
  does (under the same conditions); one answered No never does, and counts as a hand-off with the reason
  "suggestion_declined", whether or not the hand-off itself reached the server (the No is the customer's
  request for one).

Days are calendar days in settings.TIME_ZONE. The definitions are written out in definitions() and on the page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection
from django.utils import timezone

from answering.outcome import Decision, HandoffReason
from conversations.models import (
    Conversation,
    FeedbackRating,
    Message,
    Referral,
    Role,
    StaffAction,
    StaffActionKind,
    Turn,
    TurnFeedback,
)
from knowledge.models import Collection

RESOLUTION_WINDOW = timedelta(hours=24)
DURABLE_WINDOW = timedelta(days=7)
MAX_SPAN_DAYS = 366

REASONS: list[str] = list(HandoffReason.values)


def definitions() -> list[tuple[str, str]]:
    """Each figure and what it counts, as the page and the README state them."""
    return [("Day", f"A calendar day in {settings.TIME_ZONE} (settings.TIME_ZONE)."), *_DEFINITIONS]


_DEFINITIONS: list[tuple[str, str]] = [
    ("Conversations", "Conversations started that day (the first customer message)."),
    (
        "Turns",
        "Customer messages asked that day that the assistant replied to. Answered, suggested, abstained and "
        "referred are shares of those turns, by the turn's decision.",
    ),
    (
        "Suggestions",
        'A suggested turn quoted the help-centre section that looked like the question and asked "Did this '
        "answer your question?\". 'Suggestion: yes' is the share of that day's suggestions the customer answered "
        "Yes (rated up); 'Suggestion: no' the share answered No (rated down, or handed to a person as declined); "
        "the rest were not answered.",
    ),
    (
        "Hand-off rate",
        "Share of the conversations started that day that were handed to a person at any time so far (any "
        "referral, or a suggestion answered No, which asks for one: reason 'Suggestion did not answer'); by "
        "reason, the share with a hand-off of that reason (a conversation handed off twice for two reasons "
        "counts under both).",
    ),
    (
        "Thumbs up",
        "Of that day's replies the customer rated, the share rated up; 'rated' is how many were rated.",
    ),
    (
        "Judged reply",
        "A conversation's outcome is judged at its first assistant reply after which the customer wrote nothing "
        "for 24 hours; if there is none, at its last reply (the customer wrote after it and the assistant never "
        "answered). Conversations whose judged reply's 24 hours have not yet passed are left out of resolution, "
        "as are conversations the assistant never replied to.",
    ),
    (
        "Resolution rate",
        "Of the conversations started that day whose 24 hours have passed, the share where the judged reply was "
        "answered (or was a suggestion the customer answered Yes), the customer wrote nothing within 24 hours "
        "after it, nobody handed the conversation off before those 24 hours ended, and no reply up to it was "
        "rated thumbs down (a suggestion answered No is one).",
    ),
    (
        "Durable resolution",
        "Of the conversations started that day whose judged reply is at least 7 days old, the share resolved "
        "and not reopened within 7 days of that reply: no customer message and no hand-off.",
    ),
    (
        "Reply latency",
        "Median and 95th percentile of the assistant's time to reply (Turn.latency_ms['total']: from taking the "
        "message to the checked reply) over that day's turns.",
    ),
    (
        "Staff first reply",
        "For hand-offs made that day: the median time from the hand-off to the first staff reply in that "
        "conversation after it, over the hand-offs replied to so far; 'replied' counts them.",
    ),
]


@dataclass(frozen=True)
class Period:
    """Calendar days from start to end, both included, in settings.TIME_ZONE; optionally one collection."""

    start: date
    end: date
    collection_id: int | None = None

    def days(self) -> list[date]:
        return [self.start + timedelta(days=n) for n in range((self.end - self.start).days + 1)]

    def bounds(self) -> tuple[datetime, datetime]:
        zone = ZoneInfo(settings.TIME_ZONE)
        return (
            datetime.combine(self.start, time.min, tzinfo=zone),
            datetime.combine(self.end + timedelta(days=1), time.min, tzinfo=zone),
        )


def check_period(start: date, end: date) -> list[str]:
    """What is wrong with a range asked for, in words for the person who asked; empty when it is fine."""
    if start > end:
        return [f"The start date ({start:%Y-%m-%d}) is after the end date ({end:%Y-%m-%d})."]
    span = (end - start).days + 1
    if span > MAX_SPAN_DAYS:
        return [f"The range covers {span} days; at most {MAX_SPAN_DAYS} can be shown at once."]
    return []


def share(part: int, whole: int) -> float | None:
    """part / whole, or None when there is nothing to divide by (shown as "—")."""
    return part / whole if whole else None


@dataclass(frozen=True)
class TurnFigures:
    turns: int = 0
    answered: int = 0
    suggested: int = 0
    suggested_yes: int = 0
    suggested_no: int = 0
    abstained: int = 0
    referred: int = 0
    rated: int = 0
    rated_up: int = 0
    latency_median_ms: float | None = None
    latency_p95_ms: float | None = None


@dataclass(frozen=True)
class ConversationFigures:
    conversations: int = 0
    handed_off: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)
    judged: int = 0
    resolved: int = 0
    judged_durable: int = 0
    durable: int = 0


@dataclass(frozen=True)
class HandoffFigures:
    handoffs: int = 0
    replied: int = 0
    first_reply_median_s: float | None = None


@dataclass(frozen=True)
class Figures:
    turns: TurnFigures = field(default_factory=TurnFigures)
    conversations: ConversationFigures = field(default_factory=ConversationFigures)
    handoffs: HandoffFigures = field(default_factory=HandoffFigures)


@dataclass(frozen=True)
class Report:
    period: Period
    now: datetime
    totals: Figures
    days: list[tuple[date, Figures]]
    collections: list[tuple[str, Figures]]


@dataclass(frozen=True)
class Column:
    """One figure of the per-day table: the page formats it by kind, the CSV writes the raw value."""

    key: str
    heading: str
    kind: str  # "count", "share", "ms" or "s"
    value: Callable[[Figures], int | float | None]


def _reason_share(reason: str) -> Callable[[Figures], float | None]:
    return lambda f: share(f.conversations.by_reason.get(reason, 0), f.conversations.conversations)


COLUMNS: list[Column] = [
    Column("conversations", "Conversations", "count", lambda f: f.conversations.conversations),
    Column("turns", "Turns", "count", lambda f: f.turns.turns),
    Column("answered_share", "Answered", "share", lambda f: share(f.turns.answered, f.turns.turns)),
    Column("suggested_share", "Suggested", "share", lambda f: share(f.turns.suggested, f.turns.turns)),
    Column("abstained_share", "Abstained", "share", lambda f: share(f.turns.abstained, f.turns.turns)),
    Column("referred_share", "Referred", "share", lambda f: share(f.turns.referred, f.turns.turns)),
    Column(
        "handoff_rate",
        "Hand-off rate",
        "share",
        lambda f: share(f.conversations.handed_off, f.conversations.conversations),
    ),
    *[Column(f"handoff_rate_{r}", f"Hand-off: {HandoffReason(r).label}", "share", _reason_share(r)) for r in REASONS],
    Column("rated", "Rated", "count", lambda f: f.turns.rated),
    Column("thumbs_up_share", "Thumbs up", "share", lambda f: share(f.turns.rated_up, f.turns.rated)),
    Column("suggestions", "Suggestions", "count", lambda f: f.turns.suggested),
    Column(
        "suggestion_yes_share", "Suggestion: yes", "share", lambda f: share(f.turns.suggested_yes, f.turns.suggested)
    ),
    Column("suggestion_no_share", "Suggestion: no", "share", lambda f: share(f.turns.suggested_no, f.turns.suggested)),
    Column("resolution_judged", "Judged (24 h)", "count", lambda f: f.conversations.judged),
    Column("resolution_rate", "Resolution", "share", lambda f: share(f.conversations.resolved, f.conversations.judged)),
    Column("durable_judged", "Judged (7 d)", "count", lambda f: f.conversations.judged_durable),
    Column(
        "durable_resolution_rate",
        "Durable resolution",
        "share",
        lambda f: share(f.conversations.durable, f.conversations.judged_durable),
    ),
    Column("latency_median_ms", "Latency median", "ms", lambda f: f.turns.latency_median_ms),
    Column("latency_p95_ms", "Latency p95", "ms", lambda f: f.turns.latency_p95_ms),
    Column("handoffs", "Hand-offs", "count", lambda f: f.handoffs.handoffs),
    Column("handoffs_replied", "Staff replied", "count", lambda f: f.handoffs.replied),
    Column("staff_first_reply_median_s", "Staff first reply", "s", lambda f: f.handoffs.first_reply_median_s),
]


# A row's key: (day, collection id), None where GROUPING SETS rolled that column up.
Key = tuple[date | None, int | None]

_GROUPING = "GROUP BY GROUPING SETS ((day, collection_id), (day), (collection_id), ())"


def _rows(sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        names = [column.name for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _params(period: Period, now: datetime) -> dict[str, Any]:
    start, end = period.bounds()
    return {
        "tz": settings.TIME_ZONE,
        "start": start,
        "end": end,
        "collection": period.collection_id,
        "now": now,
        "resolution_window": RESOLUTION_WINDOW,
        "durable_window": DURABLE_WINDOW,
        "customer": Role.CUSTOMER.value,
        "answered": Decision.ANSWERED.value,
        "suggested": Decision.SUGGESTED.value,
        "declined": HandoffReason.SUGGESTION_DECLINED.value,
        "abstained": Decision.ABSTAINED.value,
        "referred": Decision.REFERRED.value,
        "down": FeedbackRating.DOWN.value,
        "up": FeedbackRating.UP.value,
        "staff_reply": StaffActionKind.REPLY.value,
        **{f"reason_{n}": reason for n, reason in enumerate(REASONS)},
    }


def _turn_figures(params: dict[str, Any]) -> dict[Key, TurnFigures]:
    sql = f"""
        SELECT day, collection_id,
            count(*) AS turns,
            count(*) FILTER (WHERE decision = %(answered)s) AS answered,
            count(*) FILTER (WHERE decision = %(suggested)s) AS suggested,
            count(*) FILTER (WHERE decision = %(suggested)s AND rating = %(up)s) AS suggested_yes,
            count(*) FILTER (
                WHERE decision = %(suggested)s AND (rating = %(down)s OR reason_code = %(declined)s)
            ) AS suggested_no,
            count(*) FILTER (WHERE decision = %(abstained)s) AS abstained,
            count(*) FILTER (WHERE decision = %(referred)s) AS referred,
            count(rating) AS rated,
            count(*) FILTER (WHERE rating = %(up)s) AS rated_up,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY latency) AS latency_median_ms,
            percentile_cont(0.95) WITHIN GROUP (ORDER BY latency) AS latency_p95_ms
        FROM (
            SELECT (t.created_at AT TIME ZONE %(tz)s)::date AS day, c.collection_id, t.decision, f.rating,
                r.reason_code, (t.latency_ms ->> 'total')::float AS latency
            FROM {Turn._meta.db_table} t
            JOIN {Conversation._meta.db_table} c ON c.id = t.conversation_id
            LEFT JOIN {TurnFeedback._meta.db_table} f ON f.turn_id = t.id
            LEFT JOIN {Referral._meta.db_table} r ON r.turn_id = t.id
            WHERE t.created_at >= %(start)s AND t.created_at < %(end)s AND t.decision <> ''
                AND (%(collection)s::bigint IS NULL OR c.collection_id = %(collection)s::bigint)
                AND NOT c.from_lab
        ) asked
        {_GROUPING}
    """
    return {(row.pop("day"), row.pop("collection_id")): TurnFigures(**row) for row in _rows(sql, params)}


def _conversation_figures(params: dict[str, Any]) -> dict[Key, ConversationFigures]:
    # reply: every assistant reply with the first customer message after the question it answered (a
    # message sent while the reply was being written counts as after it). judged: each conversation's
    # first reply whose 24 h window has ended quietly, else its last reply once that window has ended.
    by_reason = ", ".join(
        f"count(*) FILTER (WHERE %(reason_{n})s = ANY(reasons)) AS reason_{n}" for n in range(len(REASONS))
    )
    sql = f"""
        WITH conv AS (
            SELECT c.id, c.collection_id, (c.created_at AT TIME ZONE %(tz)s)::date AS day
            FROM {Conversation._meta.db_table} c
            WHERE c.created_at >= %(start)s AND c.created_at < %(end)s
                AND (%(collection)s::bigint IS NULL OR c.collection_id = %(collection)s::bigint)
                AND NOT c.from_lab
        ),
        reply AS (
            SELECT t.id, t.conversation_id, t.created_at AS at, t.decision, f.rating,
                (SELECT min(m.created_at) FROM {Message._meta.db_table} m
                    WHERE m.conversation_id = t.conversation_id AND m.role = %(customer)s
                        AND (m.created_at, m.id) > (q.created_at, q.id)) AS next_customer_at,
                row_number() OVER (PARTITION BY t.conversation_id ORDER BY t.created_at DESC, t.id DESC) = 1
                    AS is_last
            FROM {Turn._meta.db_table} t
            JOIN conv ON conv.id = t.conversation_id
            JOIN {Message._meta.db_table} q ON q.id = t.customer_message_id
            LEFT JOIN {TurnFeedback._meta.db_table} f ON f.turn_id = t.id
            WHERE t.decision <> ''
        ),
        judged AS (
            SELECT DISTINCT ON (conversation_id) conversation_id, at, decision, rating,
                coalesce(next_customer_at > at + %(resolution_window)s, true) AS quiet_24h,
                coalesce(next_customer_at > at + %(durable_window)s, true) AS quiet_7d
            FROM reply
            WHERE at + %(resolution_window)s <= %(now)s
                AND (is_last OR coalesce(next_customer_at > at + %(resolution_window)s, true))
            ORDER BY conversation_id, at, id
        ),
        outcome AS (
            SELECT conv.day, conv.collection_id, handed.reasons,
                j.conversation_id IS NOT NULL AS judged,
                j.at + %(durable_window)s <= %(now)s AS judged_durable,
                (j.decision = %(answered)s OR (j.decision = %(suggested)s AND j.rating = %(up)s)) AND j.quiet_24h
                    AND (handed.first_at IS NULL OR handed.first_at > j.at + %(resolution_window)s)
                    AND NOT EXISTS (
                        SELECT 1 FROM {TurnFeedback._meta.db_table} f
                        JOIN {Turn._meta.db_table} rated ON rated.id = f.turn_id
                        WHERE rated.conversation_id = conv.id AND f.rating = %(down)s AND rated.created_at <= j.at
                    ) AS resolved,
                j.quiet_7d AND (handed.first_at IS NULL OR handed.first_at > j.at + %(durable_window)s)
                    AS not_reopened
            FROM conv
            LEFT JOIN judged j ON j.conversation_id = conv.id
            LEFT JOIN LATERAL (
                -- Every referral, and every suggestion answered No (its hand-off, had it not reached us).
                SELECT array_agg(DISTINCT reason_code) AS reasons, min(at) AS first_at
                FROM (
                    SELECT r.reason_code, r.created_at AS at
                    FROM {Referral._meta.db_table} r WHERE r.conversation_id = conv.id
                    UNION ALL
                    SELECT %(declined)s, f.updated_at
                    FROM {TurnFeedback._meta.db_table} f
                    JOIN {Turn._meta.db_table} s ON s.id = f.turn_id
                    WHERE s.conversation_id = conv.id AND s.decision = %(suggested)s AND f.rating = %(down)s
                ) h
            ) handed ON true
        )
        SELECT day, collection_id,
            count(*) AS conversations,
            count(reasons) AS handed_off,
            {by_reason},
            count(*) FILTER (WHERE judged) AS judged,
            count(*) FILTER (WHERE judged AND resolved) AS resolved,
            count(*) FILTER (WHERE judged_durable) AS judged_durable,
            count(*) FILTER (WHERE judged_durable AND resolved AND not_reopened) AS durable
        FROM outcome
        {_GROUPING}
    """
    figures = {}
    for row in _rows(sql, params):
        key = (row.pop("day"), row.pop("collection_id"))
        reasons = {reason: row.pop(f"reason_{n}") for n, reason in enumerate(REASONS)}
        figures[key] = ConversationFigures(by_reason=reasons, **row)
    return figures


def _handoff_figures(params: dict[str, Any]) -> dict[Key, HandoffFigures]:
    sql = f"""
        SELECT day, collection_id,
            count(*) AS handoffs,
            count(first_reply_s) AS replied,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY first_reply_s) AS first_reply_median_s
        FROM (
            SELECT (r.created_at AT TIME ZONE %(tz)s)::date AS day, c.collection_id,
                extract(epoch FROM (
                    SELECT min(a.created_at) FROM {StaffAction._meta.db_table} a
                    WHERE a.conversation_id = r.conversation_id AND a.kind = %(staff_reply)s
                        AND a.created_at >= r.created_at
                ) - r.created_at)::float AS first_reply_s
            FROM {Referral._meta.db_table} r
            JOIN {Conversation._meta.db_table} c ON c.id = r.conversation_id
            WHERE r.created_at >= %(start)s AND r.created_at < %(end)s
                AND (%(collection)s::bigint IS NULL OR c.collection_id = %(collection)s::bigint)
                AND NOT c.from_lab
        ) handed
        {_GROUPING}
    """
    return {(row.pop("day"), row.pop("collection_id")): HandoffFigures(**row) for row in _rows(sql, params)}


def _figures(
    key: Key,
    turns: dict[Key, TurnFigures],
    conversations: dict[Key, ConversationFigures],
    handoffs: dict[Key, HandoffFigures],
) -> Figures:
    return Figures(
        turns.get(key, TurnFigures()),
        conversations.get(key, ConversationFigures()),
        handoffs.get(key, HandoffFigures()),
    )


def _collection_names(ids: Iterable[int]) -> dict[int, str]:
    return dict(Collection.objects.filter(pk__in=set(ids)).values_list("pk", "name"))


def outcome_report(period: Period, *, now: datetime | None = None) -> Report:
    """The figures of every day of the period (days without data included, all zero), of each collection
    that had any, and in total. `now` decides which 24 h and 7 day windows have ended (default: now)."""
    now = now or timezone.now()
    params = _params(period, now)
    turns, conversations, handoffs = _turn_figures(params), _conversation_figures(params), _handoff_figures(params)
    collection_ids = {c for d, c in [*turns, *conversations, *handoffs] if d is None and c is not None}
    names = _collection_names(collection_ids)
    return Report(
        period=period,
        now=now,
        totals=_figures((None, None), turns, conversations, handoffs),
        days=[(day, _figures((day, None), turns, conversations, handoffs)) for day in period.days()],
        collections=sorted(
            ((names[c], _figures((None, c), turns, conversations, handoffs)) for c in collection_ids),
            key=lambda named: named[0],
        ),
    )
