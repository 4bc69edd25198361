"""Episodic memory: a short summary of each past conversation of a verified customer, offered to later
conversations as background (model trust: never evidence for a claim, never cited). Built from the turns'
masked queries, so no raw personal data is copied into it; erasure deletes it with the customer."""

from __future__ import annotations

from conversations.models import Conversation, ConversationSummary
from customers.models import Customer

SUMMARISED_TURNS = 5
BACKGROUND_SUMMARIES = 3


def summarise(conversation: Conversation) -> str:
    turns = list(conversation.turns.order_by("-pk")[:SUMMARISED_TURNS])
    asked = "; ".join(f"“{t.rewritten_query}” ({t.decision})" for t in reversed(turns) if t.rewritten_query)
    return f"Earlier conversation on {conversation.created_at:%d %B %Y}: the customer asked {asked}." if asked else ""


def remember(conversation: Conversation) -> None:
    if conversation.customer_id is None:
        return
    text = summarise(conversation)
    if text:
        ConversationSummary.objects.update_or_create(
            conversation=conversation, defaults={"customer_id": conversation.customer_id, "text": text}
        )


def background_for(customer: Customer, conversation: Conversation) -> list[str]:
    """Summaries of the customer's other conversations, newest first."""
    summaries = ConversationSummary.objects.filter(customer=customer).exclude(conversation=conversation)
    return [s.text for s in summaries.order_by("-updated_at")[:BACKGROUND_SUMMARIES]]
