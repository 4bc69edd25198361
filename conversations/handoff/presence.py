"""Whether a staff member takes hand-offs now. They say so in the queue page (over its socket); they are
away as soon as their last queue socket closes, or once none of their sockets has sent a heartbeat for
PRESENCE_LAPSES_AFTER_S (the process holding them stopped without closing them). Going online hands them
waiting unassigned conversations; going away hands theirs to someone else online (conversations/handoff/assignment.py).

Plain synchronous functions: the staff socket calls them in Channels' database thread.
"""

from __future__ import annotations

import functools
from typing import Any

from django.db import transaction
from django.utils import timezone

from conversations.chat import events
from conversations.errors import ChatError
from conversations.handoff.assignment import assign_waiting, lock_assignments, reassign_from
from conversations.models import PresenceStatus, StaffPresence, presence_cutoff


def presence_of(user: Any) -> StaffPresence:
    presence, _ = StaffPresence.objects.get_or_create(user=user)
    return presence


def _change(presence: StaffPresence, status: str) -> None:
    presence.status = status
    presence.save(update_fields=["status", "open_sockets", "updated_at"])
    if status == PresenceStatus.ONLINE:
        assign_waiting()
    else:
        reassign_from(presence.user)


def _lapsed(presence: StaffPresence) -> bool:
    return presence.seen_at is None or presence.seen_at < presence_cutoff(timezone.now())


@transaction.atomic
def socket_opened(user: Any) -> StaffPresence:
    lock_assignments()
    presence = presence_of(user)
    if _lapsed(presence):
        # Sockets counted but silent this long belonged to a process that stopped: none of them is open.
        presence.open_sockets = 0
    presence.open_sockets += 1
    presence.seen_at = timezone.now()
    presence.save(update_fields=["open_sockets", "seen_at", "updated_at"])
    return presence


def heartbeat(user: Any) -> None:
    """One of the person's queue sockets is still open; anyone online whose sockets all fell silent is
    made away, and their hand-offs move on."""
    now = timezone.now()
    StaffPresence.objects.filter(user=user).update(seen_at=now)
    if StaffPresence.objects.lapsed(now).exists():
        expire_lapsed()


@transaction.atomic
def expire_lapsed() -> list[StaffPresence]:
    """Make away everyone online whose sockets have all been silent too long; returns them."""
    lock_assignments()
    lapsed = list(StaffPresence.objects.lapsed(timezone.now()).select_related("user"))
    for presence in lapsed:
        presence.open_sockets = 0
        _change(presence, PresenceStatus.AWAY)
        transaction.on_commit(functools.partial(events.presence_changed, presence.user_id, PresenceStatus.AWAY))
    return lapsed


@transaction.atomic
def socket_closed(user: Any) -> StaffPresence:
    """One queue socket fewer; with none left an online person is away, and their hand-offs move on."""
    lock_assignments()
    presence = presence_of(user)
    presence.open_sockets = max(0, presence.open_sockets - 1)
    if presence.open_sockets == 0 and presence.status == PresenceStatus.ONLINE:
        _change(presence, PresenceStatus.AWAY)
    else:
        presence.save(update_fields=["open_sockets", "updated_at"])
    return presence


@transaction.atomic
def set_status(user: Any, status: str) -> StaffPresence:
    """The person's choice in the queue page: "online" or "away" (checked by the socket's frame parser)."""
    lock_assignments()
    presence = presence_of(user)
    if status == PresenceStatus.ONLINE and presence.open_sockets == 0:
        # Nothing would ever drop them to away again, so hand-offs would wait for someone not watching.
        raise ChatError("queue_not_open", "Only someone with the hand-off queue open can be online.")
    if status != presence.status:
        _change(presence, status)
    # Every queue page the person has open shows the change (the one that asked included).
    transaction.on_commit(lambda: events.presence_changed(presence.user_id, status))
    return presence
