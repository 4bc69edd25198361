"""A customer message on its way in, whichever channel brought it: checked, stored before anything acts on it,
and claimed by the one worker that answers it."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from conversations.errors import TurnError
from conversations.models import (
    Conversation,
    Message,
    Role,
)

MAX_MESSAGE_CHARS = 2000


def validate_message(text: object) -> str:
    if not isinstance(text, str):
        raise TurnError("A message must be text.")
    cleaned = text.replace("\x00", "").strip()
    if not cleaned:
        raise TurnError("The message is empty.")
    if len(cleaned) > MAX_MESSAGE_CHARS:
        raise TurnError(f"The message is {len(cleaned)} characters long; the limit is {MAX_MESSAGE_CHARS}.")
    return cleaned


def store_customer_message(conversation: Conversation, text: object, client_id: str = "") -> tuple[Message, bool]:
    """Store a customer message before anything acts on it. A client id already stored in this
    conversation (a resend after a reconnect) returns the stored message and False."""
    cleaned = validate_message(text)
    if client_id:
        message, created = Message.objects.get_or_create(
            conversation=conversation, client_id=client_id, defaults={"role": Role.CUSTOMER, "text": cleaned}
        )
        return message, created
    return Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text=cleaned), True


def claimable(messages: QuerySet[Message]) -> QuerySet[Message]:
    """Customer messages nobody is answering: never claimed, or claimed longer than CHAT_STALE_TURN_S ago
    without an answer (the worker died)."""
    stale = timezone.now() - timedelta(seconds=settings.CHAT_STALE_TURN_S)
    return messages.filter(role=Role.CUSTOMER, turn__isnull=True).filter(
        Q(answer_started_at__isnull=True) | Q(answer_started_at__lt=stale)
    )


def claim_answer(message: Message) -> bool:
    """Take the job of answering this message; False when it is answered, or being answered elsewhere."""
    return claimable(Message.objects.filter(pk=message.pk)).update(answer_started_at=timezone.now()) == 1
