"""A customer's facts: versioned on change, read in one query, unfit keys and values refused."""

import pytest

from conversations.records.erasure import erase_customer
from customers.errors import CustomerDataError
from customers.facts import current_facts, fact, set_fact
from customers.models import Customer, CustomerFact

pytestmark = pytest.mark.django_db


@pytest.fixture
def alex() -> Customer:
    return Customer.objects.create(external_id="c-1001", name="Alex Morgan")


def test_it_adds_a_version_only_when_the_value_changes(alex):
    first = set_fact(alex, "preferred_name", "Alex", source="import")
    same = set_fact(alex, "preferred_name", " Alex ", source="customer")
    changed = set_fact(alex, "preferred_name", "Sasha", source="customer")

    assert same == first and same.version == 1 and same.source == "import"
    assert (changed.version, changed.value, changed.source) == (2, "Sasha", "customer")
    assert list(alex.facts.values_list("key", "version", "value")) == [
        ("preferred_name", 2, "Sasha"),
        ("preferred_name", 1, "Alex"),
    ]
    assert fact(alex, "preferred_name") == changed
    assert fact(alex, "language") is None


def test_current_facts_are_the_newest_versions_of_each_key_in_one_query(alex, django_assert_num_queries):
    other = Customer.objects.create(external_id="c-2002")
    set_fact(alex, "preferred_name", "Alex", source="import")
    set_fact(alex, "language", "en", source="import")
    set_fact(alex, "preferred_name", "Sasha", source="customer")
    set_fact(alex, "language", "fr", source="customer")
    set_fact(alex, "language", "cy", source="customer")
    set_fact(other, "preferred_name", "Priya", source="import")

    with django_assert_num_queries(1):
        facts = current_facts(alex)

    assert {key: (f.version, f.value) for key, f in facts.items()} == {
        "preferred_name": (2, "Sasha"),
        "language": (3, "cy"),
    }


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("Preferred Name", "Alex", "fact key 'Preferred Name': Enter a valid “slug”"),
        ("", "Alex", "fact key is empty"),
        ("n" * 65, "Alex", f"fact key '{'n' * 65}': Ensure this value has at most 64 characters (it has 65)."),
        ("preferred_name", "  ", "fact preferred_name: the value is empty"),
        ("note", "x" * 501, "fact note: Ensure this value has at most 500 characters (it has 501)"),
    ],
)
def test_it_refuses_unfit_keys_and_values(alex, key, value, message):
    with pytest.raises(CustomerDataError) as raised:
        set_fact(alex, key, value, source="staff")

    assert str(raised.value).startswith(message)
    assert not CustomerFact.objects.exists()


def test_an_erased_customer_gets_no_facts(alex):
    erase_customer(alex)

    with pytest.raises(CustomerDataError, match="customer c-1001 was erased: no facts are kept about them"):
        set_fact(alex, "language", "en", source="customer")
