"""Answering on its own: a question answered from the sample help centre with the real models, with no
conversation, message or turn in the database before or after, and nothing written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from answering.decide.abstention import default_model
from answering.outcome import Decision
from answering.pipeline import answer
from answering.question import ASSISTANT, CUSTOMER, Question
from conversations.models import Conversation, Message, RefundDecision, Turn
from customers.models import Customer, Order, OrderStatus
from knowledge.models import Collection
from supportbot.stopwatch import Stopwatch
from tests.answering.fakes import services

pytestmark = pytest.mark.django_db


def ask(
    collection: Collection, text: str, *, history: Sequence[tuple[str, str]] = (), customer: Customer | None = None
) -> Question:
    return Question(
        text=text,
        collection=collection,
        audience="public",
        today=timezone.localdate(),
        # The answer cut where the shipped default starts suggesting: these tests are of what answering
        # does once it answers, not of where the cut sits (tests/answering/test_abstention.py).
        decision=replace(default_model(), cut=default_model().suggests_from),
        history=history,
        customer=customer,
    )


def test_a_question_is_answered_without_a_conversation(helpcentre, embedder):
    watch = Stopwatch()
    outcome = answer(
        ask(helpcentre, "how long until my money back shows on my card"), services=services(embedder), watch=watch
    )

    assert outcome.decision == Decision.ANSWERED, outcome.notes
    assert "5 to 10 business days" in outcome.reply
    assert outcome.verdicts and all(v.supported for v in outcome.verdicts)
    assert (
        outcome.context is not None and outcome.context.passage(outcome.verdicts[0].citations[0]).article == "refunds"
    )
    assert {"mask", "rewrite", "retrieve", "score_evidence", "generate", "ground"} <= set(watch.laps_ms)
    assert not Conversation.objects.exists() and not Message.objects.exists() and not Turn.objects.exists()


def test_a_follow_up_reads_the_history_it_is_given(helpcentre, embedder):
    history = [(CUSTOMER, "How long do refunds take?"), (ASSISTANT, "Refunds take 5 to 10 business days.")]
    outcome = answer(
        ask(helpcentre, "what about for store credit?", history=history), services=services(embedder), watch=Stopwatch()
    )
    assert "refund" in outcome.query.lower() and "store credit" in outcome.query.lower(), outcome.query


def test_a_refund_is_decided_and_handed_back_for_the_caller_to_record(helpcentre, embedder):
    customer = Customer.objects.create(external_id="c-1001", name="Alex Morgan")
    delivered = timezone.localdate() - timedelta(days=5)
    placed = delivered - timedelta(days=3)
    order = Order.objects.create(
        customer=customer,
        number="1042",
        status=OrderStatus.DELIVERED,
        placed_on=placed,
        delivered_on=delivered,
        total=Decimal("40.00"),
    )
    outcome = answer(
        ask(helpcentre, "I want a refund of $30 for order 1042", customer=customer),
        services=services(embedder),
        watch=Stopwatch(),
    )
    assert outcome.decision == Decision.ANSWERED and "approved a refund of $30.00" in outcome.reply
    assert outcome.refund is not None and outcome.refund.order == order and outcome.refund.approved
    assert outcome.refund.amount == Decimal("30.00") and outcome.refund.via == "intent"
    assert not RefundDecision.objects.exists()
