"""A customer's thumbs up or down on an assistant reply: checked against their own conversation, stored one
per reply (a second rating replaces the first), and shown to staff.

The reason a customer gives is stored masked, like every other copy of their words outside Message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from answering.privacy.masking import mask_pii
from conversations.chat import events
from conversations.errors import ChatError
from conversations.models import Conversation, ConversationStatus, FeedbackRating, Message, Role, Turn, TurnFeedback

REASON_FIELD_CHARS = TurnFeedback._meta.get_field("reason").max_length or 300


def reply_turn(conversation: Conversation, reply_seq: int, *, verb: str = "rate", done: str = "rated") -> Turn:
    """The turn whose reply has this seq, when it is one of this conversation's assistant replies;
    ChatError naming what is wrong otherwise, in words for what the customer meant to do with it
    (``verb`` "rate", ``done`` "rated"; a declined suggestion's hand-off says "hand off", "handed off")."""
    message = Message.objects.filter(pk=reply_seq).select_related("answered_turn").first()
    if message is None:
        raise ChatError("unknown_reply", f"There is no reply {reply_seq} to {verb}.")
    if conversation.pk is None or message.conversation_id != conversation.pk:
        raise ChatError("not_your_reply", f"Reply {reply_seq} is not in this conversation; {verb} only its replies.")
    turn = getattr(message, "answered_turn", None)
    if message.role != Role.ASSISTANT or turn is None:
        raise ChatError("not_a_reply", f"Message {reply_seq} is not an assistant reply; only those can be {done}.")
    return turn


@transaction.atomic
def give_feedback(conversation: Conversation, *, reply_seq: int, rating: str, reason: str = "") -> TurnFeedback:
    """Store the customer's rating of one reply (replacing an earlier one), tell their other tabs, and
    refresh the staff queue's card when the conversation is in it."""
    turn = reply_turn(conversation, reply_seq)
    # Masking may lengthen the text (an address becomes <EMAIL_ADDRESS_1>); the column holds 300.
    masked = mask_pii(reason).text[:REASON_FIELD_CHARS] if reason else ""
    feedback, _ = TurnFeedback.objects.update_or_create(turn=turn, defaults={"rating": rating, "reason": masked})
    frame = {"type": "feedback", "seq": reply_seq, "rating": rating}
    # The connection's copy of the conversation is as old as the connection; staff may have taken it since.
    conversation.refresh_from_db(fields=["status"])
    waiting = conversation.status in (ConversationStatus.REFERRED, ConversationStatus.HUMAN)
    transaction.on_commit(lambda: _announce(conversation, frame, waiting))
    return feedback


def _announce(conversation: Conversation, frame: dict[str, Any], waiting: bool) -> None:
    events.to_customer(conversation, frame)
    if waiting:
        events.queue_changed(conversation)


def rating_of(turn: Turn) -> str | None:
    """The reply's current rating, for the frames that carry it (None when not rated)."""
    try:
        return turn.feedback.rating
    except TurnFeedback.DoesNotExist:
        return None


@dataclass(frozen=True)
class ShownFeedback:
    """One rating as the staff queue shows it: on which reply, which way, and why."""

    reply: str
    rating: str
    label: str
    reason: str
    updated_at: Any


def conversation_feedback(conversation: Conversation) -> list[ShownFeedback]:
    """The conversation's ratings, oldest reply first (reasons are stored masked, so anyone on staff sees them)."""
    rows = TurnFeedback.objects.filter(turn__conversation=conversation).select_related("turn").order_by("turn_id")
    return [
        ShownFeedback(row.turn.reply, row.rating, FeedbackRating(row.rating).label, row.reason, row.updated_at)
        for row in rows
    ]
