"""Outcome analytics on conversations with known outcomes: every figure, per day, per collection and in
total, the 24 hour and 7 day windows, the time zone of a day, and ranges without data."""

from datetime import UTC, date, datetime, timedelta

import pytest

from answering.outcome import Decision, HandoffReason
from conversations.models import FeedbackRating, StaffActionKind
from insights.analytics import COLUMNS, Figures, Period, check_period, outcome_report, share
from tests.insights.outcome_helpers import collection, conversation, customer_says, hand_off, staff_replies, turn

pytestmark = pytest.mark.django_db

D1 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
D2 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
HOUR, DAY = timedelta(hours=1), timedelta(days=1)


@pytest.fixture(autouse=True)
def utc(settings):
    settings.TIME_ZONE = "UTC"


@pytest.fixture
def known_outcomes():
    """Nine conversations in "shop" on 1 March and one in "trade" on 2 March; the comments say how each
    ends (judged at its first reply followed by 24 quiet hours)."""
    shop, trade = collection("shop"), collection("trade")
    c1 = conversation(shop, D1)  # resolved, durable
    turn(c1, D1, latency_ms=1000, rating=FeedbackRating.UP)
    c2 = conversation(shop, D1)  # back within 2 h and answered: judged at the second reply, resolved, durable
    turn(c2, D1, latency_ms=2000)
    turn(c2, D1 + 2 * HOUR, latency_ms=3000)
    c3 = conversation(shop, D1)  # resolved, reopened after 3 days: not durable
    turn(c3, D1, latency_ms=4000)
    turn(c3, D1 + 3 * DAY, latency_ms=500)
    c4 = conversation(shop, D1)  # thumbs down: not resolved
    turn(c4, D1, latency_ms=5000, rating=FeedbackRating.DOWN)
    c5 = conversation(shop, D1)  # abstained: not resolved
    turn(c5, D1, Decision.ABSTAINED, latency_ms=6000)
    c6 = conversation(shop, D1)  # referred, staff reply after 10 minutes
    referred = turn(c6, D1, Decision.REFERRED, latency_ms=7000)
    staff_replies(hand_off(referred, referred.created_at), referred.created_at + timedelta(minutes=10))
    c7 = conversation(shop, D1)  # asked for a person after 1 h: taken over at once, replied to after 30 minutes
    asked = hand_off(turn(c7, D1, latency_ms=8000, rating=FeedbackRating.UP), D1 + HOUR, HandoffReason.CUSTOMER_ASKED)
    staff_replies(asked, D1 + HOUR + timedelta(minutes=1), StaffActionKind.TAKE_OVER)
    staff_replies(asked, D1 + HOUR + timedelta(minutes=30))
    c8 = conversation(shop, D1)  # wrote again after 1 h and was never answered: not resolved
    turn(c8, D1, latency_ms=9000)
    customer_says(c8, D1 + HOUR)
    c9 = conversation(shop, D1)  # resolved, asked for a person 3 days later: not durable; nobody replied
    hand_off(turn(c9, D1, latency_ms=10000), D1 + 3 * DAY, HandoffReason.CUSTOMER_ASKED)
    c10 = conversation(trade, D2)  # resolved, durable
    turn(c10, D2, latency_ms=1500)
    lab = conversation(shop, D1, from_lab=True)  # `evaluate answers` asking on the live collection: not counted
    hand_off(turn(lab, D1, Decision.REFERRED, latency_ms=99000, rating=FeedbackRating.DOWN), D1)
    return shop, trade


