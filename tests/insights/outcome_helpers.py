"""Conversations with known outcomes, built with the ORM at chosen times (created_at is auto_now_add, so each
row's time is set with .update() right after it is created)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth import get_user_model

from answering.outcome import Decision, HandoffReason
from conversations.models import Conversation, Message, Referral, Role, StaffAction, StaffActionKind, Turn, TurnFeedback
from knowledge.models import Collection, EmbeddingSpace

REPLY_TAKES = timedelta(seconds=2)


def collection(name: str) -> Collection:
    space, _ = EmbeddingSpace.objects.get_or_create(model_name="test-model", dimension=4, weights_sha256="0" * 64)
    return Collection.objects.create(name=name, embedding_space=space)


def _at(row, when: datetime):
    type(row).objects.filter(pk=row.pk).update(created_at=when)
    row.created_at = when
    return row


def conversation(where: Collection, started: datetime, *, from_lab: bool = False) -> Conversation:
    return _at(Conversation.objects.create(collection=where, from_lab=from_lab), started)


def customer_says(chat: Conversation, when: datetime, text: str = "a question") -> Message:
    return _at(Message.objects.create(conversation=chat, role=Role.CUSTOMER, text=text), when)


def turn(
    chat: Conversation,
    asked: datetime,
    decision: str = Decision.ANSWERED,
    *,
    latency_ms: float | None = None,
    rating: str | None = None,
) -> Turn:
    """A customer message at `asked` and the assistant's reply REPLY_TAKES later (the turn's time)."""
    question = customer_says(chat, asked)
    reply = _at(Message.objects.create(conversation=chat, role=Role.ASSISTANT, text="a reply"), asked + REPLY_TAKES)
    latency = {"retrieve": 1.0, "total": latency_ms} if latency_ms is not None else {}
    made = _at(
        Turn.objects.create(
            conversation=chat, customer_message=question, reply_message=reply, decision=decision, latency_ms=latency
        ),
        asked + REPLY_TAKES,
    )
    if rating is not None:
        TurnFeedback.objects.create(turn=made, rating=rating)
    return made


def hand_off(on: Turn, when: datetime, reason: str = HandoffReason.NO_KNOWLEDGE) -> Referral:
    return _at(Referral.objects.create(turn=on, conversation=on.conversation, reason_code=reason, reason="test"), when)


def staff_replies(referral: Referral, when: datetime, kind: str = StaffActionKind.REPLY) -> StaffAction:
    user, _ = get_user_model().objects.get_or_create(username="sam", defaults={"is_staff": True})
    return _at(
        StaffAction.objects.create(
            conversation=referral.conversation, referral=referral, user=user, username="sam", kind=kind
        ),
        when,
    )
