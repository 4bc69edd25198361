"""Who answers a hand-off: a referred or customer-requested conversation goes to an online staff member,
round-robin (the one assigned a hand-off longest ago first), never past their max_conversations.

Everything that changes who has what (an assignment, a person going online or away, a socket opening or
closing) first takes one Postgres advisory lock for the rest of its transaction, so two referrals made at the
same moment are counted one after the other and cannot both take a person's last free place. One lock rather
than row locks: these are a few writes per hand-off, and a single lock cannot deadlock however the callers
nest (a person going away reassigns, which assigns, which reads everyone's presence).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from conversations.chat import events
from conversations.models import (
    Conversation,
    ReferralStatus,
    StaffAction,
    StaffActionKind,
    StaffPresence,
)

# A hand-off is someone's until it is resolved: claimed ones (replied to, taken over) count as well.
OPEN_REFERRALS = (ReferralStatus.OPEN, ReferralStatus.CLAIMED)
NEVER = datetime.min.replace(tzinfo=UTC)
# Any fixed 64-bit number no other part of the project takes as an advisory lock.
ASSIGNMENT_LOCK = 1_704_170_001


def lock_assignments() -> None:
    """Wait for any other assignment or presence change to commit; held until this transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ASSIGNMENT_LOCK])


def _online() -> list[StaffPresence]:
    return list(StaffPresence.objects.taking_handoffs(timezone.now()).select_related("user").order_by("pk"))


def _loads(user_ids: list[int]) -> dict[int, int]:
    """How many unresolved hand-offs each of these people has."""
    rows = (
        Conversation.objects.filter(assignee_id__in=user_ids, referrals__status__in=OPEN_REFERRALS)
        .values("assignee_id")
        .annotate(n=Count("pk", distinct=True))
        .values_list("assignee_id", "n")
    )
    return dict(rows)


def _round_robin_order(presence: StaffPresence) -> tuple[datetime, str]:
    # Never assigned first, then the one assigned longest ago; the username breaks ties so tests can tell.
    return (presence.last_assigned_at or NEVER, presence.user.get_username())


def _next_with_room(online: list[StaffPresence]) -> StaffPresence | None:
    loads = _loads([p.user_id for p in online])
    for presence in sorted(online, key=_round_robin_order):
        if loads.get(presence.user_id, 0) < presence.max_conversations:
            return presence
    return None


def _waits_for_a_person(conversation: Conversation) -> bool:
    return not conversation.from_lab and conversation.referrals.filter(status__in=OPEN_REFERRALS).exists()


def _give(conversation: Conversation, presence: StaffPresence | None) -> None:
    """Write the assignment (or its removal) and tell the queue once it is committed."""
    now = timezone.now()
    conversation.assignee = presence.user if presence is not None else None
    conversation.assigned_at = now if presence is not None else None
    # Not updated_at: the queue lists the longest-waiting first, and a reassignment is no new message.
    Conversation.objects.filter(pk=conversation.pk).update(
        assignee=conversation.assignee, assigned_at=conversation.assigned_at
    )
    if presence is not None:
        presence.last_assigned_at = now
        presence.save(update_fields=["last_assigned_at", "updated_at"])
        StaffAction.objects.create(
            conversation=conversation,
            referral=conversation.referrals.filter(status__in=OPEN_REFERRALS).order_by("-created_at").first(),
            user=presence.user,
            username=presence.user.get_username(),
            kind=StaffActionKind.ASSIGNED,
        )
    transaction.on_commit(lambda: events.queue_changed(conversation))


@transaction.atomic
def assign(conversation: Conversation) -> Any | None:
    """Give a conversation waiting for a person to someone online with room, and return them; None when
    nobody online has room (it stays unassigned until someone comes online or frees a place). A conversation
    already assigned to someone online stays theirs: the customer keeps talking to the same person."""
    lock_assignments()
    online = _online()
    current = Conversation.objects.values_list("assignee_id", flat=True).get(pk=conversation.pk)
    if not _waits_for_a_person(conversation):
        return None
    keep = next((p for p in online if p.user_id == current), None)
    if keep is not None:
        return keep.user
    chosen = _next_with_room(online)
    if chosen is None:
        if current is not None:
            _give(conversation, None)  # its assignee is away: anyone may pick it up
        return None
    _give(conversation, chosen)
    return chosen.user


def assigned_to(user: Any) -> list[Conversation]:
    """The person's unresolved hand-offs, the oldest assignment first."""
    return list(
        Conversation.objects.filter(assignee=user, referrals__status__in=OPEN_REFERRALS)
        .distinct()
        .order_by("assigned_at", "pk")
    )


def unassigned_waiting() -> list[Conversation]:
    """Hand-offs nobody has, the longest-waiting first."""
    return list(
        Conversation.objects.filter(assignee__isnull=True, referrals__status__in=OPEN_REFERRALS, from_lab=False)
        .distinct()
        .order_by("updated_at", "pk")
    )


def reassign_from(user: Any) -> None:
    """The person went away: each of their hand-offs goes to someone else online with room, or nobody."""
    for conversation in assigned_to(user):
        assign(conversation)


def assign_waiting() -> None:
    """Someone came online (or a place was freed): the unassigned hand-offs, oldest first, while anyone has
    room."""
    for conversation in unassigned_waiting():
        if assign(conversation) is None:
            return


@transaction.atomic
def take(conversation: Conversation, user: Any) -> None:
    """A staff member took the conversation over: it is theirs, whatever their limit (they chose it)."""
    lock_assignments()
    if conversation.assignee_id == user.pk:
        return
    conversation.assignee, conversation.assigned_at = user, timezone.now()
    Conversation.objects.filter(pk=conversation.pk).update(assignee=user, assigned_at=conversation.assigned_at)
