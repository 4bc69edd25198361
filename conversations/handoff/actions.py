"""A conversation moved between the assistant and a person: the customer asks for one, staff reply, take
over, resolve or hand back, and the queue lists what waits. Plain synchronous functions over the models,
called by the websocket consumers off the event loop and by the staff views; each change is announced to
the customer's widget and the staff queue after commit.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from answering.outcome import Decision, HandoffReason
from answering.privacy.masking import mask_pii
from conversations.chat import events
from conversations.chat.feedback import reply_turn
from conversations.chat.session import announce_status, author_name, issue_token, message_frame
from conversations.errors import ChatError
from conversations.handoff import assignment, notifications
from conversations.models import (
    Conversation,
    ConversationStatus,
    Message,
    Referral,
    ReferralStatus,
    Role,
    StaffAction,
    StaffActionKind,
    Turn,
)

MAX_STAFF_MESSAGE_CHARS = 4000


@transaction.atomic
def request_handoff(conversation: Conversation, declined_seq: int | None = None) -> Referral:
    """The customer asked for a person: a turn goes to the staff queue, and the assistant answers nothing
    more in this conversation until staff hand it back. Without ``declined_seq`` that is their latest turn
    and the reason is that they asked. With it (they answered "No" under a suggestion) it is that reply's
    turn, and a suggestion's reason passes its question on, so staff start from what it did not answer.
    A turn already referred keeps that referral's reason (it came first); a reopened one gets the new one."""
    if declined_seq is not None:
        turn: Turn | None = reply_turn(conversation, declined_seq, verb="hand off", done="handed off")
    else:
        turn = conversation.turns.order_by("-pk").first() if conversation.pk is not None else None
    if turn is None:
        raise ChatError("nothing_to_hand_off", "Ask your question first; a person will see it with the conversation.")
    code, reason = _handoff_reason(turn, declined=declined_seq is not None)
    # The connection's copy of the conversation is as old as the connection; staff may have taken it since.
    conversation.refresh_from_db(fields=["status", "person_requested", "contact_email"])
    referral, created = Referral.objects.get_or_create(
        turn=turn, defaults={"conversation": conversation, "reason_code": code, "reason": reason}
    )
    if not created and referral.status == ReferralStatus.RESOLVED:
        referral.status, referral.resolved_at = ReferralStatus.OPEN, None
        referral.reason_code = code
        again = reason if code == HandoffReason.SUGGESTION_DECLINED else "the customer asked for a person again"
        referral.reason = f"{referral.reason}; {again}"
        referral.save(update_fields=["status", "resolved_at", "reason_code", "reason"])
    if conversation.status == ConversationStatus.OPEN:
        conversation.status = ConversationStatus.REFERRED
    conversation.person_requested = True
    conversation.save(update_fields=["status", "person_requested", "updated_at"])
    assignment.assign(conversation)
    transaction.on_commit(lambda: announce_status(conversation))
    return referral


def _handoff_reason(turn: Turn, *, declined: bool) -> tuple[str, str]:
    """The referral's reason code and reason. A declined suggestion quotes the customer's question, masked
    like every copy of their words outside Message (the queue card shows the reason to all staff)."""
    if declined and turn.decision == Decision.SUGGESTED:
        question = mask_pii(turn.customer_message.text).text
        return HandoffReason.SUGGESTION_DECLINED, f"the suggested section did not answer: “{question}”"
    return HandoffReason.CUSTOMER_ASKED, "the customer asked for a person"


# --- The staff's side -----------------------------------------------------------------------


def _open_referrals(conversation: Conversation) -> list[Referral]:
    return list(conversation.referrals.exclude(status=ReferralStatus.RESOLVED).order_by("created_at"))


def _act(conversation: Conversation, user: Any, kind: str, message: Message | None = None) -> list[Referral]:
    """Record who did what; the open referrals become this person's."""
    referrals = _open_referrals(conversation)
    if not referrals and conversation.status != ConversationStatus.HUMAN and not conversation.person_requested:
        raise ChatError("not_waiting", "This conversation is not waiting for a person.")
    for referral in referrals:
        if referral.status == ReferralStatus.OPEN or kind == StaffActionKind.TAKE_OVER:
            referral.status, referral.assignee = ReferralStatus.CLAIMED, user
            referral.save(update_fields=["status", "assignee"])
    StaffAction.objects.create(
        conversation=conversation,
        referral=referrals[-1] if referrals else None,
        user=user,
        username=user.get_username(),
        kind=kind,
        message=message,
    )
    return referrals


