"""A customer's keyed facts ("preferred_name", "language", "contact_channel"): looked up by key, never
ranked. A changed value is stored as a new version; the newest version of a key is in force, the older ones
are its history."""

from django.db import transaction
from django.db.models import QuerySet

from customers.errors import CustomerDataError, check_field
from customers.models import Customer, CustomerFact


def set_fact(customer: Customer, key: str, value: str, *, source: str) -> CustomerFact:
    """Store `value` as the customer's `key` and return the version in force: the newest one when it already
    says the same, else a new version. CustomerDataError when the key is not a slug, the value is empty or
    too long, or the customer was erased."""
    value = value.strip()
    if not key:
        raise CustomerDataError("fact key is empty")
    check_field(CustomerFact._meta.get_field("key"), key, where=f"fact key {key!r}")
    if not value:
        raise CustomerDataError(f"fact {key}: the value is empty")
    check_field(CustomerFact._meta.get_field("value"), value, where=f"fact {key}")
    with transaction.atomic():
        # Locking the customer serialises its fact writes, so two never claim the same version number, and
        # none lands on a customer while they are being erased.
        locked = Customer.objects.select_for_update().get(pk=customer.pk)
        if locked.erased_at:
            raise CustomerDataError(f"customer {locked.external_id} was erased: no facts are kept about them")
        newest = fact(locked, key)
        if newest is not None and newest.value == value:
            return newest
        return CustomerFact.objects.create(
            customer=locked, key=key, value=value, source=source, version=newest.version + 1 if newest else 1
        )


def newest_versions(facts: QuerySet[CustomerFact]) -> QuerySet[CustomerFact]:
    """The newest version of each customer's key among `facts`: the versions in force."""
    return facts.order_by("customer_id", "key", "-version").distinct("customer_id", "key")


def current_facts(customer: Customer) -> dict[str, CustomerFact]:
    """The customer's facts in force, by key, in one query."""
    return {f.key: f for f in newest_versions(CustomerFact.objects.filter(customer=customer))}


def fact(customer: Customer, key: str) -> CustomerFact | None:
    """The version in force of one of the customer's facts, or None when there is none."""
    return CustomerFact.objects.filter(customer=customer, key=key).order_by("-version").first()