def test_each_day_has_its_figures(known_outcomes):
    report = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 5)), now=NOW)
    days = dict(report.days)
    assert list(days) == [date(2026, 3, n) for n in range(1, 6)]

    first = days[date(2026, 3, 1)]
    assert first.conversations.conversations == 9
    assert (first.turns.turns, first.turns.answered, first.turns.abstained, first.turns.referred) == (10, 8, 1, 1)
    assert (first.turns.rated, first.turns.rated_up) == (3, 2)
    # percentile_cont over 1000 … 10000 ms: the median between 5000 and 6000, p95 at 8.55 of 0 … 9.
    assert first.turns.latency_median_ms == pytest.approx(5500)
    assert first.turns.latency_p95_ms == pytest.approx(9550)
    assert first.conversations.handed_off == 3
    assert first.conversations.by_reason == {
        HandoffReason.CUSTOMER_ASKED: 2,
        HandoffReason.NO_KNOWLEDGE: 1,
        HandoffReason.UNSUPPORTED_CLAIM: 0,
        HandoffReason.POLICY: 0,
        HandoffReason.PROVIDER_FAILURE: 0,
        HandoffReason.STAFF_TOOK_OVER: 0,
        HandoffReason.SUGGESTION_DECLINED: 0,
    }
    assert (first.conversations.judged, first.conversations.resolved) == (9, 4)  # c1, c2, c3, c9
    assert (first.conversations.judged_durable, first.conversations.durable) == (9, 2)  # c1, c2
    # Hand-offs count on the day they were made: c6's and c7's; the take-over is not a reply.
    assert (first.handoffs.handoffs, first.handoffs.replied) == (2, 2)
    assert first.handoffs.first_reply_median_s == pytest.approx((600 + 1800) / 2)

    second = days[date(2026, 3, 2)]
    assert (second.conversations.conversations, second.turns.turns) == (1, 1)
    assert (second.conversations.resolved, second.conversations.durable) == (1, 1)
    assert second.turns.latency_median_ms == second.turns.latency_p95_ms == pytest.approx(1500)

    assert days[date(2026, 3, 3)] == Figures()  # a day without data is there, all zero

    # c3's return is a turn of 4 March, c9's late hand-off a hand-off of 4 March nobody has replied to.
    fourth = days[date(2026, 3, 4)]
    assert (fourth.conversations.conversations, fourth.turns.turns, fourth.turns.latency_median_ms) == (0, 1, 500)
    assert (fourth.handoffs.handoffs, fourth.handoffs.replied, fourth.handoffs.first_reply_median_s) == (1, 0, None)


def test_totals_and_collections_are_computed_over_their_own_rows(known_outcomes):
    report = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 5)), now=NOW)
    total = report.totals
    assert (total.conversations.conversations, total.turns.turns, total.turns.answered) == (10, 12, 10)
    assert (total.conversations.resolved, total.conversations.judged) == (5, 10)
    assert (total.conversations.durable, total.conversations.judged_durable) == (3, 10)
    # Twelve latencies 500, 1000, 1500, 2000, 3000 … 10000: not a median of the daily medians.
    assert total.turns.latency_median_ms == pytest.approx(4500)
    assert total.turns.latency_p95_ms == pytest.approx(9450)
    assert (total.handoffs.handoffs, total.handoffs.replied, total.handoffs.first_reply_median_s) == (3, 2, 1200)

    collections = dict(report.collections)
    assert list(collections) == ["shop", "trade"]
    assert (collections["shop"].conversations.conversations, collections["shop"].turns.turns) == (9, 11)
    assert (collections["shop"].conversations.resolved, collections["trade"].conversations.resolved) == (4, 1)


def test_a_collection_filter_keeps_only_its_conversations(known_outcomes):
    _, trade = known_outcomes
    report = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 5), trade.pk), now=NOW)
    assert (report.totals.conversations.conversations, report.totals.turns.turns) == (1, 1)
    assert report.totals.handoffs.handoffs == 0
    assert [name for name, _ in report.collections] == ["trade"]


def test_the_table_columns_give_the_shares(known_outcomes):
    report = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 1)), now=NOW)
    values = {column.key: column.value(report.totals) for column in COLUMNS}
    assert values["answered_share"] == pytest.approx(0.8)
    assert values["abstained_share"] == values["referred_share"] == pytest.approx(0.1)
    assert values["handoff_rate"] == pytest.approx(3 / 9)
    assert values["handoff_rate_customer_asked"] == pytest.approx(2 / 9)
    assert values["handoff_rate_policy"] == 0
    assert values["thumbs_up_share"] == pytest.approx(2 / 3)
    assert values["resolution_rate"] == pytest.approx(4 / 9)
    assert values["durable_resolution_rate"] == pytest.approx(2 / 9)
    assert values["staff_first_reply_median_s"] == pytest.approx(1200)


def _answered(started: datetime, **kwargs):
    def build(where):
        turn(conversation(where, started), started, **kwargs)

    return build


