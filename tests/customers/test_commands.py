"""The customers commands: load_customers reports and refuses bad data; customer_token signs what the chat accepts."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from customers.models import Customer, Order
from customers.tokens import verify
from tests.customers.helpers import SAMPLE_CUSTOMERS, give_history, make_collection

pytestmark = pytest.mark.django_db

SECRET = "a-test-secret-that-is-long-enough-0123456789"


def test_load_customers_prints_the_report_and_loads_once(capsys):
    call_command("load_customers", str(SAMPLE_CUSTOMERS))
    assert capsys.readouterr().out == (
        f"{SAMPLE_CUSTOMERS}: customers: 3 created, 0 updated, 0 unchanged; orders: 6 created, 0 updated, "
        "0 unchanged; facts: 6 new versions.\n"
    )
    call_command("load_customers", str(SAMPLE_CUSTOMERS))
    assert "customers: 0 created, 0 updated, 3 unchanged; orders: 0 created, 0 updated, 6 unchanged" in (
        capsys.readouterr().out
    )


def test_load_customers_refuses_bad_data_saying_where(tmp_path):
    bad = tmp_path / "shop.json"
    bad.write_text(json.dumps([{"external_id": "c-1", "orders": [{"number": "9", "status": "lost"}]}]))

    with pytest.raises(CommandError) as raised:
        call_command("load_customers", str(bad))

    assert str(raised.value) == "shop.json: customer c-1 order 9: placed_on is missing. Nothing was loaded."
    assert not Customer.objects.exists()


def test_customer_token_prints_a_token_the_chat_accepts(shop, settings, capsys):
    settings.CUSTOMER_TOKEN_SECRET = SECRET

    call_command("customer_token", "c-2002", "--ttl", "120")

    token = capsys.readouterr().out.strip()
    assert verify(token, secret=SECRET) == "c-2002"


@pytest.mark.parametrize(
    ("secret", "customer", "message"),
    [
        ("", "c-1001", "CUSTOMER_TOKEN_SECRET is not set"),
        (SECRET, "c-9999", "No customer 'c-9999'"),
        (SECRET, "c-2002", r"Customer c-2002 was erased on \d{4}-\d\d-\d\d; their tokens are refused."),
    ],
)
def test_customer_token_refuses_without_a_secret_or_a_customer(shop, settings, secret, customer, message):
    settings.CUSTOMER_TOKEN_SECRET = secret
    call_command("erase_customer", "c-2002", "--yes")

    with pytest.raises(CommandError, match=message):
        call_command("customer_token", customer)


def test_customer_token_reads_a_missing_setting_as_unset(shop, settings):
    del settings.CUSTOMER_TOKEN_SECRET

    with pytest.raises(CommandError, match="CUSTOMER_TOKEN_SECRET is not set"):
        call_command("customer_token", "c-1001")


def test_erase_customer_without_yes_only_says_what_it_would_delete(shop, capsys):
    give_history(Customer.objects.get(external_id="c-1001"), make_collection())

    with pytest.raises(CommandError, match=r"^Nothing was erased: add --yes to erase c-1001's data\.$"):
        call_command("erase_customer", "c-1001")

    out = capsys.readouterr().out
    assert "Erasing c-1001: Alex Morgan would delete:\n  conversations: 1\n  messages: 3\n" in out
    assert "  orders: 2\n  order lines: 3\n" in out
    alex = Customer.objects.get(external_id="c-1001")
    assert alex.erased_at is None and alex.conversations.count() == 1 and alex.orders.count() == 2


def test_erase_customer_with_yes_erases(shop, capsys):
    call_command("erase_customer", "c-1001", "--yes")

    assert "Erased the data of customer c-1001, deleting:\n  conversations: 0\n" in capsys.readouterr().out
    alex = Customer.objects.get(external_id="c-1001")
    assert alex.erased_at is not None and alex.name == ""
    assert not Order.objects.filter(customer=alex).exists()
    assert Order.objects.filter(customer__external_id="c-2002").count() == 2


def test_erase_customer_names_an_unknown_customer(db):
    with pytest.raises(CommandError, match=r"^No customer 'c-9999'\.$"):
        call_command("erase_customer", "c-9999")
