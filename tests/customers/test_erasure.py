"""Erasing a customer: everything kept about them goes, nothing of anyone else, and the preview counts it first."""

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import User

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
from conversations.records.erasure import ErasureReport, erase_customer, erasure_preview
from customers.models import Customer, CustomerFact, Order, OrderLine
from tests.customers.helpers import give_history, make_collection

pytestmark = pytest.mark.django_db

ALEX_EMAIL = "alex.morgan@example.com"
EVERYTHING = ErasureReport(
    conversations=1,
    messages=3,
    turns=1,
    claims=1,
    referrals=1,
    staff_actions=1,
    conversation_summaries=1,
    facts=3,
    refund_decisions=1,
    orders=2,
    order_lines=3,
)


def kept_about(customer: Customer) -> dict[str, int]:
    """Every row that is about the customer, counted by kind."""
    return {
        "conversations": Conversation.objects.filter(customer=customer).count(),
        "messages": Message.objects.filter(conversation__customer=customer).count(),
        "turns": Turn.objects.filter(conversation__customer=customer).count(),
        "claims": Claim.objects.filter(turn__conversation__customer=customer).count(),
        "referrals": Referral.objects.filter(conversation__customer=customer).count(),
        "staff actions": StaffAction.objects.filter(conversation__customer=customer).count(),
        "summaries": ConversationSummary.objects.filter(customer=customer).count(),
        "facts": CustomerFact.objects.filter(customer=customer).count(),
        "refund decisions": RefundDecision.objects.filter(order__customer=customer).count(),
        "orders": Order.objects.filter(customer=customer).count(),
        "order lines": OrderLine.objects.filter(order__customer=customer).count(),
    }


@pytest.fixture
def histories(shop):
    collection = make_collection()
    alex, priya = Customer.objects.get(external_id="c-1001"), Customer.objects.get(external_id="c-2002")
    # An anonymous visitor's conversation is nobody's to erase.
    anonymous = Conversation.objects.create(collection=collection)
    Message.objects.create(conversation=anonymous, role="customer", text="Do you ship to Ireland?")
    return give_history(alex, collection), give_history(priya, collection)


def test_it_erases_everything_kept_about_the_customer_and_nothing_else(histories):
    alex, priya = Customer.objects.get(external_id="c-1001"), Customer.objects.get(external_id="c-2002")
    assert Message.objects.filter(text__contains=ALEX_EMAIL).count() == 2
    priya_before = kept_about(priya)
    messages_before = Message.objects.count()
    LogEntry.objects.log_actions(User.objects.get(username="agent").pk, [alex], CHANGE, change_message="looked")

    report = erase_customer(alex)

    assert report == EVERYTHING
    assert set(kept_about(alex).values()) == {0}
    assert not Message.objects.filter(text__icontains=ALEX_EMAIL).exists()
    assert not Message.objects.filter(text__icontains="Alex Morgan").exists()
    assert Message.objects.count() == messages_before - 3
    assert kept_about(priya) == priya_before
    assert priya.orders.count() == 2 and priya.name == "Priya Shah"
    alex.refresh_from_db()
    assert (alex.external_id, alex.name, alex.email, alex.is_member) == ("c-1001", "", "", False)
    assert alex.erased_at is not None
    assert list(LogEntry.objects.values_list("object_repr", flat=True)) == ["c-1001 (erased)"]


def test_the_preview_counts_what_erasing_deletes_without_deleting(histories):
    alex = Customer.objects.get(external_id="c-1001")
    before = kept_about(alex)

    assert erasure_preview(alex) == EVERYTHING
    assert kept_about(alex) == before


def test_erasing_again_changes_nothing(histories):
    alex = Customer.objects.get(external_id="c-1001")
    erase_customer(alex)
    erased_at = alex.erased_at

    again = erase_customer(alex)

    assert set(vars(again).values()) == {0}
    alex.refresh_from_db()
    assert alex.erased_at == erased_at and alex.name == ""


def test_the_report_reads_as_counts(histories):
    report = erasure_preview(Customer.objects.get(external_id="c-1001"))

    assert report.counts()[:2] == [("conversations", 1), ("messages", 3)]
    assert str(report) == (
        "conversations: 1, messages: 3, turns: 1, claims: 1, referrals: 1, staff actions: 1, "
        "conversation summaries: 1, facts: 3, refund decisions: 1, orders: 2, order lines: 3"
    )