def _then(first: timedelta, *, answered: bool = True, started: datetime = NOW - 10 * DAY):
    """Answered at `started`; the customer writes again `first` later (answered, or never)."""

    def build(where):
        chat = conversation(where, started)
        turn(chat, started)
        if answered:
            turn(chat, started + first)
        else:
            customer_says(chat, started + first)

    return build


def _handed_off(after: timedelta, decision: str = Decision.ANSWERED):
    def build(where):
        started = NOW - 10 * DAY
        made = turn(conversation(where, started), started, decision)
        hand_off(made, made.created_at + after, HandoffReason.CUSTOMER_ASKED)

    return build


@pytest.mark.parametrize(
    ("build", "judged", "resolved", "judged_durable", "durable"),
    [
        pytest.param(_answered(NOW - 10 * DAY), 1, 1, 1, 1, id="answered-and-quiet"),
        pytest.param(_then(2 * HOUR), 1, 1, 1, 1, id="back-within-24h-answered-judged-at-second-reply"),
        pytest.param(_then(3 * DAY), 1, 1, 1, 0, id="reopened-after-3-days"),
        pytest.param(_then(8 * DAY), 1, 1, 1, 1, id="back-after-8-days-still-durable"),
        pytest.param(_then(HOUR, answered=False), 1, 0, 1, 0, id="wrote-again-never-answered"),
        pytest.param(_answered(NOW - 10 * DAY, rating=FeedbackRating.DOWN), 1, 0, 1, 0, id="thumbs-down"),
        pytest.param(_answered(NOW - 10 * DAY, rating=FeedbackRating.UP), 1, 1, 1, 1, id="thumbs-up"),
        pytest.param(_answered(NOW - 10 * DAY, decision=Decision.ABSTAINED), 1, 0, 1, 0, id="abstained"),
        pytest.param(
            _answered(NOW - 10 * DAY, decision=Decision.SUGGESTED, rating=FeedbackRating.UP),
            1,
            1,
            1,
            1,
            id="suggestion-answered-yes",
        ),
        pytest.param(
            _answered(NOW - 10 * DAY, decision=Decision.SUGGESTED, rating=FeedbackRating.DOWN),
            1,
            0,
            1,
            0,
            id="suggestion-answered-no",
        ),
        pytest.param(_answered(NOW - 10 * DAY, decision=Decision.SUGGESTED), 1, 0, 1, 0, id="suggestion-unanswered"),
        pytest.param(_handed_off(timedelta(0), Decision.REFERRED), 1, 0, 1, 0, id="referred"),
        pytest.param(_handed_off(HOUR), 1, 0, 1, 0, id="asked-for-a-person-within-24h"),
        pytest.param(_handed_off(3 * DAY), 1, 1, 1, 0, id="asked-for-a-person-after-3-days"),
        pytest.param(_answered(NOW - 23 * HOUR), 0, 0, 0, 0, id="24h-not-over"),
        pytest.param(_answered(NOW - 25 * HOUR), 1, 1, 0, 0, id="24h-over-7d-not"),
        pytest.param(_answered(NOW - 24 * HOUR - timedelta(seconds=2)), 1, 1, 0, 0, id="24h-just-over"),
        pytest.param(_then(23 * HOUR, answered=False, started=NOW - 25 * HOUR), 1, 0, 0, 0, id="wrote-again-23h-later"),
        pytest.param(
            lambda where: customer_says(conversation(where, NOW - 3 * DAY), NOW - 3 * DAY), 0, 0, 0, 0, id="no-reply"
        ),
    ],
)
def test_resolution_of_one_conversation(build, judged, resolved, judged_durable, durable):
    build(collection("shop"))
    outcomes = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 20)), now=NOW).totals.conversations
    assert outcomes.conversations == 1
    assert (outcomes.judged, outcomes.resolved, outcomes.judged_durable, outcomes.durable) == (
        judged,
        resolved,
        judged_durable,
        durable,
    )


