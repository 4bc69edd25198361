"""The hand-off queue's view of a conversation: one card per waiting conversation, rendered for the staff
member looking at it (personal data masked unless they hold the permission)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.template.loader import render_to_string

from answering.outcome import Decision
from answering.privacy.masking import PERSONAL_DATA_PERMISSION
from conversations.chat.feedback import conversation_feedback
from conversations.handoff import notifications
from conversations.models import (
    Conversation,
    ConversationStatus,
    Message,
    PresenceStatus,
    Referral,
    ReferralStatus,
    Role,
    StaffPresence,
)

TRANSCRIPT_MESSAGES = 20


@dataclass(frozen=True)
class ShownMessage:
    role: str
    text: str
    author: str
    created_at: Any


@dataclass(frozen=True)
class ShownReferral:
    referral: Referral
    question: str
    draft: str
    claims: list[Any]
    evidence: list[dict[str, Any]]
    # A suggestion's quoted units (section title, link, text): what the customer was shown and declined.
    suggested: list[dict[str, Any]]


def _shown(message: Message, unmasked: bool) -> ShownMessage:
    author = message.author.get_username() if message.author is not None else ""
    return ShownMessage(message.role, message.words_for(unmasked=unmasked), author, message.created_at)


def card_context(conversation: Conversation, user: Any) -> dict[str, Any]:
    unmasked = user.has_perm(PERSONAL_DATA_PERMISSION)
    referrals = (
        conversation.referrals.exclude(status=ReferralStatus.RESOLVED)
        .select_related("turn__customer_message", "assignee")
        .prefetch_related("turn__claims")
        .order_by("created_at")
    )
    messages = list(conversation.messages.select_related("author").order_by("-pk")[:TRANSCRIPT_MESSAGES])
    first = conversation.messages.filter(role=Role.CUSTOMER).order_by("pk").first()
    return {
        "conversation": conversation,
        # What the conversation is about at a glance: the help centre it was asked in, and its first question.
        "collection": conversation.collection.name,
        "first_question": first.words_for(unmasked=unmasked) if first is not None else "",
        "referrals": [
            ShownReferral(
                referral=r,
                question=r.turn.customer_message.words_for(unmasked=unmasked),
                # A suggestion was sent, and the customer said it did not answer: it is no draft to send.
                draft="" if r.turn.decision == Decision.SUGGESTED else r.turn.draft,
                claims=list(r.turn.claims.all()),
                evidence=[p for p in r.turn.context if p.get("trust") == "retrieved"],
                suggested=list(r.turn.units) if r.turn.decision == Decision.SUGGESTED else [],
            )
            for r in referrals
        ],
        "transcript": [_shown(m, unmasked) for m in reversed(messages)],
        "feedback": conversation_feedback(conversation),
        "email_failures": list(notifications.failed_replies(conversation).values()),
        "assigned": assigned_to_whom(conversation, user),
        "actions": list(conversation.staff_actions.order_by("-created_at")[:10]),
        "suggested_reply": _suggested_reply(conversation, list(referrals)),
    }


def assigned_to_whom(conversation: Conversation, user: Any) -> str:
    """Whom the card is assigned to, as the queue's mine / unassigned / all filter reads it: "you", "other"
    or "none"."""
    if conversation.assignee_id is None:
        return "none"
    return "you" if conversation.assignee_id == user.pk else "other"


def presence_status(user: Any) -> str:
    """The person's presence as stored, "online" or "away" (without a row, they never opened the queue)."""
    presence = StaffPresence.objects.filter(user=user).first()
    return presence.status if presence is not None else PresenceStatus.AWAY


def _suggested_reply(conversation: Conversation, referrals: list[Referral]) -> str:
    """The newest referred draft, for staff to edit, until someone has replied since it was referred."""
    latest = next((r for r in reversed(referrals) if r.turn.draft and r.turn.decision != Decision.SUGGESTED), None)
    if latest is None or conversation.messages.filter(role=Role.STAFF, pk__gt=latest.turn.customer_message_id).exists():
        return ""
    return latest.turn.draft


def render_card(conversation: Conversation, user: Any, request: HttpRequest | None = None) -> str:
    """The card's HTML; with the request its forms carry a CSRF token (cards pushed over the websocket have
    none, and the queue's script sends the page's token with each action instead)."""
    return render_to_string("staff/card.html", card_context(conversation, user), request=request)


def card_frame(public_id: str, user: Any) -> dict[str, Any]:
    """The staff websocket's update for one conversation: its card, or word that it left the queue."""
    conversation = Conversation.objects.select_related("assignee").filter(public_id=public_id).first()
    waiting = conversation is not None and conversation.status in (
        ConversationStatus.REFERRED,
        ConversationStatus.HUMAN,
    )
    return {
        "type": "card",
        "conversation": public_id,
        "waiting": waiting,
        "html": render_card(conversation, user) if waiting and conversation is not None else "",
    }
