"""A customer message on its way in, whichever channel brought it: checked, stored before anything acts on it,
and claimed by the one worker that answers it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
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


@dataclass(frozen=True)
class Incoming:
    """A customer message that passed validate_message, on its way into the database."""

    conversation: Conversation  # may be unsaved: a conversation is stored with its first message
    text: str
    client_id: str = ""


def store_customer_messages(batch: list[Incoming]) -> list[tuple[Message, bool]]:
    """Store several customers' messages with one commit, each as store_customer_message would: what their
    acknowledgements wait for, so at 200 messages at once the database is asked twice, not 600 times."""
    new = {id(item.conversation): item.conversation for item in batch if item.conversation.pk is None}
    # Committed on their own: a conversation row without a message is what a failure here leaves, as before.
    Conversation.objects.bulk_create(new.values())
    try:
        with transaction.atomic():
            return _store_batch(batch, new_conversations=set(new))
    except IntegrityError:
        # A resend of one of these messages was stored elsewhere (another server process) since the check.
        return [store_customer_message(item.conversation, item.text, item.client_id) for item in batch]


def _store_batch(batch: list[Incoming], new_conversations: set[int]) -> list[tuple[Message, bool]]:
    # Only a conversation that existed before this batch can hold a resend's first copy.
    keyed = [item for item in batch if item.client_id and id(item.conversation) not in new_conversations]
    stored: dict[tuple[int, str], Message] = {}
    if keyed:
        candidates = Message.objects.filter(
            conversation_id__in={item.conversation.pk for item in keyed},
            client_id__in={item.client_id for item in keyed},
        )
        stored = {(message.conversation_id, message.client_id): message for message in candidates}
    results: list[tuple[Message, bool] | None] = []
    fresh: list[Message] = []
    for item in batch:
        key = (item.conversation.pk, item.client_id)
        if item.client_id and key in stored:
            results.append((stored[key], False))
            continue
        message = Message(conversation=item.conversation, role=Role.CUSTOMER, text=item.text, client_id=item.client_id)
        if item.client_id:
            stored[key] = message  # the same message twice in one batch: the second is the resend
        fresh.append(message)
        results.append(None)
    Message.objects.bulk_create(fresh)
    created = iter(fresh)
    return [result if result is not None else (next(created), True) for result in results]


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
