"""A suggestion turn as the answer turn records one (decision "suggested", the quoted units with their section
titles and links, the citations and the reply text), made with the ORM: the tests of what happens around a
suggestion (the widget's card, its Yes and No, the hand-off, analytics, content gaps) do not depend on when
the turn decides to suggest."""

from __future__ import annotations

from answering.outcome import Decision
from conversations.models import Conversation, Message, Role, Turn

SECTION_URL = "/help/returns#return-window"
STEPS_URL = "/help/returns#how-to-start-a-return"
# One record per suggested section, as answering/read/suggestion.py stores them: the section's quoted units with
# their citations, a procedure's steps one a line.
UNITS = [
    {
        "passage": 1,
        "kind": "sentence",
        "text": "Oak Circle members have 60 days. [1]",
        "title": "Returns › Return window",
        "heading_path": "Returns › Return window",
        "url": SECTION_URL,
    },
    {
        "passage": 2,
        "kind": "procedure",
        "text": "1. Sign in at lumenoak.example and go to Orders. [2]\n"
        "2. Choose the order and select Return items. [2]\n"
        "3. Pick the items and a reason for each one. [2]",
        "title": "Returns › How to start a return",
        "heading_path": "Returns › How to start a return",
        "url": STEPS_URL,
    },
]
CITATIONS = [
    {"number": 1, "title": "Returns", "heading_path": "Returns › Return window", "version": "1", "url": SECTION_URL},
    {
        "number": 2,
        "title": "Returns",
        "heading_path": "Returns › How to start a return",
        "version": "1",
        "url": STEPS_URL,
    },
]
REPLY = "\n\n".join(
    [
        "This part of our help centre looks like what you're asking about:",
        *(f"{unit['heading_path']} ({unit['url']})\n{unit['text']}" for unit in UNITS),
        "Did this answer your question?",
    ]
)


def suggested_turn(conversation: Conversation, question: str, *, client_id: str = "") -> Turn:
    """The customer's question and the assistant's suggestion in reply, stored as a finished turn."""
    asked = Message.objects.create(conversation=conversation, role=Role.CUSTOMER, text=question, client_id=client_id)
    replied = Message.objects.create(conversation=conversation, role=Role.ASSISTANT, text=REPLY)
    return Turn.objects.create(
        conversation=conversation,
        customer_message=asked,
        reply_message=replied,
        rewritten_query=question,
        reply=REPLY,
        # What grounding checked: the quoted units alone.
        draft="\n\n".join(str(unit["text"]) for unit in UNITS),
        decision=Decision.SUGGESTED,
        units=UNITS,
        citations=CITATIONS,
    )
