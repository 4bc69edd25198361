"""The page that hosts the widget: the demo shop's, or a plain one for your own collection. It plays the part
of a customer's own site, which would sign its logged-in customer into the widget; here a visitor may pick
a demo account (only where the operator turned demo accounts on: anyone can pick anyone)."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from customers import tokens
from customers.models import Customer
from knowledge.models import Collection
from knowledge.sync import DEMO_COLLECTION
from knowledge.voice import Voice

DEMO_TOKEN_TTL_S = 3600


def home(request: HttpRequest) -> HttpResponse:
    # The demo shop's page only while the chat serves the demo's collection; otherwise a plain page in the
    # name of the business the served collection speaks for.
    served = Collection.objects.filter(name=settings.CHAT_COLLECTION).first()
    context: dict[str, object] = {"demo": settings.CHAT_COLLECTION == DEMO_COLLECTION, "voice": Voice.of(served)}
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
