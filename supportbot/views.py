"""The demo shop page that hosts the widget. It plays the part of a customer's own site, which would sign
its logged-in customer into the widget; here a visitor may pick a demo account (only where the operator
turned demo accounts on: anyone can pick anyone)."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from customers import tokens
from customers.models import Customer

DEMO_TOKEN_TTL_S = 3600


def home(request: HttpRequest) -> HttpResponse:
    context: dict[str, object] = {}
    if settings.DEMO_CUSTOMERS and settings.CUSTOMER_TOKEN_SECRET:
        customers = list(Customer.objects.filter(erased_at__isnull=True).order_by("external_id")[:10])
        chosen = next((c for c in customers if c.external_id == request.GET.get("as")), None)
        context["demo_customers"] = customers
        if chosen is not None:
            context["signed_in_as"] = chosen.external_id
            context["customer_token"] = tokens.sign(
                chosen.external_id, secret=settings.CUSTOMER_TOKEN_SECRET, ttl_s=DEMO_TOKEN_TTL_S
            )
    return render(request, "home.html", context)
