"""Whether a staff member takes hand-offs now. They say so in the queue page (over its socket); they are
away as soon as their last queue socket closes. Going online hands them waiting unassigned conversations;
going away hands theirs to someone else online (conversations/assignment.py).

Plain synchronous functions: the staff socket calls them in Channels' database thread.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from conversations import events
from conversations.assignment import assign_waiting, lock_assignments, reassign_from
from conversations.errors import ChatError
from conversations.models import PresenceStatus, StaffPresence


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


@transaction.atomic
def socket_opened(user: Any) -> StaffPresence:
    lock_assignments()
    presence = presence_of(user)
    presence.open_sockets += 1
    presence.save(update_fields=["open_sockets", "updated_at"])
    return presence


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
