"""The per-request corpus of one verified customer: their orders and facts as self-contained passages (the
turn cites them as verified evidence).

Built for each turn from that customer's rows alone and never indexed, so no ranking bug can put another
customer's order in front of them: an order number that is not theirs finds nothing, whoever owns it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from customers.facts import current_facts
from customers.models import Customer, Order

# "order 1042", "order #1042", "order no. 1042", "#1042": the ways customers name an order.
ORDER_NUMBER = re.compile(r"(?:\border\b\s*(?:no\.?|number|num\.?)?\s*#?\s*|#\s*)(\d{3,10})\b", re.IGNORECASE)
# Questions about "my order(s)" without a number get the customer's most recent orders.
ORDER_WORDS = re.compile(
    r"\b(my|our)\s+(order|orders|parcel|package|delivery|purchase)\b|\bwhere\s+is\s+my\b", re.IGNORECASE
)
RECENT_ORDERS = 2


def order_numbers(text: str) -> list[str]:
    return list(dict.fromkeys(ORDER_NUMBER.findall(text)))


def _day(value: date) -> str:
    return f"{value.day} {value:%B %Y}"


def _money(value: object) -> str:
    return f"${value}"


def order_passage(order: Order) -> str:
    """One order as self-contained sentences: each names the order, so a quoted sentence stands alone."""
    n = f"Order #{order.number}"
    sentences = [f"{n} was placed on {_day(order.placed_on)} and its status is {order.get_status_display().lower()}."]
    if order.shipped_on:
        carrier = f" with {order.carrier}" if order.carrier else ""
        tracking = f", tracking number {order.tracking_number}" if order.tracking_number else ""
        sentences.append(f"{n} was shipped on {_day(order.shipped_on)}{carrier}{tracking}.")
    if order.delivered_on:
        sentences.append(f"{n} was delivered on {_day(order.delivered_on)}.")
    elif order.shipped_on:
        sentences.append(f"{n} has not been delivered yet.")
    items = "; ".join(f"{line.quantity} × {line.product} at {_money(line.unit_price)}" for line in order.lines.all())
    if items:
        sentences.append(f"{n} contains {items}.")
    sentences.append(f"The total of {n} is {_money(order.total)}.")
    return " ".join(sentences)


@dataclass(frozen=True)
class OrdersAsked:
    found: list[Order] = field(default_factory=list)
    # Numbers the customer named that are not theirs: answered with "not on your account", nothing more.
    not_found: list[str] = field(default_factory=list)


def orders_asked_about(customer: Customer, message: str) -> OrdersAsked:
    """The customer's orders the message is about: named by number, or their latest when they ask about
    "my order"."""
    numbers = order_numbers(message)
    orders = Order.objects.filter(customer=customer).prefetch_related("lines")
    if numbers:
        found = list(orders.filter(number__in=numbers))
    elif ORDER_WORDS.search(message):
        found = list(orders.order_by("-placed_on", "-number")[:RECENT_ORDERS])
    else:
        found = []
    mine = {o.number for o in found}
    return OrdersAsked(found, [n for n in numbers if n not in mine])


def facts_passage(customer: Customer) -> str:
    """The customer's facts in force as sentences; empty when there are none."""
    facts = current_facts(customer)
    return " ".join(f"The customer's {key.replace('_', ' ')} is {fact.value}." for key, fact in sorted(facts.items()))