def test_suggestions_are_a_decision_of_their_own_yes_resolves_and_no_hands_off():
    shop = collection("shop")
    yes = conversation(shop, D1)  # Yes: resolved
    turn(yes, D1, Decision.SUGGESTED, rating=FeedbackRating.UP)
    no = conversation(shop, D1)  # No, and the widget's hand-off of the suggestion's turn
    declined = turn(no, D1, Decision.SUGGESTED, rating=FeedbackRating.DOWN)
    hand_off(declined, declined.created_at + timedelta(minutes=1), HandoffReason.SUGGESTION_DECLINED)
    lost = conversation(shop, D1)  # No, and its hand-off never reached the server: a hand-off all the same
    turn(lost, D1, Decision.SUGGESTED, rating=FeedbackRating.DOWN)
    silent = conversation(shop, D1)  # neither Yes nor No: judged, not resolved, not handed off
    turn(silent, D1, Decision.SUGGESTED)
    answered = conversation(shop, D1)
    turn(answered, D1)

    report = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 1)), now=NOW)
    turns, outcomes = report.totals.turns, report.totals.conversations
    assert (turns.turns, turns.answered, turns.suggested, turns.abstained, turns.referred) == (5, 1, 4, 0, 0)
    assert (turns.suggested_yes, turns.suggested_no, turns.rated, turns.rated_up) == (1, 2, 3, 1)
    assert (outcomes.conversations, outcomes.handed_off) == (5, 2)
    assert outcomes.by_reason[HandoffReason.SUGGESTION_DECLINED] == 2
    assert outcomes.by_reason[HandoffReason.CUSTOMER_ASKED] == 0
    assert (outcomes.judged, outcomes.resolved) == (5, 2)  # the Yes and the answer
    assert (outcomes.judged_durable, outcomes.durable) == (5, 2)

    values = {column.key: column.value(report.totals) for column in COLUMNS}
    assert values["suggested_share"] == pytest.approx(0.8)
    assert values["suggestions"] == 4
    assert values["suggestion_yes_share"] == pytest.approx(0.25)
    assert values["suggestion_no_share"] == pytest.approx(0.5)
    assert values["handoff_rate_suggestion_declined"] == pytest.approx(0.4)
    assert values["resolution_rate"] == pytest.approx(0.4)


def test_a_range_without_data_divides_by_nothing():
    collection("shop")
    report = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 3)), now=NOW)
    assert len(report.days) == 3 and report.collections == []
    for figures in [report.totals, *(f for _, f in report.days)]:
        values = {column.key: column.value(figures) for column in COLUMNS}
        assert values["conversations"] == values["turns"] == values["rated"] == 0
        assert all(values[key] is None for key in values if key.endswith(("_share", "_rate", "_ms", "_s")))
        assert all(values[f"handoff_rate_{r}"] is None for r in HandoffReason.values)


def test_turns_without_a_total_latency_are_left_out_of_the_latency():
    shop = collection("shop")
    chat = conversation(shop, D1)
    turn(chat, D1, latency_ms=800)
    turn(chat, D1 + HOUR)
    report = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 1)), now=NOW)
    assert report.totals.turns.turns == 2
    assert report.totals.turns.latency_median_ms == report.totals.turns.latency_p95_ms == pytest.approx(800)


def test_days_are_calendar_days_of_the_configured_time_zone(settings):
    settings.TIME_ZONE = "America/New_York"
    shop = collection("shop")
    late_evening = datetime(2026, 3, 2, 3, 0, tzinfo=UTC)  # 22:00 on 1 March in New York
    turn(conversation(shop, late_evening), late_evening)
    report = outcome_report(Period(date(2026, 3, 1), date(2026, 3, 2)), now=NOW)
    assert [(day, f.conversations.conversations, f.turns.turns) for day, f in report.days] == [
        (date(2026, 3, 1), 1, 1),
        (date(2026, 3, 2), 0, 0),
    ]
    # The range's bounds are New York midnights: 2 March alone leaves the conversation out.
    assert outcome_report(Period(date(2026, 3, 2), date(2026, 3, 2)), now=NOW).totals.turns.turns == 0


def test_a_range_is_checked():
    assert check_period(date(2026, 3, 1), date(2026, 3, 1)) == []
    assert check_period(date(2026, 3, 2), date(2026, 3, 1)) == [
        "The start date (2026-03-02) is after the end date (2026-03-01)."
    ]
    assert check_period(date(2025, 1, 1), date(2026, 1, 2)) == [
        "The range covers 367 days; at most 366 can be shown at once."
    ]
    assert share(1, 0) is None and share(1, 4) == 0.25
