"""A customer with something of everything that erasure must reach."""

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User

from conversations.models import (
    Claim,
    Conversation,
    ConversationSummary,
    Message,
    Referral,
    RefundDecision,
    Role,
    StaffAction,
    StaffActionKind,
    Turn,
)
from customers.models import Customer
from knowledge.models import Collection, EmbeddingSpace

SAMPLE_CUSTOMERS = Path(settings.BASE_DIR) / "customers" / "sample" / "customers.json"


def make_collection() -> Collection:
    space = EmbeddingSpace.objects.create(model_name="test-model", dimension=384, weights_sha256="0" * 64)
    return Collection.objects.create(name="helpcentre", embedding_space=space)


@dataclass
class History:
    conversation: Conversation
    refund: RefundDecision


def give_history(customer: Customer, collection: Collection) -> History:
    """A referred conversation in which the customer gave their name and email, a staff reply repeating the
    email, its summary, and a refund decision on the customer's first order."""
    conversation = Conversation.objects.create(collection=collection, customer=customer)
    asked = Message.objects.create(
        conversation=conversation,
        role=Role.CUSTOMER,
        text=f"I am {customer.name} ({customer.email}); can I have my money back?",
        client_id="m-1",
    )
    replied = Message.objects.create(conversation=conversation, role=Role.ASSISTANT, text="A person will reply.")
    turn = Turn.objects.create(conversation=conversation, customer_message=asked, reply_message=replied)
    Claim.objects.create(turn=turn, ordinal=0, text="Refunds take 5 days.", verdict="unsupported", tier="similarity")
    referral = Referral.objects.create(turn=turn, conversation=conversation, reason="refund request")
    agent, _ = User.objects.get_or_create(username="agent")
    staff_reply = Message.objects.create(
        conversation=conversation, role=Role.STAFF, text=f"I have written to {customer.email}.", author=agent
    )
    StaffAction.objects.create(
        conversation=conversation,
        referral=referral,
        user=agent,
        username="agent",
        kind=StaffActionKind.REPLY,
        message=staff_reply,
    )
    ConversationSummary.objects.create(
        customer=customer, conversation=conversation, text="Asked for a refund; a person replied."
    )
    refund = RefundDecision.objects.create(
        order=customer.orders.order_by("number")[0],
        amount=Decimal("19.50"),
        approved=False,
        reason="over the limit",
        requested_via="intent",
        conversation=conversation,
    )
    return History(conversation, refund)
