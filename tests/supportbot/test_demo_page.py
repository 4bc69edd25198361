"""The demo shop page: the widget embedded with one tag, and (when demo accounts are on) a signed token for
the demo customer the visitor picks."""

import re

import pytest

from customers import tokens
from customers.models import Customer

pytestmark = pytest.mark.django_db


def test_the_demo_page_embeds_the_widget_for_a_guest(client, settings):
    settings.DEMO_CUSTOMERS = False
    page = client.get("/").content.decode()
    assert page.count("widget.js") == 2  # the tag, and the snippet shown to copy
    assert "data-customer-token" not in page and "Try it as a signed-in customer" not in page


def test_a_visitor_can_chat_as_a_demo_customer_with_a_token_the_chat_accepts(client, settings):
    settings.DEMO_CUSTOMERS, settings.CUSTOMER_TOKEN_SECRET = True, "s" * 40
    Customer.objects.create(external_id="c-1001", name="Alex Morgan", is_member=True)
    page = client.get("/", {"as": "c-1001"}).content.decode()
    token = re.search(r'data-customer-token="([^"]+)"', page)
    assert token is not None and tokens.verify(token.group(1), secret="s" * 40) == "c-1001"
    assert "<strong>Alex Morgan</strong> (you)" in page
    unknown = client.get("/", {"as": "c-9999"}).content.decode()
    assert 'data-customer-token="' not in unknown  # an unknown id signs nobody in
