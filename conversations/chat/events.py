"""Telling the people watching: the customer's open widgets and the staff queue, over the channel layer.

Callable from synchronous code (a view, the turn's worker thread); the channel layer is in-memory in one
process, or Redis when several server processes share conversations.
"""

import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from conversations.models import Conversation

STAFF_GROUP = "staff.queue"


def staff_member_group(user_id: int) -> str:
    """Every queue page one staff member has open."""
    return f"staff.member.{user_id}"


def conversation_group(public_id: uuid.UUID) -> str:
    return f"chat.{public_id.hex}"


def _send(group: str, event: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group, event)


def to_customer(conversation: Conversation, frame: dict[str, Any]) -> None:
    """A frame for every widget showing this conversation (the customer's tabs and reconnections)."""
    _send(conversation_group(conversation.public_id), {"type": "chat.frame", "frame": frame})


def queue_changed(conversation: Conversation) -> None:
    """The conversation's card in the staff queue is out of date (a lab conversation has no card)."""
    if conversation.from_lab:
        return
    _send(STAFF_GROUP, {"type": "queue.changed", "conversation": str(conversation.public_id)})


def presence_changed(user_id: int, status: str) -> None:
    """The staff member is now online or away: their open queue pages show it."""
    _send(staff_member_group(user_id), {"type": "presence.changed", "status": status})
