"""The customers admin: orders and facts shown, customers found by e-mail, erasure asked for then done."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import LogEntry
from django.urls import reverse

from conversations.models import ConversationSummary, RefundDecision
from customers.facts import set_fact
from customers.models import Customer, CustomerFact, Order
from tests.customers.helpers import give_history, make_collection

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:customers_customer_changelist")


@pytest.fixture
def alex(shop) -> Customer:
    customer = Customer.objects.get(external_id="c-1001")
    give_history(customer, make_collection())
    return customer


def test_the_customer_page_shows_orders_with_line_counts_and_the_facts_in_force(alex, admin_client):
    set_fact(alex, "language", "cy", source="staff")

    content = admin_client.get(reverse("admin:customers_customer_change", args=[alex.pk])).content.decode()

    order = Order.objects.get(number="1042")
    assert f'<a href="{reverse("admin:customers_order_change", args=[order.pk])}">order #1042</a>' in content
    assert '<td class="field-line_count"><p>2</p></td>' in content
    assert '<td class="field-value"><p>cy</p></td>' in content
    assert '<td class="field-value"><p>en</p></td>' not in content
    assert content.count('<td class="field-version">') == 3


def test_the_changelist_finds_customers_by_email(alex, admin_client):
    content = admin_client.get(CHANGELIST, {"q": "priya.shah@"}).content.decode()

    assert "c-2002" in content and "c-1001" not in content


def test_erasing_from_the_admin_asks_first_with_counts_then_erases(alex, admin_client):
    priya = Customer.objects.get(external_id="c-2002")
    selected = {"action": "erase_selected", ACTION_CHECKBOX_NAME: [alex.pk, priya.pk]}

    asked = admin_client.post(CHANGELIST, selected)

    assert asked.status_code == 200
    content = asked.content.decode()
    assert "<th>conversations</th><th>messages</th><th>turns</th>" in content
    assert "<tr><td>c-1001: Alex Morgan</td><td>1</td><td>3</td><td>1</td>" in content
    assert "<tr><td>c-2002: Priya Shah</td><td>0</td><td>0</td><td>0</td>" in content
    assert '<input type="hidden" name="post" value="yes">' in content
    assert Customer.objects.filter(erased_at__isnull=False).count() == 0

    done = admin_client.post(CHANGELIST, {**selected, "post": "yes"})

    assert done.status_code == 302
    assert set(Customer.objects.filter(erased_at__isnull=False).values_list("external_id", flat=True)) == {
        "c-1001",
        "c-2002",
    }
    assert not Order.objects.filter(customer__in=[alex, priya]).exists()
    assert Order.objects.filter(customer__external_id="c-3003").count() == 2
    logged = LogEntry.objects.get(object_id=str(alex.pk))
    assert logged.object_repr == "c-1001 (erased)"
    assert logged.get_change_message().startswith("Erased the customer's data, deleting conversations: 1, messages: 3")


def test_customers_cannot_be_deleted_only_erased(alex, admin_client):
    assert admin_client.get(reverse("admin:customers_customer_delete", args=[alex.pk])).status_code == 403
    assert "delete_selected" not in admin_client.get(CHANGELIST).content.decode()


def test_changing_a_fact_saves_its_next_version(alex, admin_client):
    language = CustomerFact.objects.get(customer=alex, key="language")

    response = admin_client.post(reverse("admin:customers_customerfact_change", args=[language.pk]), {"value": "cy"})

    assert response.status_code == 302
    assert list(alex.facts.filter(key="language").values_list("version", "value", "source")) == [
        (2, "cy", "staff"),
        (1, "en", "import"),
    ]
    assert admin_client.get(reverse("admin:customers_customerfact_delete", args=[language.pk])).status_code == 403


def test_adding_a_fact_for_a_key_in_force_saves_its_next_version(alex, admin_client):
    response = admin_client.post(
        reverse("admin:customers_customerfact_add"), {"customer": alex.pk, "key": "preferred_name", "value": "Lex"}
    )

    assert response.status_code == 302
    assert list(alex.facts.filter(key="preferred_name").values_list("version", "value")) == [(2, "Lex"), (1, "Alex")]


@pytest.mark.parametrize("model", [Order, RefundDecision, ConversationSummary])
def test_the_shop_and_the_assistants_records_are_read_only(alex, admin_client, model):
    record = model.objects.first()
    name = model._meta.model_name

    page = admin_client.get(reverse(f"admin:{model._meta.app_label}_{name}_change", args=[record.pk]))

    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert admin_client.get(reverse(f"admin:{model._meta.app_label}_{name}_add")).status_code == 403
    assert (
        admin_client.get(reverse(f"admin:{model._meta.app_label}_{name}_delete", args=[record.pk])).status_code == 403
    )


def test_the_order_page_lists_its_lines(alex, admin_client):
    order = Order.objects.get(number="1042")

    content = admin_client.get(reverse("admin:customers_order_change", args=[order.pk])).content.decode()

    assert '<td class="field-product"><p>Washed linen duvet cover</p></td>' in content
    assert '<td class="field-amount"><p>39.00</p></td>' in content
    assert '<td class="field-reason"><p>over the limit</p></td>' in content
