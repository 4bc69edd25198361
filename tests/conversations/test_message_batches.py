"""Customer messages stored a batch at a time (what acknowledgements wait for): each as if stored alone."""

from __future__ import annotations

import pytest

from conversations.chat.intake import Incoming, store_customer_messages
from conversations.models import Conversation, Message
from knowledge.models import Collection
from tests.customers.helpers import make_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection() -> Collection:
    return make_collection()


def new_conversation(collection: Collection) -> Conversation:
    return Conversation(collection=collection)  # unsaved, as a chat's is until its first message


def test_a_batch_stores_new_conversations_and_each_message_once(collection) -> None:
    first, second = new_conversation(collection), new_conversation(collection)
    results = store_customer_messages(
        [
            Incoming(first, "Where is my order?", "a1"),
            Incoming(second, "Can I return a lamp?", "b1"),
            Incoming(first, "Where is my order?", "a1"),  # a resend within the same batch
        ]
    )
    assert first.pk is not None and second.pk is not None
    assert [created for _, created in results] == [True, True, False]
    assert results[0][0].pk == results[2][0].pk
    assert Conversation.objects.count() == 2
    assert sorted(Message.objects.values_list("client_id", flat=True)) == ["a1", "b1"]


def test_a_resend_in_a_later_batch_returns_the_stored_message(collection) -> None:
    conversation = new_conversation(collection)
    [(stored, _)] = store_customer_messages([Incoming(conversation, "Where is my order?", "a1")])
    results = store_customer_messages(
        [Incoming(conversation, "Where is my order?", "a1"), Incoming(conversation, "And the invoice?", "a2")]
    )
    assert results[0] == (stored, False)
    assert results[1][1] is True
    assert list(conversation.messages.order_by("pk").values_list("text", flat=True)) == [
        "Where is my order?",
        "And the invoice?",
    ]


def test_a_message_stored_elsewhere_meanwhile_falls_back_to_one_at_a_time(collection, monkeypatch) -> None:
    """Another server process stored the resend between the check and the insert: the batch's insert fails
    on the unique client id, and every message is stored (or found) alone instead."""
    conversation = new_conversation(collection)
    conversation.save()
    from conversations.chat import intake

    checked = intake._store_batch

    def racing(batch, new_conversations):
        Message.objects.create(conversation=conversation, role="customer", text="Where is my order?", client_id="a1")
        return checked(batch, new_conversations)

    monkeypatch.setattr(intake, "_store_batch", racing)
    results = store_customer_messages(
        [Incoming(conversation, "Where is my order?", "a1"), Incoming(conversation, "And the invoice?", "a2")]
    )
    assert [created for _, created in results] == [False, True]
    assert conversation.messages.count() == 2
