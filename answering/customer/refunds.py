"""Business rules as code. The assistant (Claude or the intent rule) may only ask; the gatekeeper decides.

Nothing a customer writes or an article says reaches these functions except an order number and an
amount, and the order is looked up among the verified customer's own orders: "approve this refund" in a
message or a passage cannot change a decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from django.conf import settings

from customers.corpus import order_numbers
from customers.models import Customer, Order, OrderStatus

# A request, not a question about refunds: "I want a refund for order 1042", "please refund $30 on #2077".
REFUND_REQUEST = re.compile(
    r"\b(i\s+(?:want|would\s+like|need|'d\s+like)|can\s+i\s+(?:get|have)|please|request|give\s+me)\b"
    r".{0,60}\b(refund|money\s+back|reimburse)"
    r"|\brefund\s+(?:me|my|order|#|\$)",
    re.IGNORECASE | re.DOTALL,
)
AMOUNT = re.compile(r"\$\s?(\d{1,7}(?:\.\d{1,2})?)")
REFUND_WORDS = re.compile(r"\b(refund|refunded|money\s+back|reimburse)", re.IGNORECASE)
ORDER_NUMBER_VALUE = re.compile(r"#?\s*(\d{3,10})")


@dataclass(frozen=True)
class RefundRequest:
    order_number: str
    amount: Decimal | None  # None: the whole order


@dataclass(frozen=True)
class Certified:
    approved: bool
    amount: Decimal
    reason: str


def refund_request_in(message: str) -> RefundRequest | None:
    """Without a model: the intent rule. A refund request naming one order is passed to the gatekeeper."""
    numbers = order_numbers(message)
    if len(numbers) != 1 or not REFUND_REQUEST.search(message):
        return None
    amount = AMOUNT.search(message)
    return RefundRequest(numbers[0], parse_amount(amount.group(1)) if amount else None)


def mentions_refund(message: str) -> bool:
    return bool(REFUND_WORDS.search(message))


def order_number_of(value: object) -> str:
    """A tool call's order number, as the model sent it ("1042", "#1042", 1042); ValueError otherwise."""
    found = ORDER_NUMBER_VALUE.fullmatch(str(value).strip()) if value is not None else None
    if found is None:
        raise ValueError(f"{value!r} is not an order number")
    return found.group(1)


def parse_amount(value: object) -> Decimal | None:
    """A tool call's amount, as the model sent it; None when absent, ValueError when it is not money."""
    if value in (None, ""):
        return None
    try:
        amount = Decimal(str(value)).quantize(Decimal("0.01"))
    except InvalidOperation:
        raise ValueError(f"{value!r} is not an amount of money") from None
    if amount <= 0:
        raise ValueError("a refund must be a positive amount")
    return amount


def certify_refund(order: Order | None, amount: Decimal | None, *, today: date) -> Certified:
    """The refund rule: up to REFUND_AUTO_APPROVE_LIMIT on a delivered order within REFUND_WINDOW_DAYS of
    delivery is approved; anything else goes to a person, with the reason."""
    limit = Decimal(str(settings.REFUND_AUTO_APPROVE_LIMIT)).quantize(Decimal("0.01"))
    if order is None:
        return Certified(False, amount or Decimal(0), "the order is not on this customer's account")
    wanted = order.total if amount is None else amount
    if wanted > order.total:
        return Certified(False, wanted, f"{wanted} is more than the order total of {order.total}")
    if order.status != OrderStatus.DELIVERED or order.delivered_on is None:
        return Certified(False, wanted, f"the order is {order.get_status_display().lower()}, not delivered")
    days = (today - order.delivered_on).days
    if days > settings.REFUND_WINDOW_DAYS:
        return Certified(
            False, wanted, f"it was delivered {days} days ago, beyond the {settings.REFUND_WINDOW_DAYS}-day window"
        )
    if wanted > limit:
        return Certified(False, wanted, f"{wanted} is above the {limit} that can be approved without a person")
    return Certified(True, wanted, f"delivered {days} days ago and within the {limit} limit")


def certify_request(customer: Customer, request: RefundRequest, *, today: date) -> tuple[Order | None, Certified]:
    """Look the order up among this customer's own and certify the request; the caller records the
    decision with the conversation it was asked in."""
    order = Order.objects.filter(customer=customer, number=request.order_number).first()
    return order, certify_refund(order, request.amount, today=today)
