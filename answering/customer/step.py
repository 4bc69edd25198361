"""The step only a verified customer gets: their orders and facts as verified, citable evidence, and refunds
the gatekeeper certifies."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date

from answering.customer.refunds import (
    RefundRequest,
    certify_request,
    mentions_refund,
    order_number_of,
    parse_amount,
    refund_request_in,
)
from answering.evidence.context import Evidence, Trust
from answering.outcome import Decision, HandoffReason, Outcome, RefundDecided
from answering.providers.base import ProviderUnavailable
from answering.replies import (
    ORDER_NOT_FOUND_REPLY,
    REFUND_APPROVED_REPLY,
    REFUND_REFERRED_REPLY,
    SIGN_IN_REPLY,
)
from answering.services import TurnServices
from customers.corpus import facts_passage, order_numbers, order_passage, orders_asked_about
from customers.models import Customer, Order


def _order_evidence(order: Order, today: date) -> Evidence:
    return Evidence(
        chunk_id=None,
        article=f"order-{order.number}",
        title=f"Order #{order.number}",
        version="",
        effective_date=today.isoformat(),
        heading_path="Your orders",
        text=order_passage(order),
        score=1.0,
        trust=Trust.VERIFIED,
        source="order",
    )


@dataclass(frozen=True)
class CustomerKnowledge:
    evidence: list[Evidence] = field(default_factory=list)
    # Numbers the customer named that are not theirs: answered with "not on your account", nothing more.
    not_found: list[str] = field(default_factory=list)


def customer_knowledge(customer: Customer, message: str, today: date) -> CustomerKnowledge:
    """What the turn may tell this customer about themselves: the orders the message is about, and their
    facts."""
    asked = orders_asked_about(customer, message)
    evidence = [_order_evidence(o, today) for o in asked.found]
    facts = facts_passage(customer)
    if facts:
        evidence.append(
            Evidence(
                None,
                "customer-facts",
                "Your account",
                "",
                today.isoformat(),
                "Your account",
                facts,
                1.0,
                trust=Trust.VERIFIED,
                source="facts",
            )
        )
    return CustomerKnowledge(evidence, asked.not_found)


def customer_step(
    customer: Customer | None, text: str, today: date, services: TurnServices, outcome: Outcome
) -> CustomerKnowledge | None:
    """What only a verified customer may get: their orders and facts, and refunds the gatekeeper certifies.
    None when this step already decided the turn (sign in first, not your order, a refund decision)."""
    if customer is None:
        if order_numbers(text):
            outcome.reply, outcome.notes = SIGN_IN_REPLY, [*outcome.notes, "an order number from an anonymous visitor"]
            return None
        return CustomerKnowledge()
    known = customer_knowledge(customer, text, today)
    if known.not_found and not any(e.source == "order" for e in known.evidence):
        numbers = ", ".join(f"#{n}" for n in known.not_found)
        outcome.reply = ORDER_NOT_FOUND_REPLY.format(numbers=numbers)
        outcome.notes.append(f"order {numbers} is not on this customer's account")
        return None
    request, via = _refund_request(text, services, outcome)
    if request is not None:
        order, certified = certify_request(customer, request, today=today)
        if order is not None:
            outcome.refund = RefundDecided(order, certified.amount, certified.approved, certified.reason, via)
        outcome.generator = "gatekeeper"
        if certified.approved:
            outcome.decision = Decision.ANSWERED
            outcome.reply = REFUND_APPROVED_REPLY.format(amount=certified.amount, number=request.order_number)
        else:
            outcome.decision = Decision.REFERRED
            outcome.reply = REFUND_REFERRED_REPLY.format(number=request.order_number, reason=certified.reason)
            outcome.referral_code = HandoffReason.POLICY
            outcome.referral_reason = f"refund request for order #{request.order_number}: {certified.reason}"
        outcome.notes.append(f"gatekeeper: {'approved' if certified.approved else 'to staff'} ({certified.reason})")
        return None
    # Facts may hold a name: masked like every text that may leave for a model.
    verified = [replace(e, text=services.mask(e.text)) if e.source == "facts" else e for e in known.evidence]
    return CustomerKnowledge(verified, known.not_found)


def _refund_request(text: str, services: TurnServices, outcome: Outcome) -> tuple[RefundRequest | None, str]:
    """A refund request in the message: the model's tool call with a provider (asked only when refunds are
    mentioned), otherwise the intent rule. Either way it is only a request; the gatekeeper decides."""
    if services.model is None or not mentions_refund(text):
        return refund_request_in(text), "intent"
    via = services.model.provider
    try:
        call = services.model.refund_tool_call(message=services.mask(text))
    except ProviderUnavailable as exc:
        outcome.notes.append(f"{via} unavailable for the refund tool ({exc}); the intent rule decided instead.")
        return refund_request_in(text), "intent"
    if call is None:
        return None, via
    try:
        return RefundRequest(order_number_of(call.get("order_number")), parse_amount(call.get("amount"))), via
    except ValueError as exc:
        outcome.notes.append(f"The model's request_refund call was not usable ({exc}); no refund was requested.")
        return None, via
