"""Loading customers, their orders and facts from a JSON file: the demo shop's sample
(customers/sample/customers.json), or an export from a shop's own system.

The file is a list of customers (annotated here; JSON itself has no comments)::

    [
      {
        "external_id": "c-1001",              the id the host site signs into customer tokens
        "name": "Alex Morgan",                optional
        "email": "alex.morgan@example.com",   optional
        "is_member": true,                    optional, default false
        "facts": {"preferred_name": "Alex"},  optional: key (a slug) → text
        "orders": [                           optional
          {
            "number": "1042",                 text, unique across all customers
            "status": "delivered",            placed, packed, shipped, delivered or cancelled
            "placed_on": "2026-11-15",
            "shipped_on": "2026-11-17",       needed once shipped or delivered
            "delivered_on": "2026-11-20",     needed once delivered
            "carrier": "Parcelforce",         optional
            "tracking_number": "PF4420176GB", optional
            "lines": [{"product": "Linen pillowcase", "quantity": 2, "unit_price": 19.50}]
          }
        ]
      }
    ]

An order's total is the sum of its lines. Loading upserts: a customer by external id (its fields set to what
the file says), an order by number (its lines replaced when they differ), a fact through the fact store (a
new version only when the value changed). Orders and facts the file does not mention are left alone, so
loading the same file twice changes nothing the second time. An order number that belongs to another
customer is an error, never a silent move, and an erased customer's data is not loaded again.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Field, Model

from customers.errors import CustomerDataError, check_field
from customers.facts import current_facts, set_fact
from customers.models import Customer, Order, OrderLine, OrderStatus


@dataclass(frozen=True)
class LineDraft:
    product: str
    quantity: int
    unit_price: Decimal


@dataclass(frozen=True)
class OrderDraft:
    number: str
    status: str
    placed_on: date
    shipped_on: date | None
    delivered_on: date | None
    carrier: str
    tracking_number: str
    lines: tuple[LineDraft, ...]

    @property
    def total(self) -> Decimal:
        return sum((line.unit_price * line.quantity for line in self.lines), Decimal(0))


@dataclass(frozen=True)
class CustomerDraft:
    external_id: str
    name: str
    email: str
    is_member: bool
    facts: Mapping[str, str]
    orders: tuple[OrderDraft, ...]


@dataclass
class LoadReport:
    customers_created: int = 0
    customers_updated: int = 0
    customers_unchanged: int = 0
    orders_created: int = 0
    orders_updated: int = 0
    orders_unchanged: int = 0
    fact_versions_added: int = 0

    def __str__(self) -> str:
        return (
            f"customers: {self.customers_created} created, {self.customers_updated} updated, "
            f"{self.customers_unchanged} unchanged; orders: {self.orders_created} created, "
            f"{self.orders_updated} updated, {self.orders_unchanged} unchanged; "
            f"facts: {self.fact_versions_added} new versions"
        )


def load_customers(path: str | Path) -> LoadReport:
    """Check the whole file, then store it in one transaction: all of it, or nothing and a
    CustomerDataError naming the customer, order and field at fault."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_float=Decimal)
    except OSError as exc:
        raise CustomerDataError(f"{path}: cannot be read ({exc.strerror})") from None
    except ValueError as exc:  # undecodable bytes or malformed JSON
        raise CustomerDataError(f"{path.name}: is not valid JSON ({exc})") from None
    return _store(parse_customers(data, source=path.name), source=path.name)


def parse_customers(data: object, *, source: str) -> list[CustomerDraft]:
    """The customers of a decoded file, checked against the models' rules and each other; reads no database."""
    if not isinstance(data, list):
        raise CustomerDataError(f"{source}: expected a list of customers, got {_kind(data)}")
    customers = [
        _customer(item, f"{source}: customer {_name(item, 'external_id', position)}")
        for position, item in enumerate(data, start=1)
    ]
    seen: set[str] = set()
    owners: dict[str, str] = {}
    for customer in customers:
        if customer.external_id in seen:
            raise CustomerDataError(f"{source}: customer {customer.external_id}: is listed twice")
        seen.add(customer.external_id)
        for order in customer.orders:
            if order.number in owners:
                raise CustomerDataError(
                    f"{source}: customer {customer.external_id} order {order.number}: "
                    f"order {order.number} is also listed under customer {owners[order.number]}"
                )
            owners[order.number] = customer.external_id
    return customers


def _kind(value: object) -> str:
    kinds = {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}
    return kinds.get(type(value), "a number")


def _shown(value: object) -> str:
    """A value as the file wrote it."""
    if isinstance(value, str):
        return repr(value)
    return str(value) if isinstance(value, Decimal) else json.dumps(value, default=str)


