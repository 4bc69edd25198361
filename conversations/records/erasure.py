"""Erasing what is kept about a customer, on their request (the right to erasure): the shop's data about them
and what their conversations left, so it lives in the app that depends on both."""

from dataclasses import dataclass, fields

from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from conversations.models import (
    Claim,
    Conversation,
    ConversationSummary,
    Message,
    Referral,
    RefundDecision,
    StaffAction,
    Turn,
)
from customers.models import Customer, CustomerFact, Order, OrderLine


@dataclass(frozen=True)
class ErasureReport:
    """How many rows of each kind an erasure deletes (or deleted)."""

    conversations: int
    messages: int
    turns: int
    claims: int
    referrals: int
    staff_actions: int
    conversation_summaries: int
    facts: int
    refund_decisions: int
    orders: int
    order_lines: int

    def counts(self) -> list[tuple[str, int]]:
        """(kind, count) in order, the kind written for people."""
        return [(f.name.replace("_", " "), getattr(self, f.name)) for f in fields(self)]

    def __str__(self) -> str:
        return ", ".join(f"{kind}: {count}" for kind, count in self.counts())


def erasure_preview(customer: Customer) -> ErasureReport:
    """What erasing the customer would delete now."""
    return ErasureReport(
        conversations=Conversation.objects.filter(customer=customer).count(),
        messages=Message.objects.filter(conversation__customer=customer).count(),
        turns=Turn.objects.filter(conversation__customer=customer).count(),
        claims=Claim.objects.filter(turn__conversation__customer=customer).count(),
        referrals=Referral.objects.filter(conversation__customer=customer).count(),
        staff_actions=StaffAction.objects.filter(conversation__customer=customer).count(),
        conversation_summaries=ConversationSummary.objects.filter(
            Q(customer=customer) | Q(conversation__customer=customer)
        ).count(),
        facts=CustomerFact.objects.filter(customer=customer).count(),
        refund_decisions=RefundDecision.objects.filter(order__customer=customer).count(),
        orders=Order.objects.filter(customer=customer).count(),
        order_lines=OrderLine.objects.filter(order__customer=customer).count(),
    )


def erase_customer(customer: Customer) -> ErasureReport:
    """Delete everything kept about the customer, in one transaction: their conversations (with the messages,
    turns, claims, referrals and staff actions under them), facts, conversation summaries, orders (with their
    lines and refund decisions). The Customer row stays, blanked and marked erased, as a tombstone: a token
    for this customer id is refused from then on, and the loader will not load them again. The admin log's
    names for the row are blanked too. Erasing an erased customer deletes nothing more.

    Two copies are out of its reach: the logs, where personal data was already masked as it was written, and
    database backups, which keep what they hold until they expire (restoring one must be followed by
    erasing again the customers erased since)."""
    with transaction.atomic():
        # FOR UPDATE also makes rows being inserted that point at the customer (a new conversation, a
        # concurrent load's order or fact) wait until the erasure has committed; the loader and the fact store
        # lock the customer too, and then find it erased.
        tombstone = Customer.objects.select_for_update().get(pk=customer.pk)
        report = erasure_preview(tombstone)
        Conversation.objects.filter(customer=tombstone).delete()
        ConversationSummary.objects.filter(customer=tombstone).delete()
        CustomerFact.objects.filter(customer=tombstone).delete()
        Order.objects.filter(customer=tombstone).delete()
        tombstone.name, tombstone.email, tombstone.is_member = "", "", False
        tombstone.erased_at = tombstone.erased_at or timezone.now()
        tombstone.save(update_fields=["name", "email", "is_member", "erased_at"])
        # Each admin log entry keeps the row's str() of its day, which named the customer.
        LogEntry.objects.filter(
            content_type=ContentType.objects.get_for_model(Customer), object_id=str(tombstone.pk)
        ).update(object_repr=str(tombstone))
    customer.refresh_from_db()
    return report
