"""Loading the shop's customers from JSON: the sample loads, a reload changes nothing, changes update in place."""

import copy
import json
from decimal import Decimal

import pytest

from conversations.records.erasure import erase_customer
from customers.errors import CustomerDataError
from customers.facts import current_facts
from customers.loading import LoadReport, load_customers
from customers.models import Customer, CustomerFact, Order, OrderLine
from tests.customers.helpers import SAMPLE_CUSTOMERS

pytestmark = pytest.mark.django_db

SAMPLE = json.loads(SAMPLE_CUSTOMERS.read_text())


def write(tmp_path, customers) -> str:
    path = tmp_path / "customers.json"
    path.write_text(json.dumps(customers))
    return str(path)


def sample() -> list[dict]:
    return copy.deepcopy(SAMPLE)


def snapshot() -> dict[str, list]:
    return {
        "customers": list(Customer.objects.order_by("pk").values()),
        "orders": list(Order.objects.order_by("pk").values()),
        "lines": list(OrderLine.objects.order_by("pk").values()),
        "facts": list(CustomerFact.objects.order_by("pk").values()),
    }


def assert_nothing_stored() -> None:
    assert not Customer.objects.exists()
    assert not Order.objects.exists()
    assert not OrderLine.objects.exists()
    assert not CustomerFact.objects.exists()


def test_it_loads_the_sample_shop(shop):
    assert shop == LoadReport(customers_created=3, orders_created=6, fact_versions_added=6)

    alex = Customer.objects.get(external_id="c-1001")
    assert (alex.name, alex.email, alex.is_member) == ("Alex Morgan", "alex.morgan@example.com", True)
    order = Order.objects.get(number="1042")
    assert order.customer == alex
    assert (order.status, str(order.shipped_on), str(order.delivered_on)) == ("delivered", "2026-11-17", "2026-11-20")
    assert (order.carrier, order.tracking_number, order.total) == ("Parcelforce", "PF4420176GB", Decimal("128.00"))
    assert [(line.quantity, line.product, line.unit_price) for line in order.lines.all()] == [
        (1, "Washed linen duvet cover", Decimal("89.00")),
        (2, "Linen pillowcase", Decimal("19.50")),
    ]
    in_transit = Order.objects.get(number="1051")
    assert (in_transit.status, in_transit.carrier, in_transit.tracking_number) == ("shipped", "DPD", "15501234567890")
    assert in_transit.delivered_on is None

    priya = Customer.objects.get(external_id="c-2002")
    assert not priya.is_member
    assert sorted(priya.orders.values_list("number", "status")) == [("2077", "delivered"), ("2081", "packed")]
    assert {k: f.value for k, f in current_facts(alex).items()} == {
        "preferred_name": "Alex",
        "contact_channel": "email",
        "language": "en",
    }
    assert {k: f.value for k, f in current_facts(priya).items()} == {"preferred_name": "Priya"}
    assert set(CustomerFact.objects.values_list("source", "version")) == {("import", 1)}


def test_a_second_load_changes_nothing(shop):
    before = snapshot()

    again = load_customers(SAMPLE_CUSTOMERS)

    assert again == LoadReport(customers_unchanged=3, orders_unchanged=6)
    assert snapshot() == before


def test_a_changed_file_updates_in_place(shop, tmp_path):
    customers = sample()
    alex = customers[0]
    alex["name"] = "Alexandra Morgan"
    alex["facts"]["preferred_name"] = "Sasha"
    table = alex["orders"][1]
    table.update(status="delivered", delivered_on="2026-11-28")
    table["lines"][0]["quantity"] = 2
    order_id = Order.objects.get(number="1051").pk

    report = load_customers(write(tmp_path, customers))

    assert report == LoadReport(
        customers_updated=1, customers_unchanged=2, orders_updated=1, orders_unchanged=5, fact_versions_added=1
    )
    table = Order.objects.get(number="1051")
    assert table.pk == order_id
    assert (table.status, str(table.delivered_on), table.total) == ("delivered", "2026-11-28", Decimal("1798.00"))
    assert [(line.quantity, line.product) for line in table.lines.all()] == [(2, "Oiled oak dining table")]
    names = CustomerFact.objects.filter(customer__external_id="c-1001", key="preferred_name")
    assert list(names.values_list("version", "value")) == [(2, "Sasha"), (1, "Alex")]


def test_an_order_of_another_customer_in_the_database_is_refused_and_nothing_is_written(shop, tmp_path):
    before = snapshot()
    newcomer = {"external_id": "c-9009", "name": "Nadia Kerr", "facts": {"language": "fr"}}
    priya = {**sample()[1], "name": "Priya S."}
    priya["orders"].append(copy.deepcopy(SAMPLE[0]["orders"][0]))

    with pytest.raises(CustomerDataError) as raised:
        load_customers(write(tmp_path, [newcomer, priya]))

    assert str(raised.value) == (
        "customers.json: customer c-2002 order 1042: order 1042 belongs to customer c-1001; "
        "an order is never moved to another customer"
    )
    assert snapshot() == before
    assert Order.objects.get(number="1042").customer.external_id == "c-1001"


def test_an_order_listed_under_two_customers_is_refused(tmp_path):
    customers = sample()
    customers[1]["orders"].append(copy.deepcopy(customers[0]["orders"][0]))

    with pytest.raises(CustomerDataError) as raised:
        load_customers(write(tmp_path, customers))

    assert str(raised.value) == (
        "customers.json: customer c-2002 order 1042: order 1042 is also listed under customer c-1001"
    )
    assert_nothing_stored()