def _object(value: object, where: str, *, required: Sequence[str], optional: Sequence[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CustomerDataError(f"{where}: expected an object, got {_kind(value)}")
    unknown = sorted(set(value) - {*required, *optional})
    if unknown:
        raise CustomerDataError(
            f"{where}: unknown field {unknown[0]!r} (the fields are {', '.join([*required, *optional])})"
        )
    for name in required:
        if value.get(name) is None:
            raise CustomerDataError(f"{where}: {name} is missing")
    return value


def _text(data: Mapping[str, object], field: Field[Any, Any], where: str) -> str:
    """The text of the field named like the model field, held to that field's rules; "" when optional and
    absent."""
    value = data.get(field.name)
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise CustomerDataError(f"{where}: {field.name} must be text, got {_kind(value)}")
    value = value.strip()
    if not value and not field.blank:
        raise CustomerDataError(f"{where}: {field.name} is empty")
    check_field(field, value, where=f"{where}: {field.name} {value!r}")
    return value


def _day(value: object, name: str, where: str) -> date:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return datetime.strptime(value, "%Y-%m-%d").date()
    raise CustomerDataError(f"{where}: {name} {_shown(value)} is not a date written YYYY-MM-DD")


def _name(value: object, key: str, position: int) -> str:
    """How an item is named in errors: by its id when it has one, else by its position."""
    name = value.get(key) if isinstance(value, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else f"#{position}"


def _customer(value: object, where: str) -> CustomerDraft:
    data = _object(value, where, required=["external_id"], optional=["name", "email", "is_member", "facts", "orders"])
    external_id = _text(data, Customer._meta.get_field("external_id"), where)
    is_member = data.get("is_member", False)
    if not isinstance(is_member, bool):
        raise CustomerDataError(f"{where}: is_member must be true or false, got {_shown(is_member)}")
    facts = data.get("facts") or {}
    if not isinstance(facts, dict):
        raise CustomerDataError(f"{where}: facts must be an object of key → text, got {_kind(facts)}")
    for key, fact in facts.items():
        if not isinstance(fact, str):
            raise CustomerDataError(f"{where}: fact {key} must be text, got {_kind(fact)}")
    orders = data.get("orders") or []
    if not isinstance(orders, list):
        raise CustomerDataError(f"{where}: orders must be a list, got {_kind(orders)}")
    return CustomerDraft(
        external_id=external_id,
        name=_text(data, Customer._meta.get_field("name"), where),
        email=_text(data, Customer._meta.get_field("email"), where),
        is_member=is_member,
        facts=facts,
        orders=tuple(
            _order(order, f"{where} order {_name(order, 'number', position)}")
            for position, order in enumerate(orders, start=1)
        ),
    )


def _order(value: object, where: str) -> OrderDraft:
    data = _object(
        value,
        where,
        required=["number", "status", "placed_on", "lines"],
        optional=["shipped_on", "delivered_on", "carrier", "tracking_number"],
    )
    number = _text(data, Order._meta.get_field("number"), where)
    status = data["status"]
    if status not in OrderStatus.values:
        raise CustomerDataError(f"{where}: status {_shown(status)} is not one of {', '.join(OrderStatus.values)}")
    placed_on = _day(data["placed_on"], "placed_on", where)
    shipped_on, delivered_on = (
        None if data.get(name) is None else _day(data[name], name, where) for name in ("shipped_on", "delivered_on")
    )
    if status in (OrderStatus.SHIPPED, OrderStatus.DELIVERED) and shipped_on is None:
        raise CustomerDataError(f"{where}: shipped_on is missing (the order is {status})")
    if status == OrderStatus.DELIVERED and delivered_on is None:
        raise CustomerDataError(f"{where}: delivered_on is missing (the order is {status})")
    dates = {"placed_on": placed_on, "shipped_on": shipped_on, "delivered_on": delivered_on}
    known = [(name, day) for name, day in dates.items() if day is not None]
    for (earlier, earlier_day), (later, later_day) in itertools.pairwise(known):
        if later_day < earlier_day:
            raise CustomerDataError(f"{where}: {later} {later_day} is before {earlier} {earlier_day}")
    lines = data["lines"]
    if not isinstance(lines, list) or not lines:
        raise CustomerDataError(f"{where}: lines must be a list of at least one line")
    order = OrderDraft(
        number=number,
        status=status,
        placed_on=placed_on,
        shipped_on=shipped_on,
        delivered_on=delivered_on,
        carrier=_text(data, Order._meta.get_field("carrier"), where),
        tracking_number=_text(data, Order._meta.get_field("tracking_number"), where),
        lines=tuple(_line(line, f"{where} line {position}") for position, line in enumerate(lines, start=1)),
    )
    check_field(Order._meta.get_field("total"), order.total, where=f"{where}: total {order.total}")
    return order


def _line(value: object, where: str) -> LineDraft:
    data = _object(value, where, required=["product", "quantity", "unit_price"], optional=[])
    quantity, unit_price = data["quantity"], data["unit_price"]
    if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity < 1:
        raise CustomerDataError(f"{where}: quantity must be a whole number of at least 1, got {_shown(quantity)}")
    if isinstance(unit_price, bool) or not isinstance(unit_price, int | float | Decimal) or unit_price < 0:
        raise CustomerDataError(f"{where}: unit_price must be a number of at least 0, got {_shown(unit_price)}")
    price = Decimal(str(unit_price))
    check_field(OrderLine._meta.get_field("unit_price"), price, where=f"{where}: unit_price {price}")
    return LineDraft(
        product=_text(data, OrderLine._meta.get_field("product"), where), quantity=quantity, unit_price=price
    )


@transaction.atomic
def _store(customers: list[CustomerDraft], *, source: str) -> LoadReport:
    report = LoadReport()
    # Locked, so that an erasure of one of these customers waits for this load to finish, and the other way
    # round.
    stored = {
        c.external_id: c
        for c in Customer.objects.select_for_update().filter(external_id__in=[d.external_id for d in customers])
    }
    orders = {
        o.number: o
        for o in Order.objects.filter(number__in=[o.number for d in customers for o in d.orders])
        .select_related("customer")
        .prefetch_related("lines")
    }
    for draft in customers:
        where = f"{source}: customer {draft.external_id}"
        values = {"name": draft.name, "email": draft.email, "is_member": draft.is_member}
        customer = stored.get(draft.external_id)
        if customer is None:
            customer = Customer.objects.create(external_id=draft.external_id, **values)
            report.customers_created += 1
        elif customer.erased_at:
            raise CustomerDataError(
                f"{where}: this customer's data was erased on {customer.erased_at:%Y-%m-%d} and is not loaded again"
            )
        elif changed := _assign(customer, values):
            customer.save(update_fields=changed)
            report.customers_updated += 1
        else:
            report.customers_unchanged += 1

        for order_draft in draft.orders:
            order = orders.get(order_draft.number)
            if order is None:
                _create_order(customer, order_draft)
                report.orders_created += 1
            elif order.customer_id != customer.pk:
                raise CustomerDataError(
                    f"{where} order {order.number}: order {order.number} belongs to customer "
                    f"{order.customer.external_id}; an order is never moved to another customer"
                )
            elif _update_order(order, order_draft):
                report.orders_updated += 1
            else:
                report.orders_unchanged += 1

        in_force = current_facts(customer)
        for key, value in draft.facts.items():
            try:
                if set_fact(customer, key, value, source="import") != in_force.get(key):
                    report.fact_versions_added += 1
            except CustomerDataError as exc:
                raise CustomerDataError(f"{where}: {exc}") from None
    return report


def _assign(instance: Model, values: Mapping[str, object]) -> list[str]:
    """Set the instance's fields to the values; the names of those that changed."""
    changed = [name for name, value in values.items() if getattr(instance, name) != value]
    for name in changed:
        setattr(instance, name, values[name])
    return changed


def _order_values(draft: OrderDraft) -> dict[str, object]:
    return {
        "status": draft.status,
        "placed_on": draft.placed_on,
        "shipped_on": draft.shipped_on,
        "delivered_on": draft.delivered_on,
        "carrier": draft.carrier,
        "tracking_number": draft.tracking_number,
        "total": draft.total,
    }


def _create_lines(order: Order, draft: OrderDraft) -> None:
    OrderLine.objects.bulk_create(
        OrderLine(order=order, product=line.product, quantity=line.quantity, unit_price=line.unit_price)
        for line in draft.lines
    )


def _create_order(customer: Customer, draft: OrderDraft) -> None:
    order = Order.objects.create(customer=customer, number=draft.number, **_order_values(draft))
    _create_lines(order, draft)


def _update_order(order: Order, draft: OrderDraft) -> bool:
    """Bring a stored order in line with the draft; whether anything changed."""
    changed = _assign(order, _order_values(draft))
    if changed:
        order.save(update_fields=changed)
    lines = [LineDraft(line.product, line.quantity, line.unit_price) for line in order.lines.all()]
    if lines == list(draft.lines):
        return bool(changed)
    order.lines.all().delete()
    _create_lines(order, draft)
    return True
