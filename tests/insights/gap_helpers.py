"""A small help centre and abstained, referred and answered turns on it, for the content-gap tests."""

from datetime import datetime
from pathlib import Path

from answering.outcome import Decision
from conversations.models import Conversation, Message, Role, Turn
from knowledge.embeddings import Embedder
from knowledge.models import Collection
from tests.knowledge.helpers import sync_folder

ARTICLES = {
    "delivery": (
        "public",
        "# Delivery\n\n## Where we deliver\n\nWe deliver to addresses in the UK, Ireland and France. "
        "Standard delivery takes 3 to 5 working days; large furniture comes with a two-person team.\n",
    ),
    "returns": (
        "public",
        "# Returns\n\n## Returning an item\n\nYou can return most items within 30 days of delivery. "
        "Print the return label from your account and drop the parcel at any post office.\n",
    ),
    "refund-escalation": (
        "staff",
        "# Refund escalation\n\n## Missing card refunds\n\nAgents escalate a card refund that has not arrived "
        "after 10 business days to the payments team, within one working day.\n",
    ),
}


def gap_helpcentre(folder: Path, embedder: Embedder, name: str = "gaps-helpcentre") -> Collection:
    folder.mkdir()
    for slug, (audience, body) in ARTICLES.items():
        (folder / f"{slug}.md").write_text(
            f"---\nid: {slug}\ntitle: {slug.replace('-', ' ').capitalize()}\nversion: '1'\n"
            f"effective_date: 2026-01-01\naudience: {audience}\n---\n\n{body}"
        )
    sync_folder(folder, embedder, collection=name, secondary=None)
    return Collection.objects.get(name=name)


def asked(
    collection: Collection,
    question: str,
    *,
    decision: str = Decision.ABSTAINED,
    audience: str = "public",
    at: datetime | None = None,
    stored_query: str | None = None,
    from_lab: bool = False,
) -> Turn:
    """A turn as the answer turn records it: the raw message, and the masked question on the turn."""
    conversation = Conversation.objects.create(collection=collection, audience=audience, from_lab=from_lab)
    message = Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text=question)
    reply = Message.objects.create(conversation=conversation, role=Role.ASSISTANT, text="I don't know.")
    turn = Turn.objects.create(
        conversation=conversation,
        customer_message=message,
        reply_message=reply,
        rewritten_query=question if stored_query is None else stored_query,
        decision=decision,
    )
    if at is not None:
        Turn.objects.filter(pk=turn.pk).update(created_at=at)
        turn.refresh_from_db()
    return turn


SWITZERLAND = [
    "Do you deliver to Switzerland?",
    "Can you ship my order to Switzerland?",
    "Is delivery to Zurich in Switzerland possible?",
]
GIFT_WRAP = ["How much does gift wrapping cost?", "What do you charge to gift wrap a present?"]
JOBS = "Are you hiring? How do I apply for a job?"