def alex_order(**changes):
    """The sample with Alex's order 1042 changed (a value of None removes the field)."""
    customers = sample()
    order = customers[0]["orders"][0]
    order.update(changes)
    customers[0]["orders"][0] = {k: v for k, v in order.items() if v is not None}
    return customers


def first_line(**changes):
    customers = sample()
    customers[0]["orders"][0]["lines"][0].update(changes)
    return customers


def alex(**changes):
    customers = sample()
    customers[0].update(changes)
    return customers


@pytest.mark.parametrize(
    ("customers", "message"),
    [
        (
            alex_order(status="lost"),
            "customers.json: customer c-1001 order 1042: status 'lost' is not one of placed, packed, shipped, "
            "delivered, cancelled",
        ),
        (alex_order(placed_on=None), "customers.json: customer c-1001 order 1042: placed_on is missing"),
        (
            alex_order(placed_on="2026-11-31"),
            "customers.json: customer c-1001 order 1042: placed_on '2026-11-31' is not a date written YYYY-MM-DD",
        ),
        (
            alex_order(shipped_on=20261117),
            "customers.json: customer c-1001 order 1042: shipped_on 20261117 is not a date written YYYY-MM-DD",
        ),
        (
            alex_order(delivered_on=None),
            "customers.json: customer c-1001 order 1042: delivered_on is missing (the order is delivered)",
        ),
        (
            alex_order(delivered_on="2026-11-16"),
            "customers.json: customer c-1001 order 1042: delivered_on 2026-11-16 is before shipped_on 2026-11-17",
        ),
        (
            alex_order(deliverd_on="2026-11-20"),
            "customers.json: customer c-1001 order 1042: unknown field 'deliverd_on' (the fields are number, status, "
            "placed_on, lines, shipped_on, delivered_on, carrier, tracking_number)",
        ),
        (alex_order(number=" "), "customers.json: customer c-1001 order #1: number is empty"),
        (alex_order(number=1042), "customers.json: customer c-1001 order #1: number must be text, got a number"),
        (
            alex_order(number="1" * 33),
            f"customers.json: customer c-1001 order {'1' * 33}: number '{'1' * 33}': Ensure this value has at most 32 "
            "characters (it has 33).",
        ),
        (alex_order(lines=[]), "customers.json: customer c-1001 order 1042: lines must be a list of at least one line"),
        (
            first_line(quantity=0),
            "customers.json: customer c-1001 order 1042 line 1: quantity must be a whole number of at least 1, got 0",
        ),
        (
            first_line(quantity=1.5),
            "customers.json: customer c-1001 order 1042 line 1: quantity must be a whole number of at least 1, got 1.5",
        ),
        (
            first_line(unit_price="89.00"),
            "customers.json: customer c-1001 order 1042 line 1: unit_price must be a number of at least 0, got '89.00'",
        ),
        (
            first_line(unit_price=89.001),
            "customers.json: customer c-1001 order 1042 line 1: unit_price 89.001: Ensure that there are no more than "
            "2 decimal places.",
        ),
        (first_line(product=None), "customers.json: customer c-1001 order 1042 line 1: product is missing"),
        (
            alex(email="alex at example"),
            "customers.json: customer c-1001: email 'alex at example': Enter a valid email address.",
        ),
        (alex(is_member="yes"), "customers.json: customer c-1001: is_member must be true or false, got 'yes'"),
        (alex(facts={"language": 2}), "customers.json: customer c-1001: fact language must be text, got a number"),
        (alex(orders={"1042": {}}), "customers.json: customer c-1001: orders must be a list, got an object"),
        ([{"name": "Nobody"}], "customers.json: customer #1: external_id is missing"),
        ([*SAMPLE, SAMPLE[0]], "customers.json: customer c-1001: is listed twice"),
        ({"customers": SAMPLE}, "customers.json: expected a list of customers, got an object"),
    ],
)
def test_bad_data_is_refused_naming_where_and_nothing_is_stored(tmp_path, customers, message):
    with pytest.raises(CustomerDataError) as raised:
        load_customers(write(tmp_path, customers))

    assert str(raised.value) == message
    assert_nothing_stored()


def test_a_bad_fact_after_good_customers_leaves_nothing_behind(tmp_path):
    customers = sample()
    customers[2]["facts"]["Favourite Colour"] = "green"

    with pytest.raises(CustomerDataError) as raised:
        load_customers(write(tmp_path, customers))

    assert str(raised.value).startswith("customers.json: customer c-3003: fact key 'Favourite Colour': Enter a valid")
    assert_nothing_stored()


def test_an_erased_customer_is_not_loaded_again(shop):
    erase_customer(Customer.objects.get(external_id="c-2002"))

    with pytest.raises(CustomerDataError, match=r"customer c-2002: this customer's data was erased on \d{4}-"):
        load_customers(SAMPLE_CUSTOMERS)

    assert not Order.objects.filter(customer__external_id="c-2002").exists()


def test_unreadable_files_are_refused(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('[{"external_id": "c-1"')

    with pytest.raises(CustomerDataError, match=r"^broken.json: is not valid JSON \(Expecting"):
        load_customers(broken)
    with pytest.raises(CustomerDataError, match=r"missing.json: cannot be read \(No such file or directory\)"):
        load_customers(tmp_path / "missing.json")