@transaction.atomic
def send_staff_reply(conversation: Conversation, user: Any, text: str) -> Message:
    """A staff member's reply: stored, shown live in the customer's widget, recorded with who and when."""
    cleaned = text.replace("\x00", "").strip()
    if not cleaned:
        raise ChatError("empty", "The reply is empty.")
    if len(cleaned) > MAX_STAFF_MESSAGE_CHARS:
        raise ChatError("too_long", f"The reply is {len(cleaned)} characters; the limit is {MAX_STAFF_MESSAGE_CHARS}.")
    # Inside the transaction: when the conversation is not waiting for a person, the message goes too.
    message = Message.objects.create(conversation=conversation, role=Role.STAFF, text=cleaned, author=user)
    _act(conversation, user, StaffActionKind.REPLY, message)
    conversation.save(update_fields=["updated_at"])
    transaction.on_commit(lambda: _announce_message(message))
    if conversation.contact_email:
        # After commit: a reply rolled back is never mailed, and a failed send cannot undo the reply.
        token, author = issue_token(conversation), author_name(user)
        transaction.on_commit(lambda: notifications.email_staff_reply(message, token=token, author=author))
    return message


def _announce_message(message: Message) -> None:
    events.to_customer(message.conversation, message_frame(message))
    events.queue_changed(message.conversation)


@transaction.atomic
def take_over(conversation: Conversation, user: Any) -> None:
    """A person takes the conversation: the assistant stays silent until it is resolved, and it is theirs."""
    if not _open_referrals(conversation) and conversation.status == ConversationStatus.OPEN:
        _refer_for_take_over(conversation)
    _act(conversation, user, StaffActionKind.TAKE_OVER)
    assignment.take(conversation, user)
    conversation.status = ConversationStatus.HUMAN
    conversation.save(update_fields=["status", "updated_at"])
    transaction.on_commit(lambda: announce_status(conversation))


def _refer_for_take_over(conversation: Conversation) -> None:
    """Staff take over a conversation nobody had referred: the hand-off is recorded against its latest turn
    with the reason "staff took over", so the queue and the analytics count it like any other."""
    turn = conversation.turns.order_by("-pk").first()
    if turn is None:
        raise ChatError("nothing_to_take_over", "The customer has not asked anything yet.")
    referral, created = Referral.objects.get_or_create(
        turn=turn,
        defaults={
            "conversation": conversation,
            "reason_code": HandoffReason.STAFF_TOOK_OVER,
            "reason": "a staff member took the conversation over",
        },
    )
    if not created:  # the turn's earlier referral was resolved: it is open again, with its first reason
        referral.status, referral.resolved_at = ReferralStatus.OPEN, None
        referral.save(update_fields=["status", "resolved_at"])


@transaction.atomic
def resolve(conversation: Conversation, user: Any) -> None:
    """Close every open referral of the conversation; the assistant answers it again, unless the customer
    asked for a person: then it stays in the queue, the assistant silent, until staff hand it back."""
    _release(conversation, user, StaffActionKind.RESOLVE)


@transaction.atomic
def hand_back(conversation: Conversation, user: Any) -> None:
    """Staff give the conversation back to the assistant, the customer's request for a person included."""
    _release(conversation, user, StaffActionKind.HAND_BACK)


def _release(conversation: Conversation, user: Any, kind: str) -> None:
    referrals = _act(conversation, user, kind)
    Referral.objects.filter(pk__in=[r.pk for r in referrals]).update(
        status=ReferralStatus.RESOLVED, resolved_at=timezone.now()
    )
    if kind == StaffActionKind.HAND_BACK:
        conversation.person_requested = False
    conversation.status = ConversationStatus.REFERRED if conversation.person_requested else ConversationStatus.OPEN
    conversation.save(update_fields=["status", "person_requested", "updated_at"])
    assignment.assign_waiting()  # the assignee has a place free
    transaction.on_commit(lambda: announce_status(conversation))


def waiting_conversations() -> list[Conversation]:
    """Conversations a person should look at, the longest-waiting first."""
    return list(
        Conversation.objects.filter(status__in=[ConversationStatus.REFERRED, ConversationStatus.HUMAN], from_lab=False)
        .select_related("collection")
        .order_by("updated_at")
    )
